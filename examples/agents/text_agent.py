#!/usr/bin/env python3
"""A support_desk agent that talks to its customer in plain text, using only the standard library.

Run it with:
    agentsim sweep --agent "cmd:python3 examples/agents/text_agent.py" --seeds 0..200

It is what a chat agent does, written as rules instead of a model: it reads the
customer's words (never the structured `content` of their messages), calls the
tools, and answers in words with the `say` action (docs/protocol.md). The
customer reads those words by the rules of docs/conversation.md: a question
gets the facts it names, a proposal is checked value by value, a closing is
read for the amount it tells.

The policy: read the order and item from the customer's words (ask for the
order number if they did not say it), look the order up, propose the refund in
words and wait for a yes, refund with an idempotency key (checking the order
after a refund that timed out), tell the customer the amount refunded, finish
when they thank us. Transient errors wait with exponential backoff; a 401
re-authenticates; eight failures in a row hand the case to a human.
"""

import json
import re
import sys

PROTOCOL = "agentsim/1"
WHOLE_ORDER = "whole order"
ESCALATE_AFTER = 8
BACKOFF_MS_MAX = 30_000

CUSTOMER_ID = re.compile(r"\b(C\d{3,})\b")
ORDER_ID = re.compile(r"\border(?: number| id| #)?(?: is)?\s+#?([A-Z][0-9]{3,})\b", re.IGNORECASE)
BARE_ID = re.compile(r"\b([A-Z][0-9]{4,})\b")
ITEM_PATTERNS = [
    re.compile(r"refund (?:for )?the (.+?) from order", re.IGNORECASE),
    re.compile(r"money back for the (.+?) I bought", re.IGNORECASE),
    re.compile(r"\bthe item is (.+?)(?: and |[.,;]|$)", re.IGNORECASE),
]
YES = re.compile(r"^\s*(yes|ok\b|okay|that's correct|that sounds right|correct)", re.IGNORECASE)
NO = re.compile(r"^\s*(no\b|not quite|hmm, no)", re.IGNORECASE)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def money(cents):
    return f"${cents // 100}.{cents % 100:02d}"


class Agent:
    def __init__(self):
        self.customer = None
        self.want_order = None
        self.item = None
        self.orders = {}  # order id -> {"customer", "total", "items": {name: cents}, "refunds": [cents]}
        self.order_ids = None
        self.scanned = []
        self.proposed = None  # (order, item, amount) last proposed in words
        self.confirmed = None
        self.awaiting_user = False
        self.asked = False
        self.refund = "none"  # none | uncertain | verifying | issued
        self.refunded = None
        self.told = False
        self.thanked = False
        self.failures = 0
        self.needs_auth = False
        self.escalated = False

    # ---- reading the customer's words -----------------------------------------

    def hear(self, text):
        self.awaiting_user = False
        if m := CUSTOMER_ID.search(text):
            self.customer = m.group(1)
        order = ORDER_ID.search(text)
        if order is None and self.asked and self.want_order is None:
            order = BARE_ID.search(text)  # a terse answer to our question: "A1002."
        if order is not None:
            self.want_order = order.group(1).upper()
        if "whole order" in text.lower():
            self.item = WHOLE_ORDER
        else:
            for pattern in ITEM_PATTERNS:
                if m := pattern.search(text):
                    self.item = m.group(1).strip()
                    break
        if self.told:
            self.thanked = True  # whatever they say after the closing ends the chat
        elif NO.search(text):
            # Our proposal was wrong: what we read about the order may be off.
            if self.want_order:
                self.orders.pop(self.want_order, None)
            self.confirmed = None
        elif "instead" in text.lower():
            self.confirmed = None  # a change of mind: the new request was read above
        elif YES.search(text) and self.proposed is not None:
            self.confirmed = self.proposed

    def proposal(self):
        order = self.orders.get(self.want_order)
        if order is None or self.item is None:
            return None
        amount = amount_for(order, self.item)
        return None if amount is None else (self.want_order, self.item, amount)

    def learn(self, event):
        tool = event["call"]["tool"]
        args = event["call"]["args"]
        if not event["ok"]:
            return self.learn_failure(tool, args, event["error"])
        body = event["body"]
        if tool == "lookup_order":
            order = parse_order(body)
            if order is None:  # off-schema: do not trust it, look again shortly
                return self.learn_failure(tool, args, {"type": "malformed", "status": 200})
            order_id = order.pop("id")
            if args.get("order_id") not in self.scanned:
                self.scanned.append(args.get("order_id"))
            if self.refund == "verifying" and order_id == self.want_order:
                expected = amount_for(order, self.item)
                if expected is not None and expected in order["refunds"]:
                    self.refund, self.refunded = "issued", expected
                else:
                    self.refund = "none"
            self.orders[order_id] = order
        elif tool == "get_customer":
            ids = body.get("order_ids")
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                return self.learn_failure(tool, args, {"type": "malformed", "status": 200})
            self.order_ids = ids
        elif tool == "issue_refund":
            self.refund, self.refunded = "issued", args.get("amount_cents")
        elif tool == "escalate":
            self.escalated = True
        elif tool == "authenticate":
            self.needs_auth = False
        self.failures = 0
        return None

    def learn_failure(self, tool, args, error):
        self.failures += 1
        status = error.get("status")
        if status == 401:
            self.needs_auth = True
            return None
        if status == 404 and tool == "lookup_order":
            if args.get("order_id") == self.want_order:
                self.want_order, self.asked = None, False  # no such order: ask again
            return None
        if error.get("type") == "timeout" and tool == "issue_refund":
            self.refund = "uncertain"  # it may have been applied before the answer was lost
        wait = min(BACKOFF_MS_MAX, 1_000 * 2 ** min(self.failures - 1, 5))
        return max(wait, error.get("retry_after_ms") or 0)

    # ---- deciding -------------------------------------------------------------

    def say(self, text):
        self.awaiting_user = True
        return {"action": "say", "text": text}

    def decide(self):
        if self.escalated or self.thanked:
            return {"action": "finish", "outcome": "done"}
        if self.customer is None:
            return {"action": "idle"}
        if self.failures >= ESCALATE_AFTER:
            return call("escalate", customer_id=self.customer, reason=f"{self.failures} failures in a row")
        if self.needs_auth:
            return call("authenticate")
        if self.awaiting_user:
            return {"action": "idle"}
        if self.item is None:
            return self.say("Which item would you like refunded, and from which order?")
        order_id, found = self.find_order()
        if found is None:
            return order_id  # the action that finds it
        amount = amount_for(found, self.item)
        if amount is None:
            self.orders.pop(order_id, None)
            self.failures += 1
            return call("lookup_order", order_id=order_id)
        if self.refund in ("uncertain", "verifying"):
            self.refund = "verifying"
            return call("lookup_order", order_id=order_id)
        if self.refund == "none" and amount in found["refunds"]:
            self.refund, self.refunded = "issued", amount  # an earlier attempt went through
        if self.refund == "none":
            if self.confirmed != (order_id, self.item, amount):
                self.proposed = (order_id, self.item, amount)
                what = "your whole order" if self.item == WHOLE_ORDER else f"the {self.item} from order"
                return self.say(f"Shall I refund {what} {order_id}, {money(amount)}?")
            refund = call("issue_refund", order_id=order_id, amount_cents=amount, reason="customer request")
            refund["idempotency_key"] = f"py-text-refund-{order_id}-{amount}"
            return refund
        if not self.told:
            self.told = True
            return self.say(f"Done: I've refunded {money(self.refunded)} on order {order_id}. "
                            "Is there anything else I can help you with?")
        return {"action": "finish", "outcome": "done"}

    def find_order(self):
        """(order id, order) when known; else (the action that finds it, None)."""
        if self.want_order is not None:
            found = self.orders.get(self.want_order)
            if found is None:
                return call("lookup_order", order_id=self.want_order), None
            return self.want_order, found
        if self.item != WHOLE_ORDER:
            for order_id, order in self.orders.items():
                if order["customer"] == self.customer and self.item in order["items"]:
                    self.want_order = order_id
                    return order_id, order
            if self.order_ids is None:
                return call("get_customer", customer_id=self.customer), None
            for order_id in self.order_ids:
                if order_id not in self.scanned:
                    return call("lookup_order", order_id=order_id), None
        self.asked = True
        return self.say("Could you tell me your order number?"), None

    def step(self, observation):
        now = observation["now_ms"]
        event = observation["event"]
        kind = event["kind"]
        wait = None
        if kind == "user_message":
            self.hear(event.get("text") or "")
        elif kind == "tool_result":
            wait = self.learn(event)
        elif kind == "blocked":
            self.failures += 1
            wait = 20_000
        if wait:
            return {"action": "sleep", "until_ms": now + wait}
        return self.decide()


def call(tool, **args):
    return {"action": "call", "tool": tool, "args": args}


def parse_order(body):
    """The fields this agent uses, type-checked; None if the body is off-schema.
    The total may be renamed (drift) or arrive as a display string: the items
    add up to it, so it is recomputed from them."""
    items, refunds = body.get("items"), body.get("refunds")
    if not all(isinstance(body.get(k), str) for k in ("order_id", "customer_id")):
        return None
    if not isinstance(items, list) or not isinstance(refunds, list):
        return None
    prices = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        if not isinstance(item.get("price_cents"), int):
            return None
        prices[item["name"]] = item["price_cents"]
    amounts = [r.get("amount_cents") for r in refunds if isinstance(r, dict)]
    if len(amounts) != len(refunds) or not all(isinstance(a, int) for a in amounts):
        return None
    return {"id": body["order_id"], "customer": body["customer_id"], "total": sum(prices.values()),
            "items": prices, "refunds": amounts}


def amount_for(order, item):
    if item == WHOLE_ORDER:
        return order["total"]
    return order["items"].get(item)


def main():
    agent = Agent()
    for line in sys.stdin:
        observation = json.loads(line)
        if observation.get("protocol") != PROTOCOL:
            log("unexpected protocol:", observation.get("protocol"))
            return 1
        action = agent.step(observation)
        action["protocol"] = PROTOCOL
        sys.stdout.write(json.dumps(action) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
