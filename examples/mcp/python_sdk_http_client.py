#!/usr/bin/env python3
"""Sessions of a run of many through the official MCP Python SDK's Streamable
HTTP client (`pip install mcp`), all at once.

A fixed script, not an agent: each client initializes (the k-th is session k),
reads its task from the prompt, looks up the order it names, and leaves
(the SDK sends DELETE), which ends its session. Run by `cargo test` with mcp
2.3.0 (`.ci/run` installs it).

    agentsim mcp seeds/support_desk_race.ron --http 127.0.0.1:0 &
    python3 examples/mcp/python_sdk_http_client.py http://127.0.0.1:PORT/mcp 10
"""

import asyncio
import re
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def one_session(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            prompt = await session.get_prompt("task")
            task = prompt.messages[0].content.text
            order = re.search(r"order (\w+)", task)
            result = await session.call_tool("lookup_order", {"order_id": order.group(1) if order else "A1001"})
            status = "error" if result.is_error else "ok"
            print(f"sdk: {init.protocol_version}, {len(tools.tools)} tools, task: {task} lookup_order {status}")
    # Leaving the client sends DELETE: the session ends.


async def main(url, count):
    await asyncio.gather(*(one_session(url) for _ in range(count)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1))
