# A persistent agent (the example's policy) that misbehaves at the second
# observation of some episodes, chosen by their content (the first user
# message), never by timing: argv[1] is `crash` (the process exits with a
# traceback), `bad_action` (an unknown tool for that episode only), `silent`
# (no answer for that episode), `garbage` (a line that is not JSON),
# `oversized` (a line over 1 MiB), `hang` (the whole process sleeps forever: no
# episode on it gets an answer again) or `well` (no misbehaviour). argv[2], else
# PERSISTENT_IN_FLIGHT, sets its episodes in flight (default 4).
import json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "agents"))
from support_desk_agent import PROTOCOL, Agent  # noqa: E402

MODE = sys.argv[1]
in_flight = int(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("PERSISTENT_IN_FLIGHT", "4"))
print(json.dumps({"protocol": PROTOCOL, "type": "hello", "persistent": True, "episodes_in_flight": in_flight}), flush=True)
agents, marked = {}, set()
for line in sys.stdin:
    message = json.loads(line)
    episode = message.get("episode")
    if message.get("type") == "end":
        agents.pop(episode, None)
        continue
    if message["seq"] == 1:
        agents[episode] = Agent()
        if sum(map(ord, message["event"].get("text", ""))) % 5 == 0:
            marked.add(episode)
    if message["seq"] == 2 and episode in marked and MODE != "well":
        if MODE == "crash":
            raise RuntimeError("the persistent agent fell over")
        if MODE == "silent":
            continue
        if MODE == "hang":
            time.sleep(3600)
        if MODE in ("garbage", "oversized"):
            print("x" * ((1 << 20) + 10) if MODE == "oversized" else "this is not JSON", flush=True)
            continue
        action = {"action": "call", "tool": "no_such_tool"}
    else:
        action = agents[episode].step(message)
    action.update(protocol=PROTOCOL, episode=episode)
    print(json.dumps(action), flush=True)
