#!/usr/bin/env python3
"""Turns per second of wall clock of `agentsim sweep --agent llm:fake` against a
loopback OpenAI-compatible fake server that answers every request after 200 ms,
at 1, 8 and 64 episodes in flight (`--in-flight N`); BENCHMARKS.md,
"Episodes in flight".

    python3 benches/llm_in_flight.py target/release/agentsim [SEEDS_PER_IN_FLIGHT]

A turn is one model request the server answered. The fake agent asks the
customer a question four times, then ends the conversation: five requests per
episode. The world is support_desk with 2,000 customers of one order each, of eight
kinds of item (written by this script), so that episodes open with different words: two
episodes whose requests are identical share one answer (a process asks a
request once), which would measure the memory, not the network. The ideal at
N in flight is N / 0.2 s. Each setting runs SEEDS_PER_IN_FLIGHT (default 20)
seeds per episode in flight, so that every setting keeps its threads busy for
about as long; the three sweeps' first 20 rows must be the same bytes.
"""

import json
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY_S = 0.2
QUESTIONS = 4


class Handler(BaseHTTPRequestHandler):
    # Keep-alive, as providers serve: a connection is reused by the client.
    protocol_version = "HTTP/1.1"
    count = 0
    lock = threading.Lock()

    def setup(self):
        super().setup()
        # The headers and the body are written apart: without this, Nagle's
        # algorithm holds the body for the client's delayed ACK (40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        time.sleep(DELAY_S)
        with Handler.lock:
            Handler.count += 1
        asked = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if asked < QUESTIONS:
            message = {"role": "assistant", "content": "Could you tell me more about your order?"}
        else:
            call = {"id": "end", "type": "function",
                    "function": {"name": "end_conversation", "arguments": "{\"outcome\": \"done\"}"}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        body = json.dumps({"choices": [{"index": 0, "message": message}],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    # A backlog for 64 connections at once (the default, 5, drops some: the
    # client would retry them as the provider's failures).
    request_queue_size = 256
    daemon_threads = True


#: Item names, few (the customer's reader checks every name the shop knows).
NAMES = ["headphones", "usb cable", "keyboard", "blender", "mug set", "desk lamp", "notebook", "office chair"]


def scenario(path):
    """support_desk with 2,000 customers, one order each (of one of 8 items)."""
    with open("seeds/support_desk.ron") as f:
        text = f.read()
    start, end = text.index("        customers: ["), text.index("        personas:")
    customers = "".join(f'            (id: "C{i:04}", name: "Customer {i}"),\n' for i in range(2000))
    orders = "".join(
        f'            (id: "A{10000 + i}", customer: "C{i:04}", items: [(sku: "SK-{i}", name: "{NAMES[i % len(NAMES)]}", price_cents: {1000 + i})]),\n'
        for i in range(2000))
    with open(path, "w") as f:
        f.write(text[:start] + f"        customers: [\n{customers}        ],\n        orders: [\n{orders}        ],\n" + text[end:])


def main():
    binary = sys.argv[1]
    per_thread = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    outputs = {}
    world = tempfile.NamedTemporaryFile(suffix=".ron", delete=False).name
    scenario(world)
    for in_flight in (1, 8, 64):
        with tempfile.TemporaryDirectory() as out:
            before = Handler.count
            usage = lambda who: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(who))
            cpu_before = (usage(resource.RUSAGE_CHILDREN), usage(resource.RUSAGE_SELF))
            started = time.monotonic()
            seeds = f"0..{per_thread * in_flight}"
            subprocess.run(
                [binary, "sweep", world, "--agent", "llm:fake", "--seeds", seeds, "--llm-base-url", url,
                 "--in-flight", str(in_flight), "--failures", "0", "--out", out, "--quiet"],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={"OPENAI_API_KEY": "", "PATH": "/usr/bin:/bin"})
            wall = time.monotonic() - started
            turns = Handler.count - before
            agentsim_cpu = usage(resource.RUSAGE_CHILDREN) - cpu_before[0]
            server_cpu = usage(resource.RUSAGE_SELF) - cpu_before[1]
            with open(f"{out}/trajectories.csv") as f:
                outputs[in_flight] = "".join(f.readlines()[: per_thread + 1])
                retries = outputs[in_flight].count("llm.retry")
        ideal = in_flight / DELAY_S
        print(f"in flight {in_flight:>2}, seeds {seeds}: {turns} turns in {wall:.2f} s = {turns / wall:.1f} turns/s "
              f"({turns / wall / ideal:.0%} of {ideal:.0f}); CPU per turn: agentsim {agentsim_cpu / turns * 1e3:.2f} ms, "
              f"fake server {server_cpu / turns * 1e3:.2f} ms; rows with provider retries: {retries}")
    same = len(set(outputs.values())) == 1
    print(f"the first {per_thread} rows of trajectories.csv identical at 1, 8 and 64 in flight:", same)
    server.shutdown()


if __name__ == "__main__":
    main()
