"""Writes the tasks of support_desk.ron: one per (order, item or whole order),
weighted as the Rust world draws its requests. Run from anywhere:

    python3 examples/worlds/support_desk/tasks.py

It reads orders.json and the scenario's frame (everything but the tasks) from
support_desk.ron.in beside it, and rewrites support_desk.ron.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
customers = {"C001": "Ada", "C002": "Grace", "C003": "Linus"}
orders = json.load(open(os.path.join(HERE, "orders.json")))
WHOLE = "whole order"

def total(o): return sum(i["price_cents"] for i in o["items"])
def amount(o, item): return total(o) if item == WHOLE else next(i["price_cents"] for i in o["items"] if i["name"] == item)
def orders_of(c): return [o for o in orders if o["customer_id"] == c]

def alternative(o, item):
    # worlds/src/support_desk/world.rs: another item of the same customer,
    # preferring the same order (the Rust world draws among them; here, the first).
    others = [(p, i["name"]) for p in orders_of(o["customer_id"]) for i in p["items"] if not (p is o and i["name"] == item)]
    same = [t for t in others if t[0] is o]
    return (same or others)[0]

def q(s): return json.dumps(s)

def gold(order_id, amount_cents, item, indent, lookups=None):
    """The gold actions; None means `{fact}`."""
    oid = q(order_id) if order_id else '"{order_id}"'
    amt = str(amount_cents) if amount_cents else '"{amount_cents}"'
    it = '"{item}"'
    applied = (f'result.refunds.some(|r| r.amount_cents == {amount_cents})' if amount_cents
               else 'result.refunds.some(|r| r.amount_cents == facts.amount_cents)')
    pad = " " * indent
    lines = []
    if lookups is None:
        lines.append(f'(tool: "lookup_order", args: {{"order_id": {oid}}}),')
    else:
        lines.append('(tool: "get_customer", args: {"customer_id": "{customer_id}"}),')
        for l in lookups:
            lines.append(f'(tool: "lookup_order", args: {{"order_id": {q(l)}}}),')
    lines.append(f'(tool: "send_message", args: {{"customer_id": "{{customer_id}}", "kind": "confirm", "order_id": {oid}, "item": {it}, "amount_cents": {amt}}}),')
    lines.append(f'(tool: "issue_refund", args: {{"order_id": {oid}, "amount_cents": {amt}, "reason": "customer request"}}, verify: (tool: "lookup_order", args: {{"order_id": {oid}}}, applied: {q(applied)})),')
    lines.append(f'(tool: "send_message", args: {{"customer_id": "{{customer_id}}", "kind": "done", "order_id": {oid}, "amount_cents": {amt}}}),')
    return "\n".join(pad + l for l in lines)

def tid(o, item): return o["order_id"] + "_" + ("whole" if item == WHOLE else item.replace(" ", "_"))

tasks = []
for o in orders:
    c = o["customer_id"]; name = customers[c]
    for item in [i["name"] for i in o["items"]] + [WHOLE]:
        amt = amount(o, item)
        if item == WHOLE:
            request = f"Hi, this is {name} ({{customer_id}}). Please refund my whole order {{order_id}}."
            # The Rust expert cannot look for an item called "whole order": it asks which order.
            plan = gold(None, amt, item, 20)
        else:
            request = f"Hi, this is {name} ({{customer_id}}). Please refund the {{item}} from order {{order_id}}."
            # The Rust expert reads the customer's orders and looks them up in turn
            # until one holds the item.
            ids = [p["order_id"] for p in orders_of(c)]
            scanned = ids[: ids.index(o["order_id"]) + 1]
            plan = gold(o["order_id"], amt, item, 20, lookups=scanned)
        ao, aitem = alternative(o, item)
        alt_facts = {"order_id": ao["order_id"], "item": aitem, "amount_cents": amount(ao, aitem)}
        # The Rust world draws a customer, then one of their orders, then the
        # whole order one time in four or else one item: 48 seeds in turn give
        # each request its share.
        share = 48 // 3 // len(orders_of(c))
        weight = share // 4 if item == WHOLE else share * 3 // 4 // len(o["items"])
        t = f'''            (
                id: {q(tid(o, item))},
                weight: {weight},
                facts: {{"customer_id": {q(c)}, "order_id": {q(o["order_id"])}, "item": {q(item)}, "amount_cents": {amt}}},
                request: {q(request)},
                openings: [("vague", {q(f"Hi, this is {name} ({{customer_id}}). I want my money back for the {{item}} I bought.")})],
                gold: [
{gold(None, None, item, 20)}
                ],
                plans: [(unstated: ["order_id"], gold: [
{plan}
                ])],
                alternative: (
                    facts: {{"order_id": {q(alt_facts["order_id"])}, "item": {q(alt_facts["item"])}, "amount_cents": {alt_facts["amount_cents"]}}},
                    gold: [
{gold(None, None, aitem, 24)}
                    ],
                ),
                milestones: MILESTONES,
                success: (tables: ["refunds"]),
            ),'''
        tasks.append(t)

milestones = '''[
                    (name: "order_found", when: r#"action.tool == "lookup_order" && action.args.order_id == facts.order_id"#),
                    (name: "refunded", when: r#"action.tool == "issue_refund" && action.args.order_id == facts.order_id && action.args.amount_cents == facts.amount_cents"#),
                    (name: "customer_told", after: ["refunded"], when: r#"action.tool == "send_message" && action.args.kind == "done" && action.args.amount_cents == facts.amount_cents && reached("refunded")"#),
                ]'''
body = "\n".join(tasks).replace("MILESTONES", milestones)
template = open(os.path.join(HERE, "support_desk.ron.in")).read()
open(os.path.join(HERE, "support_desk.ron"), "w").write(template.replace("TASKS\n", body + "\n"))
