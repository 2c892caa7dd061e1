#!/usr/bin/env python3
"""MCP clients over the Streamable HTTP transport (standard library only), one
per session of a run that `agentsim mcp SCENARIO --http ADDR` serves.

Each client POSTs its JSON-RPC messages to the endpoint, keeps the
`Mcp-Session-Id` the `initialize` response carries, works the support_desk
task with the same script as the stdio example (`support_desk_client.py`),
and ends its session with DELETE. With `--clients N` it runs N clients at once,
in threads: the k-th to initialize is session k of the run. Run as many
clients as the scenario has sessions: a session without one ends only after
the server's `--client-wait-ms`.

    agentsim mcp seeds/support_desk_race.ron --seed 0 --http 127.0.0.1:0 &
    python3 examples/mcp/http_client.py --clients 10 http://127.0.0.1:PORT/mcp

Given `--` and a command instead of a URL, it starts the server itself, reads
the URL from the line it prints on stderr, runs the clients, and exits with the
server's status (its stderr passes through to ours).
"""

import http.client
import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support_desk_client import solve  # noqa: E402

SERVING = re.compile(r"agentsim mcp: serving \d+ sessions? at (http://\S+)")


class HttpClient:
    """One MCP session over Streamable HTTP: a keep-alive connection."""

    def __init__(self, url):
        self.url = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=600)
        self.session = None
        self.next_id = 0

    def post(self, message):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.connection.request("POST", self.url.path, json.dumps(message), headers)
        response = self.connection.getresponse()
        body = response.read().decode()
        self.session = self.session or response.getheader("Mcp-Session-Id")
        if response.status == 202:
            return None
        if response.getheader("Content-Type", "").startswith("text/event-stream"):
            # A notification (tools/list_changed after a drift) before the response.
            messages = [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]
            for note in messages[:-1]:
                print(f"client: notification {note.get('method')}", file=sys.stderr)
            return messages[-1]
        answer = json.loads(body)
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {answer.get('error', {}).get('message')}")
        return answer

    def request(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        assert response["id"] == self.next_id, response
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response["result"]

    def notify(self, method):
        self.post({"jsonrpc": "2.0", "method": method})

    def call(self, name, **arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        return result.get("isError", False), result.get("structuredContent", {})

    def close(self):
        """Ends the session (DELETE), as closing stdin ends a stdio session. The
        server exits once every session has ended, so it may be gone already."""
        try:
            if self.session:
                self.connection.request("DELETE", self.url.path, headers={"Mcp-Session-Id": self.session})
                self.connection.getresponse().read()
        except OSError:
            pass
        self.connection.close()


def run_client(url, failures):
    client = HttpClient(url)
    try:
        solve(client)
    except Exception as e:  # a client's failure is its session's, not the others'
        print(f"client: gave up: {type(e).__name__}: {e}", file=sys.stderr)
        failures.append(e)
    finally:
        client.close()


def run_clients(url, count):
    failures = []
    threads = [threading.Thread(target=run_client, args=(url, failures)) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def serve_and_run(command, count):
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    url = None
    for line in server.stderr:
        sys.stderr.write(line)
        if m := SERVING.search(line):
            url = m.group(1)
            break
    if url is None:
        return server.wait() or 2
    relay = threading.Thread(target=lambda: [sys.stderr.write(line) for line in server.stderr])
    relay.start()
    run_clients(url, count)
    status = server.wait()
    relay.join()
    return status


def main():
    args = sys.argv[1:]
    count = 1
    if args[:1] == ["--clients"]:
        count, args = int(args[1]), args[2:]
    if args[:1] == ["--"]:
        sys.exit(serve_and_run(args[1:], count))
    sys.exit(1 if run_clients(args[0], count) else 0)


if __name__ == "__main__":
    main()
