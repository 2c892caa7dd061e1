"""A LangGraph agent (`langchain.agents.create_agent`) over many support_desk
seeds with agentsim.evaluate.

    python3 examples/frameworks/langgraph_evaluate.py    # needs langchain-openai and OPENAI_API_KEY

`model` is any LangChain chat model with tool calling (`init_chat_model(...)`,
`ChatOpenAI(...)`, `ChatAnthropic(...)`; the tests pass a scripted one).
"""

from langchain.agents import create_agent

import agentsim
from agentsim.loop import ToolLoop, langchain_tools

INSTRUCTIONS = (
    "You are a support agent. Use the tools to handle the customer's request. "
    "A failed call explains itself: follow its `explanation` (wait before retrying a temporary error)."
)


def support_agent(model) -> ToolLoop:
    async def run(session):  # one episode: the task and the tools of that seed's world
        agent = create_agent(model, langchain_tools(session), system_prompt=INSTRUCTIONS)
        await agent.ainvoke({"messages": [{"role": "user", "content": session.task}]}, {"recursion_limit": 100})

    return ToolLoop(run)


def main(model=None, seeds=range(100), concurrency=8, out="out/langgraph"):
    if model is None:
        from langchain.chat_models import init_chat_model

        model = init_chat_model("openai:gpt-4.1")
    return agentsim.evaluate(support_agent(model), "support_desk", seeds, concurrency=concurrency, out=out, label="langgraph")


if __name__ == "__main__":
    result = main()
    print(result.summary["completion"])
