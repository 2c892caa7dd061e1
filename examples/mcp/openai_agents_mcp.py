"""The OpenAI Agents SDK against `agentsim mcp`: one seed, one recorded session.

    python3 examples/mcp/openai_agents_mcp.py 1    # needs OPENAI_API_KEY

`model` is any Agents SDK model: a name read with OPENAI_API_KEY, or a `Model`
object (the tests pass a scripted one: no network, no key).
"""

import asyncio
import sys

from agents import Agent, Runner
from agents.mcp import MCPServerStdio
from mcp import types

INSTRUCTIONS = (
    "You are a support agent. Use the tools to handle the customer's request. "
    "A failed call explains itself: follow its `explanation`."
)


def tool_list_changed(message) -> bool:
    """Whether `message` is notifications/tools/list_changed: mcp 1.x wraps a
    notification in a ServerNotification (its `.root`), mcp 2.x (which
    `pip install openai-agents` brings) hands it over as it is."""
    return isinstance(getattr(message, "root", message), types.ToolListChangedNotification)


async def one_seed(seed: int, model="gpt-4.1", scenario="support_desk", record_dir="."):
    async def on_message(message):
        # A drift renames a response field and changes the tool list: drop the
        # cached list, so the model's next turn reads the new descriptions.
        if tool_list_changed(message):
            server.invalidate_tools_cache()

    server = MCPServerStdio(
        params={"command": "agentsim", "args": ["mcp", scenario, "--seed", str(seed), "--record", f"{record_dir}/s{seed}.ron"]},
        cache_tools_list=True,
        message_handler=on_message,
        client_session_timeout_seconds=60,
    )
    async with server:
        task = (await server.get_prompt("task")).messages[0].content.text
        agent = Agent(name="support", instructions=INSTRUCTIONS, model=model, mcp_servers=[server])
        await Runner.run(agent, task, max_turns=50)
    # leaving the block stops the server: the session is judged and recorded


if __name__ == "__main__":
    asyncio.run(one_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
