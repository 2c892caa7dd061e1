"""A LangGraph agent that talks to its customer in plain text, over tau2-bench's
retail domain imported by `agentsim import-tau2` (docs/tau2.md): tau2's policy
is its system prompt, each final answer goes to the customer, whose reply is
the next user message of the same conversation.

    agentsim import-tau2 path/to/tau2-bench/data/tau2/domains/retail --out retail
    python3 examples/frameworks/langgraph_tau2_text.py retail    # needs langchain-openai and OPENAI_API_KEY

`model` is any LangChain chat model with tool calling (the tests pass a scripted one).
Seed s runs task s mod 114.
"""

import sys
from pathlib import Path

from langchain.agents import create_agent

import agentsim
from agentsim.loop import ToolLoop, langchain_tools, langgraph_chat


def retail_agent(model, policy: str) -> ToolLoop:
    def build(session):  # one episode: that seed's tools
        return create_agent(model, langchain_tools(session), system_prompt=policy)

    return langgraph_chat(build)


def main(world="retail", model=None, seeds=range(114), concurrency=8, out="out/langgraph-tau2", **kwargs):
    world = Path(world)  # the folder `agentsim import-tau2` wrote
    if model is None:
        from langchain.chat_models import init_chat_model

        model = init_chat_model("openai:gpt-4.1")
    policy = (world / "policy.md").read_text()
    return agentsim.evaluate(retail_agent(model, policy), str(world / "retail.ron"), seeds, concurrency=concurrency,
                             out=out, label="langgraph-tau2", **kwargs)


if __name__ == "__main__":
    result = main(*sys.argv[1:2])
    print(result.summary["completion"])
