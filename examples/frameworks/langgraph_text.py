"""A LangGraph agent that talks to its customer in plain text, over many
support_desk seeds: each final answer goes to the customer, whose reply is the
next user message of the same conversation.

    python3 examples/frameworks/langgraph_text.py    # needs langchain-openai and OPENAI_API_KEY

`model` is any LangChain chat model with tool calling (the tests pass a scripted one).
"""

from langchain.agents import create_agent

import agentsim
from agentsim.loop import ToolLoop, langchain_tools, langgraph_chat

INSTRUCTIONS = (
    "You are a support agent chatting with a customer. Use the tools to handle their request; "
    "ask them in words for what you need, and confirm an amount with them before you refund it. "
    "A failed call explains itself: follow its `explanation`."
)


def support_agent(model) -> ToolLoop:
    def build(session):  # one episode: that seed's tools
        return create_agent(model, langchain_tools(session), system_prompt=INSTRUCTIONS)

    return langgraph_chat(build)


def main(model=None, seeds=range(100), concurrency=8, out="out/langgraph-text", **kwargs):
    if model is None:
        from langchain.chat_models import init_chat_model

        model = init_chat_model("openai:gpt-4.1")
    return agentsim.evaluate(support_agent(model), "support_desk", seeds, concurrency=concurrency, out=out,
                             label="langgraph-text", **kwargs)


if __name__ == "__main__":
    result = main()
    print(result.summary["completion"])
