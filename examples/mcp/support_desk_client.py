#!/usr/bin/env python3
"""A scripted MCP client (standard library only) that solves the support_desk task.

It starts the server command given after `--`, speaks JSON-RPC over its stdio the
way an MCP SDK client does (one JSON message per line), reads the task from the
`task` prompt, and works through the tools: look the order up, confirm with the
customer (`send_message` returns the reply), refund, check a failed refund before
retrying (a timeout may have committed it), tell the customer, close stdin.

    python3 examples/mcp/support_desk_client.py -- agentsim mcp --seed 1 --record s.ron

The server's stderr (the task, the calls, the verdict) passes through to ours.
"""

import json
import re
import subprocess
import sys

ATTEMPTS_MAX = 6


class Client:
    def __init__(self, command):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        response = json.loads(self.proc.stdout.readline())
        while "id" not in response:
            # A notification (tools/list_changed after a drift): this client reads
            # responses by their documented fields, so it only notes it.
            print(f"client: notification {response.get('method')}", file=sys.stderr)
            response = json.loads(self.proc.stdout.readline())
        assert response["id"] == self.next_id, response
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response["result"]

    def notify(self, method):
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def call(self, name, **arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        return result.get("isError", False), result.get("structuredContent", {})

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait()


def parse_request(text, known):
    """Customer id, order id and item named in a message, keeping what is known."""
    found = dict(known)
    if m := re.search(r"\((C\d+)\)", text):
        found["customer_id"] = m.group(1)
    if m := re.search(r"the (.+?) from order (\w+)", text):
        found["item"], found["order_id"] = m.group(1), m.group(2)
    return found


def lookup(client, order_id):
    for _ in range(ATTEMPTS_MAX):
        failed, body = client.call("lookup_order", order_id=order_id)
        if not failed and isinstance(body.get("items"), list):
            return body
        print(f"client: lookup_order failed: {body.get('error', {}).get('explanation')}", file=sys.stderr)
    raise RuntimeError("lookup_order keeps failing")


def solve(client):
    """Works the task through `client` (any transport with `request`, `notify`
    and `call`): the task from the prompt, then the tools."""
    init = client.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "example", "version": "1"}},
    )
    client.notify("notifications/initialized")
    tools = {t["name"] for t in client.request("tools/list")["tools"]}
    assert {"lookup_order", "issue_refund", "send_message"} <= tools, tools
    task = client.request("prompts/get", {"name": "task"})["messages"][0]["content"]["text"]
    print(f"client: protocol {init['protocolVersion']}, task: {task}", file=sys.stderr)

    want = parse_request(task, {})
    if "order_id" not in want:
        failed, body = client.call("send_message", customer_id=want["customer_id"], kind="ask")
        want = parse_request((body.get("user_reply") or {}).get("text", ""), want)
    for _ in range(3):
        order = lookup(client, want["order_id"])
        price = next(i["price_cents"] for i in order["items"] if i["name"] == want["item"])
        failed, body = client.call(
            "send_message",
            customer_id=want["customer_id"],
            kind="confirm",
            order_id=want["order_id"],
            item=want["item"],
            amount_cents=price,
        )
        reply = body.get("user_reply") or {}
        print(f"client: the customer says: {reply.get('text')}", file=sys.stderr)
        content = reply.get("content") or {}
        if content.get("confirm") is True:
            break
        want = {**want, **{k: content[k] for k in ("order_id", "item") if k in content}}
    else:
        raise RuntimeError("the customer never confirmed")

    for _ in range(ATTEMPTS_MAX):
        failed, body = client.call("issue_refund", order_id=want["order_id"], amount_cents=price, reason="customer request")
        if not failed:
            break
        print(f"client: issue_refund failed: {body.get('error', {}).get('explanation')}", file=sys.stderr)
        # A refund that timed out may have been applied: check before paying twice.
        if lookup(client, want["order_id"]).get("refunded_cents", 0) >= price:
            break
    client.call("send_message", customer_id=want["customer_id"], kind="done", amount_cents=price)


def main():
    command = sys.argv[sys.argv.index("--") + 1 :]
    client = Client(command)
    solve(client)
    sys.exit(client.close())


if __name__ == "__main__":
    main()
