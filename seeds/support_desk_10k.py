#!/usr/bin/env python3
"""Writes seeds/support_desk_10k.ron: ten thousand sessions at one support desk
over one virtual hour, for the "Many sessions" benchmark (BENCHMARKS.md) and
docs/sessions.md.

The desk has 1,000 customers and 2,000 orders (one to three items each, drawn
from forty products): about five requests per order over the hour, so
sessions that overlap in time sometimes ask about the same order (the races
of docs/sessions.md), without every session queueing on five orders. A
desk of a million customers would show no contention at all and make a file
of 150 MB; this one is about 280 KB.

    python3 seeds/support_desk_10k.py > seeds/support_desk_10k.ron

The output depends on nothing but this file (a fixed seed of Python's own
generator), so it is reproducible.
"""

import random

CUSTOMERS = 1_000
ORDERS = 2_000

PRODUCTS = [
    ("HP-200", "headphones", 4_250), ("CB-010", "usb cable", 1_299), ("KB-550", "keyboard", 8_900),
    ("BL-900", "blender", 12_999), ("MG-002", "mug set", 2_450), ("LM-300", "desk lamp", 3_575),
    ("BK-777", "notebook", 899), ("CH-120", "office chair", 24_900), ("MS-310", "mouse", 2_999),
    ("MN-270", "monitor", 21_900), ("SP-404", "speaker", 7_450), ("TB-050", "tablet stand", 1_875),
    ("KT-600", "kettle", 3_990), ("TS-220", "toaster", 4_499), ("PN-015", "pen set", 650),
    ("BP-880", "backpack", 6_900), ("UM-101", "umbrella", 1_999), ("WB-330", "water bottle", 1_450),
    ("CM-700", "coffee maker", 9_900), ("FP-120", "frying pan", 3_250), ("TW-400", "towel set", 2_799),
    ("PL-090", "pillow", 2_199), ("BT-510", "bath mat", 1_599), ("CL-250", "wall clock", 2_650),
    ("PH-880", "phone case", 1_299), ("CH-015", "charger", 2_499), ("HD-600", "hard drive", 7_999),
    ("WC-720", "webcam", 5_499), ("MC-330", "microphone", 8_450), ("RT-990", "router", 11_900),
    ("SC-140", "scissors", 799), ("GL-060", "glasses case", 999), ("WL-420", "wallet", 3_450),
    ("BL-230", "belt", 2_950), ("SN-610", "sneakers", 8_999), ("JK-880", "jacket", 15_900),
    ("YM-120", "yoga mat", 2_899), ("DB-500", "dumbbells", 4_999), ("PL-777", "plant pot", 1_350),
    ("CN-300", "candle set", 1_899),
]

NAMES = [
    "Ada", "Grace", "Linus", "Alan", "Barbara", "Donald", "Edsger", "Frances", "John", "Katherine",
    "Ken", "Margaret", "Niklaus", "Radia", "Tony", "Dennis", "Hedy", "Leslie", "Shafi", "Tim",
]


def main():
    rng = random.Random(29)
    out = [HEADER]
    out.append("        customers: [\n")
    for c in range(CUSTOMERS):
        out.append(f'            (id: "C{c + 1:05}", name: "{NAMES[c % len(NAMES)]}"),\n')
    out.append("        ],\n        orders: [\n")
    for o in range(ORDERS):
        # Every customer has an order; the rest go to customers at random.
        customer = o if o < CUSTOMERS else rng.randrange(CUSTOMERS)
        items = rng.sample(PRODUCTS, rng.choice([1, 1, 2, 2, 2, 3]))
        status = ", status: Shipped" if rng.random() < 0.2 else ""
        lines = ", ".join(f'(sku: "{s}", name: "{n}", price_cents: {p})' for s, n, p in items)
        out.append(f'            (id: "A{o + 1:05}", customer: "C{customer + 1:05}", items: [{lines}]{status}),\n')
    out.append("        ],\n")
    out.append(FOOTER)
    print("".join(out), end="")


HEADER = """\
// Ten thousand customers at one support desk over one virtual hour: the
// scale scenario of docs/sessions.md and BENCHMARKS.md ("Many sessions").
// Written by seeds/support_desk_10k.py (do not edit by hand).
//
// Sessions arrive by Poisson at about 167 a minute (10,000 in about an hour);
// the horizon of two hours lets the last ones finish. The desk is
// support_desk_load.ron's (tools, faults, drift) with its shared limits
// scaled to the load: the refund API admits 30 refunds and one more every
// 200 ms (300 a minute), and the model 2,500 requests a minute. 1,000
// customers hold 2,000 orders, so about five sessions ask about each order
// over the hour and some of them overlap.
Scenario(
    name: "support_desk_10k",
    description: "Ten thousand customers over one hour share one desk, one refund rate limit and one model quota.",
    horizon_ms: 7_200_000, // two virtual hours
    budgets: (turns_max: 40, tool_calls_max: 60, tokens_max: 300_000, events_max: 2_000),
    model: (
        think: Uniform(min_ms: 600, max_ms: 2_400),
        system_prompt_tokens: 1_200,
        completion_tokens: 60,
        usd_per_mtok_prompt: 3.0,
        usd_per_mtok_completion: 15.0,
    ),
    sessions: (
        count: 10_000,
        arrival: Poisson(per_minute: 166.7),
        model_capacity: (requests_per_minute: 2_500),
    ),
    world: SupportDesk(
"""

FOOTER = """\
        personas: (clear: 0.5, vague: 0.3, changes_mind: 0.2),
        reply_ms: Uniform(min_ms: 4_000, max_ms: 30_000),
        status_change_ms: Uniform(min_ms: 60_000, max_ms: 600_000),
        tools: (
            lookup_order: (
                latency: LogNormal(median_ms: 120, p99_ms: 900),
                faults: [
                    (fault: Error(status: 503), probability: 0.2),
                    (fault: Malformed(WrongType), probability: 0.05),
                    (fault: Malformed(MissingField), probability: 0.03),
                ],
                drift: [
                    (at_ms: 120_000, change: RenameField(from: "total_cents", to: "total_amount_cents")),
                ],
            ),
            get_customer: (
                latency: LogNormal(median_ms: 90, p99_ms: 600),
                faults: [(fault: Error(status: 500), probability: 0.05)],
            ),
            issue_refund: (
                latency: LogNormal(median_ms: 300, p99_ms: 2_000),
                timeout_ms: 8_000,
                faults: [
                    (fault: RateLimit(capacity: 30, refill_ms: 200)),
                    (fault: CommitThenTimeout, when: Window(from_ms: 20_000, to_ms: 240_000), probability: 0.35),
                ],
            ),
            send_message: (
                latency: Uniform(min_ms: 80, max_ms: 300),
                faults: [
                    (fault: Error(status: 503, retry_after_ms: 2_000), probability: 0.05),
                    (fault: AuthExpired, probability: 0.03),
                ],
            ),
        ),
    ),
)
"""

if __name__ == "__main__":
    main()
