"""An OpenAI Agents SDK agent that talks to its customer in plain text, over
many support_desk seeds: each run's final output goes to the customer, and the
next run continues the same history with the customer's reply.

    python3 examples/frameworks/openai_agents_text.py    # needs OPENAI_API_KEY

`model` is any Agents SDK model: a name ("gpt-4.1") or a `Model` object (the
tests pass a scripted one).
"""

from agents import Agent

import agentsim
from agentsim.loop import ToolLoop, agents_sdk_chat, agents_sdk_tools

INSTRUCTIONS = (
    "You are a support agent chatting with a customer. Use the tools to handle their request; "
    "ask them in words for what you need, and confirm an amount with them before you refund it. "
    "A failed call explains itself: follow its `explanation`."
)


def support_agent(model) -> ToolLoop:
    def build(session):  # one episode: that seed's tools
        return Agent(name="support", instructions=INSTRUCTIONS, model=model, tools=agents_sdk_tools(session))

    return agents_sdk_chat(build)


def main(model="gpt-4.1", seeds=range(100), concurrency=8, out="out/openai-agents-text", **kwargs):
    return agentsim.evaluate(support_agent(model), "support_desk", seeds, concurrency=concurrency, out=out,
                             label="openai-agents-text", **kwargs)


if __name__ == "__main__":
    result = main()
    print(result.summary["completion"])
