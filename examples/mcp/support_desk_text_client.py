#!/usr/bin/env python3
"""An MCP client (standard library only) that talks to the customer in words.

It plays the policy of examples/agents/text_agent.py over `agentsim mcp`: it
reads the task from the `task` prompt, calls the world's tools, and writes to
the customer with the `say_to_user` tool, whose result is the customer's reply
in words (it never reads a structured `content`). It closes stdin when the
customer thanks it after the closing.

    python3 examples/mcp/support_desk_text_client.py -- agentsim mcp --seed 3 --fault-scale 0 --record s.ron

MCP has no way to wait on the virtual clock, so a backoff the policy asks for
is skipped (the next call goes at once). The server's stderr (the task, the
calls, the customer's words, the verdict) passes through to ours.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agents"))
import text_agent  # noqa: E402  (the policy, beside the other example agents)

#: The most actions one session takes (a policy stuck in a loop ends).
ACTIONS_MAX = 200


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
        while "id" not in response:  # a notification (tools/list_changed)
            response = json.loads(self.proc.stdout.readline())
        assert response["id"] == self.next_id, response
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response["result"]

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait()


def as_event(tool, args, result):
    """A world tool's MCP result as the protocol's tool_result event."""
    body = result.get("structuredContent", {})
    call = {"tool": tool, "args": args}
    if result.get("isError"):
        error = dict(body.get("error") or {"status": 500})
        error.setdefault("type", "timeout" if error.get("status") == 504 else "http")
        return {"kind": "tool_result", "call": call, "ok": False, "error": error}
    return {"kind": "tool_result", "call": call, "ok": True, "body": body}


def main():
    command = sys.argv[sys.argv.index("--") + 1 :]
    client = Client(command)
    client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "text-example", "version": "1"}})
    tools = {t["name"] for t in client.request("tools/list")["tools"]}
    assert "say_to_user" in tools, tools
    task = client.request("prompts/get", {"name": "task"})["messages"][0]["content"]["text"]
    agent = text_agent.Agent()
    event = {"kind": "user_message", "text": task}
    for _ in range(ACTIONS_MAX):
        action = agent.step({"now_ms": 0, "event": event})
        if action["action"] == "sleep":
            action = agent.decide()  # no virtual wait over MCP: go on at once
        if action["action"] in ("finish", "idle"):
            break
        if action["action"] == "say":
            result = client.request("tools/call", {"name": "say_to_user", "arguments": {"text": action["text"]}})
            if result.get("isError"):
                break  # the session has ended
            event = {"kind": "user_message", "text": result["structuredContent"]["user_reply"]}
        else:
            params = {"name": action["tool"], "arguments": action.get("args", {})}
            if "idempotency_key" in action:
                params["_meta"] = {"agentsim/idempotency_key": action["idempotency_key"]}
            event = as_event(action["tool"], params["arguments"], client.request("tools/call", params))
    sys.exit(client.close())


if __name__ == "__main__":
    main()
