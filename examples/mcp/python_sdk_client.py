#!/usr/bin/env python3
"""The support_desk task of seed 1 through the official MCP Python SDK (`pip install mcp`).

A fixed script, not an agent: it shows what an SDK client sees (the prompt, an
injected 503 as `is_error`, the customer's reply inside the `send_message`
result, a JSON-RPC error for an unknown tool). Run by `cargo test` with mcp
2.3.0 (`.ci/run` installs it), whose results use snake_case attributes
(`is_error`, `structured_content`).

    python3 examples/mcp/python_sdk_client.py path/to/agentsim
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(agentsim):
    params = StdioServerParameters(command=agentsim, args=["mcp", "--seed", "1", "--record", "sdk-seed-1.ron"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print("protocol", init.protocol_version)
            tools = await session.list_tools()
            print("tools", [t.name for t in tools.tools])
            prompt = await session.get_prompt("task")
            print("task:", prompt.messages[0].content.text)
            for _ in range(2):  # the first lookup meets an injected 503
                r = await session.call_tool("lookup_order", {"order_id": "A1002"})
                print("lookup_order is_error", r.is_error, r.structured_content)
            r = await session.call_tool(
                "send_message",
                {"customer_id": "C001", "kind": "confirm", "order_id": "A1002", "item": "keyboard", "amount_cents": 8900},
            )
            print("customer:", r.structured_content["user_reply"]["text"])
            r = await session.call_tool("issue_refund", {"order_id": "A1002", "amount_cents": 8900})
            print("issue_refund", r.is_error, r.structured_content)
            await session.call_tool("send_message", {"customer_id": "C001", "kind": "done", "amount_cents": 8900})
            try:
                await session.call_tool("no_such_tool", {})
            except Exception as e:  # a JSON-RPC error, raised by the SDK
                print("unknown tool:", e)
    # Leaving the session closes the server's stdin: it judges and records.


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "agentsim"))
