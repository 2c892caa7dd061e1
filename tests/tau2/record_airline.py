"""The airline half of record_calls.py (run that script; it imports this one
for an airline data folder): tau2-bench's own airline tools, the corpus of
single calls, and their recording.

Each call runs on the initial database (the records a call may change are put
back after it, checked by tau2's own hash) through tau2's
`Environment.make_tool_call`; its answer is what `Environment.get_response`
hands the model. The lines have the same fields as the retail corpus's.
"""

import copy
import json
import random
import sys

from record_calls import answer, sha

# The airports of tau2's `list_all_airports`, and a few it does not know.
AIRPORTS = ["SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX", "IAH", "LAS", "MCO",
            "EWR", "CLT", "MSP", "DTW", "PHL", "LGA"]
CABINS = ["business", "economy", "basic_economy"]
NAMES = [("Ava", "Smith", "1990-01-01"), ("Noah", "Kim", "1985-06-30"), ("Liam", "Garcia", "2001-12-12")]


def load(src, data):
    sys.path.insert(0, src)
    import logging

    from loguru import logger

    logger.remove()
    logging.disable(logging.CRITICAL)
    from tau2.domains.airline.data_model import FlightDB
    from tau2.domains.airline.tools import AirlineTools
    from tau2.environment.environment import Environment

    db = FlightDB.load(f"{data}/db.json")

    def env(copy_of=db):
        return Environment(domain_name="airline", policy="", tools=AirlineTools(copy.deepcopy(copy_of)))

    return db, env, Environment


class Pools:
    def __init__(self, db):
        self.db = db
        self.users = list(db.users.values())
        self.reservations = list(db.reservations.values())
        self.flights = list(db.flights.values())
        self.dates = [f"2024-05-{d:02d}" for d in range(1, 31)]

    def available(self, rng, cabin=None):
        """(flight, date) available on that date."""
        while True:
            flight = rng.choice(self.flights)
            date = rng.choice(self.dates)
            status = flight.dates.get(date)
            if status is not None and status.status == "available":
                return flight, date

    def any_date(self, rng):
        flight = rng.choice(self.flights)
        return flight, rng.choice(list(flight.dates))


def passengers(rng, user, n):
    saved = [(p.first_name, p.last_name, p.dob) for p in user.saved_passengers]
    own = (user.name.first_name, user.name.last_name, user.dob)
    pool = [own] + saved + NAMES
    return [dict(zip(["first_name", "last_name", "dob"], rng.choice(pool))) for _ in range(n)]


def pay_id(rng, user, pools, kinds=("credit_card", "gift_card", "certificate")):
    """A payment method of the user (of a kind when it has one), another
    user's, or none."""
    r = rng.random()
    own = [k for k, m in user.payment_methods.items() if m.source in kinds] or list(user.payment_methods)
    if r < 0.85:
        return rng.choice(own)
    if r < 0.95:
        return rng.choice(list(rng.choice(pools.users).payment_methods))
    return "credit_card_0000000"


def booking(rng, pools):
    user = rng.choice(pools.users)
    cabin = rng.choice(CABINS)
    n = rng.choice([1, 1, 2, 3])
    legs = []
    for _ in range(rng.choice([1, 1, 2])):
        r = rng.random()
        if r < 0.8:
            flight, date = pools.available(rng)
        elif r < 0.9:
            flight, date = pools.any_date(rng)
        else:
            flight, date = rng.choice(pools.flights), rng.choice(["2024-06-01", "2024-5-3"])
        number = flight.flight_number if rng.random() < 0.95 else "HAT999"
        legs.append((flight, number, date))
    insurance = rng.choice(["yes", "no"])
    nonfree = rng.choice([0, 0, 1, 2])
    total = 0
    for flight, number, date in legs:
        status = flight.dates.get(date)
        if status is not None and status.status == "available":
            total += status.prices[cabin] * n
    total += (30 * n if insurance == "yes" else 0) + 50 * nonfree
    if rng.random() < 0.15:
        total += rng.choice([-1, 1, 100])
    pm = pay_id(rng, user, pools)
    payments = [{"payment_id": pm, "amount": total}]
    others = [k for k in user.payment_methods if k != pm]
    if others and rng.random() < 0.3:
        part = rng.randrange(0, max(total, 1))
        payments = [{"payment_id": rng.choice(others), "amount": part}, {"payment_id": pm, "amount": total - part}]
    first = legs[0][0]
    return {
        "user_id": user.user_id if rng.random() < 0.95 else "nobody_123",
        "origin": first.origin,
        "destination": legs[-1][0].destination,
        "flight_type": rng.choice(["one_way", "round_trip"]),
        "cabin": cabin,
        "flights": [{"flight_number": number, "date": date} for _, number, date in legs],
        "passengers": passengers(rng, user, n),
        "payment_methods": payments,
        "total_baggages": nonfree + rng.choice([0, 1, 2]),
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }


def reservation(rng, pools):
    return rng.choice(pools.reservations)


def reservation_id(rng, pools):
    return reservation(rng, pools).reservation_id if rng.random() < 0.93 else rng.choice(["ZZZZZZ", "hathat", ""])


def owner(pools, res):
    return pools.db.users[res.user_id]


def new_flights(rng, pools, res):
    """The reservation's flights, some changed to another available flight or
    date, in the reservation's cabin or another."""
    flights = []
    for f in res.flights:
        r = rng.random()
        if r < 0.5:
            flights.append({"flight_number": f.flight_number, "date": f.date})
        elif r < 0.8:
            same_route = [x for x in pools.flights if x.origin == f.origin and x.destination == f.destination]
            x = rng.choice(same_route)
            date = rng.choice([d for d, s in x.dates.items() if s.status == "available"] or [f.date])
            flights.append({"flight_number": x.flight_number, "date": date})
        elif r < 0.9:
            x, date = pools.any_date(rng)
            flights.append({"flight_number": x.flight_number, "date": date})
        else:
            flights.append({"flight_number": "HAT000", "date": f.date})
    if rng.random() < 0.1 and flights:
        flights.pop()
    return flights


CALC = ["2 + 2", "(1", "1)", "01", "()", "1/0", "100 * 3 + 30", "(1200 - 150) / 2", "3.5 * 2", "abc", "",
        "2**1024", "10.0**400", "1e3", "7 // 2", "0.1 + 0.2", "1 2", "(1)(2)"]


def well_formed(rng, pools, tool):
    user = rng.choice(pools.users)
    if tool == "book_reservation":
        return booking(rng, pools)
    if tool == "calculate":
        return {"expression": rng.choice(CALC)}
    if tool in ("cancel_reservation", "get_reservation_details"):
        return {"reservation_id": reservation_id(rng, pools)}
    if tool == "get_user_details":
        return {"user_id": rng.choice([user.user_id, user.user_id, "nobody_123", user.user_id.upper()])}
    if tool == "list_all_airports":
        return {}
    if tool in ("search_direct_flight", "search_onestop_flight"):
        if rng.random() < 0.7:
            flight = rng.choice(pools.flights)
            origin = flight.origin
            destination = flight.destination if tool == "search_direct_flight" else rng.choice(AIRPORTS)
        else:
            origin, destination = rng.choice(AIRPORTS + ["XXX"]), rng.choice(AIRPORTS + ["xyz"])
        date = rng.choice(pools.dates + ["2024-06-01", "2024-5-1", "May 3"])
        return {"origin": origin, "destination": destination, "date": date}
    if tool == "send_certificate":
        return {"user_id": user.user_id if rng.random() < 0.9 else "nobody_123",
                "amount": rng.choice([50, 100, 150, 200, 0, 1000])}
    if tool == "transfer_to_human_agents":
        return {"summary": rng.choice(["The user wants to change a basic economy flight.", "", "x" * 40])}
    if tool == "get_flight_status":
        flight, date = pools.any_date(rng)
        return {"flight_number": flight.flight_number if rng.random() < 0.9 else "HAT999",
                "date": date if rng.random() < 0.9 else "2024-06-01"}
    res = reservation(rng, pools)
    rid = res.reservation_id if rng.random() < 0.95 else "ZZZZZZ"
    if tool == "update_reservation_baggages":
        total = rng.choice([0, 1, 2, 3, 4])
        return {"reservation_id": rid, "total_baggages": total,
                "nonfree_baggages": rng.choice([0, 0, 1, 2, 3, total]), "payment_id": pay_id(rng, owner(pools, res), pools)}
    if tool == "update_reservation_flights":
        return {"reservation_id": rid, "cabin": rng.choice(CABINS + [res.cabin, res.cabin]),
                "flights": new_flights(rng, pools, res), "payment_id": pay_id(rng, owner(pools, res), pools)}
    if tool == "update_reservation_passengers":
        n = len(res.passengers) + rng.choice([0, 0, 0, 0, 1, -1])
        return {"reservation_id": rid, "passengers": passengers(rng, owner(pools, res), max(n, 0))}
    raise ValueError(tool)


TOOLS = ["book_reservation", "calculate", "cancel_reservation", "get_reservation_details", "get_user_details",
         "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate",
         "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
         "update_reservation_passengers", "get_flight_status"]
WEIGHTS = [14, 3, 5, 3, 3, 1, 5, 4, 4, 1, 9, 12, 6, 3]
WRONG = [5, None, True, 1.5, ["x"], {"a": 1}, "", "nonexistent", "2", 2.0]
WRONG_LISTS = ["", "abc", [5], [None], [], ["a"], {"a": 1}, [{"flight_number": 5, "date": "2024-05-01"}],
               [{"first_name": "A"}], [{"payment_id": "x", "amount": 1.5}], [{"payment_id": 1, "amount": "2"}]]


def corpus(rng, pools):
    calls = []
    for _ in range(560):
        tool = rng.choices(TOOLS, WEIGHTS)[0]
        calls.append(("well_formed", tool, well_formed(rng, pools, tool)))
    for _ in range(60):  # extra arguments
        tool = rng.choice(TOOLS)
        args = well_formed(rng, pools, tool)
        args[rng.choice(["confirm", "user_id", "reservation_id", "note", "thought"])] = rng.choice(["x", True, 1])
        calls.append(("extra", tool, args))
    for _ in range(60):  # missing arguments
        tool = rng.choice(TOOLS)
        args = well_formed(rng, pools, tool)
        keys = list(args)
        for key in rng.sample(keys, rng.randint(1, len(keys)) if keys else 0):
            del args[key]
        calls.append(("missing", tool, args))
    for name in ["think", "get_reservation", "cancel_order", "", "Calculate", "book_flight"]:
        calls.append(("unknown_tool", name, {}))
        calls.append(("unknown_tool", name, {"thought": "x"}))
    for _ in range(160):  # one argument of another type
        tool = rng.choice([t for t in TOOLS if t != "list_all_airports"])
        args = well_formed(rng, pools, tool)
        key = rng.choice(list(args))
        if key in ("flights", "passengers", "payment_methods") and rng.random() < 0.6:
            args[key] = rng.choice(WRONG_LISTS)
        else:
            args[key] = rng.choice(WRONG)
        calls.append(("wrong_type", tool, args))
    return calls


def touched(db, args):
    """Copies of the records a call can change, to put back after it (and
    the new records' ids, to remove): its reservation and the reservation's
    user, its user, the flights it names."""
    keep, new = {}, []
    rid, uid = args.get("reservation_id"), args.get("user_id")
    if isinstance(rid, str) and rid in db.reservations:
        keep[("reservations", rid)] = copy.deepcopy(db.reservations[rid])
        owner_id = db.reservations[rid].user_id
        keep[("users", owner_id)] = copy.deepcopy(db.users[owner_id])
    if isinstance(uid, str) and uid in db.users:
        keep[("users", uid)] = copy.deepcopy(db.users[uid])
    flights = args.get("flights")
    if isinstance(flights, list):
        for f in flights:
            number = f.get("flight_number") if isinstance(f, dict) else None
            if isinstance(number, str) and number in db.flights:
                keep[("flights", number)] = copy.deepcopy(db.flights[number])
    for new_id in ["HATHAT", "HATHAU", "HATHAV"]:
        if new_id not in db.reservations:
            new.append(new_id)
    return keep, new


def record(src, data):
    db, env, Environment = load(src, data)
    e = env()
    base = e.get_db_hash()
    rng = random.Random(20261203)
    pools = Pools(db)
    for n, (kind, tool, args) in enumerate(corpus(rng, pools)):
        live = e.tools.db
        keep, new = touched(live, args)
        error, content, canonical = answer(e, Environment, tool, json.loads(json.dumps(args)))
        write = tool in e.tools.tools and e.tools.tool_type(tool).value == "write"
        after = e.get_db_hash() if write or n % 25 == 0 else base
        for (table, key), rec in keep.items():
            getattr(live, table)[key] = rec
        for new_id in new:
            live.reservations.pop(new_id, None)
        if after != base and e.get_db_hash() != base:
            sys.exit(f"call {n} changed records it was not expected to: {tool} {args}")
        line = {"kind": kind, "tool": tool, "args": args, "error": error, "sha256": sha(canonical)}
        if len(content) <= 400:
            line["text"] = content
        if after != base:
            line["db"] = after
        print(json.dumps(line, sort_keys=True), flush=True)
