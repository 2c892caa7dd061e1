"""``agentsim.Env``: the Gymnasium API over any agentsim scenario.

The engine runs its loop on a thread of its own with the MCP server's bridge as
the planner: each ``step`` hands the action to that thread and blocks (without
the GIL) until the next observation, so the world, the faults and the budgets are
exactly those of ``agentsim run`` for the seed.
"""

from __future__ import annotations

import json
import string
from typing import Any, Dict, List, Optional, Tuple

from . import _native
from .errors import EpisodeEnded, ResetNeeded
from .observation import Tools, render

try:  # Gymnasium is optional: without it Env keeps the same API.
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - exercised only without gymnasium
    _gym = None
    _spaces = None

#: The characters an observation's text and JSON are made of (ASCII, escaped).
CHARSET = string.printable
#: The longest observation text (characters).
TEXT_CHARS_MAX = 1 << 22
#: Outcomes that end an episode by a bound rather than by the agent: truncated.
TRUNCATING = ("horizon", "budget_exhausted")


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


#: The registered ids, one per built-in world: ``agentsim/SupportDesk-v0``, ...
ENV_IDS = {f"agentsim/{_camel(name)}-v0": name for name in _native.builtin_scenarios()}

_Base = _gym.Env if _gym is not None else object
_SpaceBase = _spaces.Space if _spaces is not None else object


class ActionSpace(_SpaceBase):
    """The protocol's actions as dicts: ``{"action": "call", "tool": ..., "args":
    {...}}``, ``{"action": "sleep", "until_ms": N}``, ``{"action": "idle"}``,
    ``{"action": "finish", "outcome": "done"}``. ``sample`` draws a call of a random
    tool with arguments of the declared types (random values)."""

    def __init__(self, tool_list: List[Dict[str, Any]], seed: Optional[int] = None):
        self._tools = tool_list
        if _spaces is not None:
            super().__init__(shape=None, dtype=None, seed=seed)

    def _value(self, schema: Dict[str, Any]) -> Any:
        kind = schema.get("type")
        rng = self.np_random
        if kind == "integer":
            return int(rng.integers(0, 10_000))
        if kind == "number":
            return float(rng.integers(0, 10_000)) / 100
        if kind == "boolean":
            return bool(rng.integers(0, 2))
        if kind == "array":
            return []
        if kind == "object":
            return {}
        if "enum" in schema:
            return schema["enum"][int(rng.integers(0, len(schema["enum"])))]
        return "".join(string.ascii_uppercase[int(i)] for i in rng.integers(0, 26, size=4))

    def sample(self, mask: Any = None, probability: Any = None) -> Dict[str, Any]:
        tool = self._tools[int(self.np_random.integers(0, len(self._tools)))]
        params = tool["parameters"]
        args = {name: self._value(params["properties"][name]) for name in params.get("required", [])}
        return {"action": "call", "tool": tool["name"], "args": args}

    def contains(self, x: Any) -> bool:
        return isinstance(x, dict) and isinstance(x.get("action"), str)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"ActionSpace({[t['name'] for t in self._tools]})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ActionSpace) and other._tools == self._tools


def _observation_space():
    if _spaces is None:
        return None
    text = _spaces.Text(max_length=TEXT_CHARS_MAX, min_length=0, charset=CHARSET)
    kinds = _spaces.Text(max_length=32, min_length=0, charset=CHARSET)
    return _spaces.Dict({"kind": kinds, "text": text, "json": text})


#: The deepest action: objects and arrays nested at most this many levels, the
#: action itself the first (the protocol's ``DECISION_DEPTH_MAX``, which the
#: engine checks again with the field's path). Checked here first, without
#: recursion: ``json.dumps`` and ``json.loads`` of a deeper value raise
#: RecursionError, which is no ValueError and would end a whole ``evaluate``
#: instead of the one episode.
ACTION_DEPTH_MAX = 16


def _nested_within(value: Any, depth_max: int) -> bool:
    """Whether ``value`` nests at most ``depth_max`` levels of dicts and lists.
    Iterative, and bounded on a value that contains itself (its depth grows)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, (list, tuple)):
            children = list(item)
        else:
            continue
        if depth > depth_max:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def _too_deep() -> ValueError:
    return ValueError(f"action: nested too deeply (at most {ACTION_DEPTH_MAX} levels of objects and arrays)")


def _as_action(action: Any) -> str:
    """An action as JSON text, or ValueError naming what is wrong (an action
    nested too deeply included: the episode ends as agent_error, not the run)."""
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except json.JSONDecodeError as e:
            raise ValueError(f"action: not JSON: {e}") from None
        except RecursionError:
            raise _too_deep() from None
    if not isinstance(action, dict):
        raise ValueError(f"action: expected a dict like {{'action': 'call', 'tool': ...}}, found {type(action).__name__}")
    if not _nested_within(action, ACTION_DEPTH_MAX):
        raise _too_deep()
    try:
        return json.dumps(action, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"action: not JSON-serialisable: {e}") from None
    except RecursionError:
        raise _too_deep() from None


class Env(_Base):
    """An agentsim scenario as a Gymnasium environment.

    ``Env(scenario="support_desk", fault_scale=1.0, layers=None, tasks=None)``:
    ``scenario`` is a built-in name or a scenario file (scripted worlds too);
    ``layers`` is None, a preset (``"resilient"``) or a stack file whose layers
    stand between the agent and the tools.

    Observations are dicts ``{"kind", "text", "json"}``: ``kind`` is the event
    (``user_message``, ``tool_result``, ``blocked``, ``wake``, or ``end``),
    ``text`` a rendering an LLM can read, ``json`` the external protocol's
    observation (``docs/protocol.md``); ``info["observation"]`` holds it parsed.
    Actions are the protocol's actions as dicts (see :class:`ActionSpace`).
    The reward is 1.0 when the world judges success at the end, else 0.0; the
    final ``info`` carries the outcome, verdict, milestone, minefields and metrics.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        scenario: str = "support_desk",
        fault_scale: float = 1.0,
        layers: Optional[str] = None,
        tasks: Optional[str] = None,
        render_mode: Optional[str] = None,
        record: bool = False,
    ):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode: expected None or 'ansi', found {render_mode!r}")
        self.world = _native.World(scenario, float(fault_scale), layers, tasks)
        self.scenario = scenario
        self.render_mode = render_mode
        self.record = record
        self.tools = Tools(json.loads(self.world.tools_json()))
        self.action_space = ActionSpace(self.tools.agentsim)
        self.observation_space = _observation_space()
        self._episode = None
        self._last: Optional[Dict[str, Any]] = None
        self.seed_used: Optional[int] = None

    def _observe(self) -> Tuple[Dict[str, str], Dict[str, Any]]:
        line = self._episode.observation()
        parsed = json.loads(line)
        text = render(parsed)
        ascii_json = json.dumps(parsed, sort_keys=True, ensure_ascii=True)
        obs = {"kind": parsed["event"]["kind"], "text": text, "json": ascii_json}
        self._last = obs
        return obs, {"observation": parsed, "now_ms": parsed["now_ms"], "seed": self._episode.seed}

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        """Starts an episode of ``seed`` (drawn from the environment's generator
        when None); returns ``(observation, info)``."""
        if _gym is not None:
            super().reset(seed=seed)
        if seed is None:
            if _gym is not None:
                seed = int(self.np_random.integers(0, 2**63 - 1))
            else:
                seed = 0 if self.seed_used is None else self.seed_used + 1
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, found {seed!r}")
        self.seed_used = seed
        self._episode = self.world.start(seed, self.record)
        return self._observe()

    def step(self, action: Any):
        """Carries out ``action``; returns ``(observation, reward, terminated,
        truncated, info)``."""
        if self._episode is None:
            raise ResetNeeded("action: call reset() before step()")
        if self._episode.done:
            raise EpisodeEnded("action: the episode has ended; call reset() to start another")
        self._episode.act(_as_action(action))
        if not self._episode.done:
            obs, info = self._observe()
            return obs, 0.0, False, False, info
        result = json.loads(self._episode.result_json())
        outcome = result["outcome"]
        text = (
            f"The episode ended: {outcome} ({result['end_reason']}). "
            f"Milestone: {result['milestone']}. Verdict: {result['verdict']}"
        ).encode("ascii", "backslashreplace").decode("ascii")
        obs = {"kind": "end", "text": text, "json": json.dumps(result, sort_keys=True, ensure_ascii=True)}
        self._last = obs
        reward = 1.0 if result["success"] else 0.0
        truncated = outcome in TRUNCATING
        info = dict(result)
        info["seed"] = self._episode.seed
        return obs, reward, not truncated, truncated, info

    def timeline(self) -> Optional[str]:
        """The ended episode's timeline (its events with ``record=True``)."""
        return None if self._episode is None else self._episode.timeline()

    def save_incident(self, path: str, label: str = "python:agentsim.Env") -> None:
        """Writes the ended episode (run with ``record=True``) as an incident that
        ``agentsim replay PATH`` replays without Python."""
        if self._episode is None or not self._episode.done:
            raise ValueError("incident: the episode has not ended")
        _write_atomic(path, self._episode.incident(self.world, label))

    def render(self):
        if self.render_mode == "ansi":
            return None if self._last is None else self._last["text"]
        return None

    def close(self):
        # Dropping the episode ends its run (the planner finishes).
        self._episode = None


def _write_atomic(path, text: str) -> None:
    """Writes ``text`` to ``path`` whole or not at all, as every agentsim
    output is written (the Rust library's writer)."""
    _native.write_atomic(path, text)


def _register():
    if _gym is None:
        return
    for env_id, name in ENV_IDS.items():
        if env_id not in _gym.registry:
            _gym.register(id=env_id, entry_point="agentsim.env:Env", kwargs={"scenario": name})


_register()
