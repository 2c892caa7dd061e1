"""LangGraph (`langchain.agents.create_agent`, `langchain-mcp-adapters`) against
`agentsim mcp`: one seed, one persistent session, recorded.

    python3 examples/mcp/langgraph_mcp.py 1    # needs langchain-openai and OPENAI_API_KEY

`model` is any LangChain chat model with tool calling (the tests pass a scripted one).
"""

import asyncio
import sys

from langchain.agents import create_agent
from langchain.agents.middleware import wrap_model_call
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import types

INSTRUCTIONS = (
    "You are a support agent. Use the tools to handle the customer's request. "
    "A failed call explains itself: follow its `explanation`."
)


def tool_list_changed(message) -> bool:
    """Whether `message` is notifications/tools/list_changed: mcp 1.x wraps a
    notification in a ServerNotification (its `.root`), mcp 2.x hands it over as it is."""
    return isinstance(getattr(message, "root", message), types.ToolListChangedNotification)


async def one_seed(seed: int, model=None, scenario="support_desk", record_dir="."):
    if model is None:
        from langchain.chat_models import init_chat_model

        model = init_chat_model("openai:gpt-4.1")
    changed = asyncio.Event()

    async def on_message(message):
        # A drift renames a response field and changes the tool list.
        if tool_list_changed(message):
            changed.set()

    client = MultiServerMCPClient({
        "agentsim": {
            "command": "agentsim",
            "args": ["mcp", scenario, "--seed", str(seed), "--record", f"{record_dir}/s{seed}.ron"],
            "transport": "stdio",
            "session_kwargs": {"message_handler": on_message},
        },
    })
    # One session for the whole episode: `client.get_tools()` alone would start a
    # new server (a new world) for every tool call.
    async with client.session("agentsim") as session:
        tools = await load_mcp_tools(session)
        task = (await session.get_prompt("task")).messages[0].content.text

        @wrap_model_call
        async def current_tools(request, handler):
            # After the notification, re-read the list: the model sees the new descriptions.
            nonlocal tools
            if changed.is_set():
                changed.clear()
                tools = await load_mcp_tools(session)
            return await handler(request.override(tools=tools))

        agent = create_agent(model, tools, system_prompt=INSTRUCTIONS, middleware=[current_tools])
        await agent.ainvoke({"messages": [{"role": "user", "content": task}]}, {"recursion_limit": 100})
    # leaving the block stops the server: the session is judged and recorded


if __name__ == "__main__":
    asyncio.run(one_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
