"""An OpenAI Agents SDK agent over many support_desk seeds with agentsim.evaluate.

    python3 examples/frameworks/openai_agents_evaluate.py    # needs OPENAI_API_KEY

`model` is any Agents SDK model: a name ("gpt-4.1", read with OPENAI_API_KEY)
or a `Model` object (the tests pass a scripted one: no network, no key).
"""

from agents import Agent, Runner

import agentsim
from agentsim.loop import ToolLoop, agents_sdk_tools

INSTRUCTIONS = (
    "You are a support agent. Use the tools to handle the customer's request. "
    "A failed call explains itself: follow its `explanation` (wait before retrying a temporary error)."
)


def support_agent(model) -> ToolLoop:
    async def run(session):  # one episode: the task and the tools of that seed's world
        agent = Agent(name="support", instructions=INSTRUCTIONS, model=model, tools=agents_sdk_tools(session))
        await Runner.run(agent, session.task, max_turns=50)

    return ToolLoop(run)


def main(model="gpt-4.1", seeds=range(100), concurrency=8, out="out/openai-agents"):
    return agentsim.evaluate(support_agent(model), "support_desk", seeds, concurrency=concurrency, out=out,
                             label="openai-agents")


if __name__ == "__main__":
    result = main()
    print(result.summary["completion"])
