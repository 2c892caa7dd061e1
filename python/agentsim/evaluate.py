"""``agentsim.evaluate``: a Python agent over many seeds, many episodes in flight.

Each episode is the engine's loop suspended at each decision (a coroutine in
the native module, on the calling thread). An ``async`` agent is called from an
asyncio event loop, so an agent waiting on an LLM keeps ``concurrency``
episodes in flight. A synchronous agent runs one episode after another on the
calling thread (no event loop, no thread: the fast path) until its calls are
seen to wait (:class:`_Pace`); then, with ``concurrency`` > 1, the remaining
episodes run on a pool of that many threads. Finished episodes are written in
seed order by the writer ``agentsim sweep`` uses: the files are byte-identical
for any concurrency when the agent is deterministic.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import json
import os
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as _wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, Protocol, Union

from . import _native
from .env import _as_action
from .observation import render


@dataclass
class Result:
    """What :func:`evaluate` returns: ``summary`` (summary.json as a dict: rates
    with Wilson intervals, percentiles, outcomes, pass^k with trials) and ``rows``
    (one dict per seed, the columns of trajectories.csv; ``pandas.DataFrame(rows)``
    loads them)."""

    summary: Dict[str, Any]
    rows: List[Dict[str, Any]]
    out: Optional[Path] = None
    interrupted: bool = field(default=False)

    @property
    def completion(self) -> float:
        return self.summary["completion"]["rate"]


#: An observation: the protocol's dict (docs/protocol.md) plus its ``text``.
Observation = Dict[str, Any]
#: An action: the protocol's dict (``{"action": "call", ...}``, ``say``, ...).
Action = Dict[str, Any]


class Agent(Protocol):
    """An agent object: ``act`` maps an observation to an action (or an
    awaitable of one); ``reset``, when it has one, is called before each episode."""

    def act(self, observation: Observation) -> Union[Action, Awaitable[Action]]: ...


#: What :func:`evaluate` runs: a function or ``async`` function from an
#: observation to an action, an :class:`Agent` object (copied for each episode
#: unless ``shared=True``), or a class (instantiated for each episode).
AgentLike = Union[Callable[[Observation], Union[Action, Awaitable[Action]]], Agent, type]


@dataclass(frozen=True)
class EvaluateOptions:
    """The keyword arguments of :func:`evaluate` and :func:`evaluate_async`,
    written once."""

    #: Episodes in flight: for an ``async`` agent, or a synchronous one whose
    #: calls wait (a synchronous agent that does not wait runs on the calling
    #: thread, its fastest).
    concurrency: int = 1
    #: A preset or stack file whose layers wrap the agent's calls.
    layers: Optional[str] = None
    #: A folder for trajectories.csv, summary.json, run.json, failures/.
    out: Optional[Union[str, Path]] = None
    #: Multiplies every drawn fault's probability (0: no faults).
    fault_scale: float = 1.0
    #: In a world with named tasks: ``"all"`` or ids separated by commas.
    tasks: Optional[str] = None
    #: Incidents kept per failure mode.
    failures: int = 3
    #: Continue an interrupted ``out``.
    resume: bool = False
    #: The agent's name in the files (default: its qualified name).
    label: Optional[str] = None
    #: One agent object for every episode instead of a copy each.
    shared: bool = False
    #: Every episode as an incident under ``out/episodes/``, each replayable by
    #: ``agentsim replay`` without Python.
    record_all: bool = False
    #: Attempts per seed, for pass^k (an agent given by name only).
    trials: int = 1
    #: Who speaks for the user: ``"rules"`` (the world's) or ``"llm:MODEL"``
    #: (an agent given by name only; docs/llm.md).
    user: Optional[str] = None
    #: A model's endpoint, up to ``/chat/completions`` (default
    #: ``$OPENAI_BASE_URL``, else https://api.openai.com/v1).
    llm_base_url: Optional[str] = None
    #: The environment variable holding the API key (default ``OPENAI_API_KEY``).
    llm_api_key_env: Optional[str] = None
    #: The cassette folder of the model's answers.
    cassette: Optional[Union[str, Path]] = None
    #: ``"record"``, ``"replay"`` or ``"record-missing"`` (the default).
    cassette_mode: Optional[str] = None

    @classmethod
    def of(cls, options: Dict[str, Any]) -> "EvaluateOptions":
        """The options from keyword arguments; an unknown one is a ``TypeError``
        naming it, as a function's signature would."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"evaluate() got an unexpected keyword argument {unknown[0]!r}")
        return cls(**options)


def _label(agent: Any) -> str:
    name = getattr(agent, "__qualname__", None) or type(agent).__qualname__
    module = getattr(agent, "__module__", None) or type(agent).__module__
    return f"python:{module}.{name}"


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE) or any(
        part in filename for part in ("concurrent/futures", "asyncio", "threading.py")
    )


def _diagnostic(e: BaseException) -> str:
    """The agent's traceback: its own frames only (not how agentsim called it,
    which depends on the concurrency), so that incidents are the same bytes for
    any concurrency. The last 4 KiB, like an external agent's stderr."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not _internal(f.filename)]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(e), e)
    return ("Traceback (most recent call last):\n" + "".join(lines))[-4096:]


class _Policy:
    """One episode's agent: ``act(observation) -> action`` (sync or async)."""

    def __init__(self, agent: Any, shared: bool):
        if inspect.isclass(agent):
            agent = agent()
        elif hasattr(agent, "act") and not shared:
            # Each episode gets its own copy of a stateful agent object.
            agent = copy.deepcopy(agent)
        self.agent = agent
        if hasattr(agent, "act"):
            self.fn = agent.act
        elif callable(agent):
            self.fn = agent
        else:
            raise ValueError("agent: expected a function, an async function, or an object with act()")
        if hasattr(agent, "reset"):
            agent.reset()
        self.is_async = inspect.iscoroutinefunction(self.fn)


class _Sessions:
    """The agents of one run: one :class:`_Policy` per session. A scenario of
    many sessions (docs/sessions.md) names each observation's ``session``;
    each session gets its own copy of a stateful agent object, made when its
    first observation comes. A run of one session has only session 0."""

    def __init__(self, agent: Any, shared: bool):
        self.agent, self.shared = agent, shared
        first = _Policy(agent, shared)
        self.policies: Dict[int, _Policy] = {0: first}
        self.is_async = first.is_async

    def fn(self, observation: Observation) -> Any:
        session = observation.get("session", 0)
        policy = self.policies.get(session)
        if policy is None:
            policy = self.policies[session] = _Policy(self.agent, self.shared)
        return policy.fn(observation)


def _observe(episode, tools: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The observation as a dict with its ``text``. The first one's ``tools`` is
    the world's tool list, decoded once and shared by every episode (read it,
    do not change it)."""
    observation = json.loads(episode.observation())
    if observation["seq"] == 1:
        observation["tools"] = tools
    observation["text"] = render(observation)
    return observation


def _failed(episode, e: Exception) -> None:
    """The agent's own failure is the episode's outcome (agent_error). The
    traceback is a diagnostic (like an external agent's stderr): kept in the
    events and incidents, never in the digest."""
    episode.fail(f"the agent raised {type(e).__name__}: {e}", _diagnostic(e))


def _act(episode, action: Any) -> None:
    try:
        episode.act(_as_action(action))
    except ValueError as e:
        # An action of the wrong shape ends the episode as agent_error, as a
        # protocol error does for an external agent.
        episode.fail(str(e))


async def _episode(world, tools, seed, record, agent, shared):
    """One episode of an ``async`` agent, on the event loop."""
    episode = world.start(seed, record, False, True)
    policy = _Sessions(agent, shared)
    while not episode.done:
        observation = _observe(episode, tools)
        try:
            action = policy.fn(observation)
            if inspect.isawaitable(action):
                action = await action
        except Exception as e:
            _failed(episode, e)
            break
        _act(episode, action)
    return episode


class _Pace:
    """Whether a synchronous agent waits (on a network, a model server), read
    from the wall clock: an agent that does not wait is fastest on the calling
    thread (a thread pool adds two thread handoffs to every decision, 3 to 4
    times the cost of a trivial agent's episode); one that waits gains from
    running ``concurrency`` episodes on threads. Only the scheduling depends on
    it, never the files (they are written in seed order).

    Every call is timed (``perf_counter``, a tenth of a microsecond). Once the
    calls take ``WAIT_S_MIN`` or more on average, ``CALLS_MIN`` more are timed
    with their CPU time too (``thread_time``, which costs more): if that much of
    them is waiting, the agent ``waits``; if not, it computes, and stays on the
    calling thread (threads would not help a Python agent that holds the GIL)."""

    #: Calls slower than this on average are slow (then: waiting or computing?).
    WAIT_S_MIN = 0.001
    #: How many calls each judgement reads.
    CALLS_MIN = 4

    def __init__(self, wall: Callable[[], float] = time.perf_counter, cpu: Callable[[], float] = time.thread_time):
        self.wall, self.cpu = wall, cpu
        self.calls = 0
        self.wall_s = 0.0
        self.sampled = 0
        self.waited_s = 0.0
        self.waits = False
        self.computes = False

    def call(self, fn: Callable[[Any], Any], observation: Any) -> Any:
        slow = self.calls >= self.CALLS_MIN and self.wall_s >= self.WAIT_S_MIN * self.calls
        cpu = self.cpu() if slow and not (self.waits or self.computes) else None
        wall = self.wall()
        try:
            return fn(observation)
        finally:
            wall = self.wall() - wall
            self.calls += 1
            self.wall_s += wall
            if cpu is not None:
                self.waited_s += wall - (self.cpu() - cpu)
                self.sampled += 1
                if self.sampled >= self.CALLS_MIN:
                    self.waits = self.waited_s >= self.WAIT_S_MIN * self.sampled
                    self.computes = not self.waits


def _run_sync(episode, policy: _Sessions, tools, pace: Optional[_Pace] = None):
    """Runs a plain function agent's episode to its end, without an event loop
    (the same steps as :func:`_episode`). With ``pace``, the calls are timed and
    the episode stops early, still open, once the agent is seen to wait: the
    caller hands it to a thread pool. Returns whether it ended."""
    # An agent that returns awaitables from a plain function gets one event
    # loop for the episode, made on its first awaitable (not one per step).
    loop: Optional[asyncio.AbstractEventLoop] = None
    try:
        while not episode.done:
            if pace is not None and pace.waits:
                return False
            observation = _observe(episode, tools)
            try:
                action = policy.fn(observation) if pace is None else pace.call(policy.fn, observation)
                if inspect.isawaitable(action):
                    loop = loop or asyncio.new_event_loop()
                    action = loop.run_until_complete(action)
            except Exception as e:
                _failed(episode, e)
                break
            _act(episode, action)
        return True
    finally:
        if loop is not None:
            loop.close()


def _episode_sync(world, tools, seed, record, agent, shared):
    """One episode of a plain function agent, from its start to its end."""
    episode = world.start(seed, record, False, True)
    _run_sync(episode, _Sessions(agent, shared), tools)
    return episode


def _finish_sync(episode, policy, tools):
    _run_sync(episode, policy, tools)
    return episode


def _pooled(concurrency: int, first, rest, add) -> None:
    """Episodes on ``concurrency`` threads, each a whole episode (its agent's
    calls wait with the GIL released, so the threads overlap): ``first`` (the
    open episode, its policy and the tools), then each of ``rest`` (functions
    that run one seed's episode); each is added on the calling thread as it ends."""
    pool = ThreadPoolExecutor(concurrency)
    running = set()
    try:
        if first is not None:
            running.add(pool.submit(_finish_sync, *first))
        for start in rest:
            running.add(pool.submit(start))
            if len(running) >= concurrency:
                finished, running = _wait_futures(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    add(future.result())
        while running:
            finished, running = _wait_futures(running, return_when=FIRST_COMPLETED)
            for future in finished:
                add(future.result())
    finally:
        # Interrupted: the episodes still running end on their own, unwritten.
        pool.shutdown(wait=False, cancel_futures=True)


async def evaluate_async(
    agent: AgentLike, scenario: str = "support_desk", seeds: Union[range, int] = range(100), **options: Any
) -> Result:
    """:func:`evaluate` as a coroutine, for code that already runs an event loop
    (a synchronous agent runs as :func:`evaluate` runs it, on a thread of the
    loop's default executor). ``options`` are :class:`EvaluateOptions`' fields."""
    opts = EvaluateOptions.of(options)
    if isinstance(agent, str):
        run = functools.partial(_evaluate_named, agent, scenario, seeds, opts)
        return await asyncio.get_running_loop().run_in_executor(None, run)
    _python_agent_only(opts)
    if not _Policy(agent, True).is_async:
        run = functools.partial(_evaluate_sync, agent, scenario, seeds, opts)
        return await asyncio.get_running_loop().run_in_executor(None, run)
    world, evaluation, seeds = _setup(agent, scenario, seeds, opts)
    add = _adder(world, evaluation, opts.out, opts.record_all, opts.label or _label(agent))
    record = opts.failures > 0 or opts.record_all
    tools = json.loads(world.tools_json())
    pending = iter(range(evaluation.next_seed, seeds.stop))
    interrupted = False
    try:
        running = set()
        for seed in pending:
            running.add(asyncio.ensure_future(_episode(world, tools, seed, record, agent, opts.shared)))
            if len(running) >= opts.concurrency:
                finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    add(task.result())
        while running:
            finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                add(task.result())
    except (KeyboardInterrupt, asyncio.CancelledError):
        interrupted = True
        raise
    finally:
        # Finished episodes stand (an interrupted run is marked partial and
        # `resume=True` continues it).
        result = _result(evaluation, opts.out, interrupted)
    return result


def _result(evaluation, out, interrupted: bool) -> Result:
    summary, rows = evaluation.finish()
    return Result(json.loads(summary), json.loads(rows), None if out is None else Path(out), interrupted)


def _adder(world, evaluation, out, record_all: bool, label: str):
    """Adds a finished episode; with ``record_all`` its incident goes to
    ``out/episodes/seedN.ron`` first."""
    if not record_all:
        return evaluation.add
    from .env import _write_atomic

    folder = Path(out) / "episodes"
    folder.mkdir(parents=True, exist_ok=True)

    def add(episode):
        _write_atomic(folder / f"seed{episode.seed}.ron", episode.incident(world, label))
        evaluation.add(episode)

    return add


def _setup(agent, scenario, seeds, opts: "EvaluateOptions"):
    """Checks the arguments (ValueError naming the field) and starts the evaluation."""
    if opts.record_all and opts.out is None:
        raise ValueError("record_all: needs `out`, the folder for episodes/")
    if isinstance(seeds, int):
        seeds = range(seeds)
    if not isinstance(seeds, range) or seeds.step != 1 or len(seeds) == 0:
        raise ValueError(f"seeds: expected a non-empty range with step 1 (like range(0, 100)), found {seeds!r}")
    if seeds.start < 0:
        raise ValueError(f"seeds: expected non-negative seeds, found {seeds!r}")
    if not isinstance(opts.concurrency, int) or opts.concurrency < 1:
        raise ValueError(f"concurrency: expected an integer >= 1, found {opts.concurrency!r}")
    if not isinstance(opts.failures, int) or opts.failures < 0:
        raise ValueError(f"failures: expected an integer >= 0, found {opts.failures!r}")
    world = _native.World(scenario, float(opts.fault_scale), opts.layers, opts.tasks)
    out = None if opts.out is None else str(opts.out)
    evaluation = _native.Evaluation(
        world, opts.label or _label(agent), seeds.start, seeds.stop, opts.failures, out, opts.resume
    )
    return world, evaluation, seeds


def evaluate(agent: AgentLike, scenario: str = "support_desk", seeds: Union[range, int] = range(100),
             **options: Any) -> Result:
    """Runs ``agent`` on ``scenario`` for every seed of ``seeds``.

    ``agent`` is a function or an ``async`` function from an observation (the
    protocol's dict plus ``text``) to an action dict, an object with ``act`` (and
    optionally ``reset``; copied for each episode unless ``shared=True``), or a
    class (instantiated for each episode): see :data:`AgentLike`. Keyword
    arguments are the fields of :class:`EvaluateOptions` (an unknown one is a
    ``TypeError`` naming it).
    Returns a :class:`Result`.
    """
    opts = EvaluateOptions.of(options)
    if isinstance(agent, str):
        return _evaluate_named(agent, scenario, seeds, opts)
    _python_agent_only(opts)
    if not _Policy(agent, True).is_async:
        return _evaluate_sync(agent, scenario, seeds, opts)
    coroutine = evaluate_async(agent, scenario, seeds, **dataclasses.asdict(opts))
    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:
        return asyncio.run(coroutine)
    # Called from a running loop (a notebook): run in a thread of its own.
    box: Dict[str, Any] = {}

    def run():
        try:
            box["result"] = asyncio.run(coroutine)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


_NAMED_ONLY = ("trials", "user", "llm_base_url", "llm_api_key_env", "cassette", "cassette_mode")


def _python_agent_only(opts: "EvaluateOptions") -> None:
    """Refuses the options of an agent given by name for a Python agent."""
    defaults = EvaluateOptions()
    for name in _NAMED_ONLY:
        if getattr(opts, name) != getattr(defaults, name):
            raise ValueError(f"{name}: only for an agent given by name (\"llm:MODEL\", a preset, a stack file)")


def _evaluate_named(agent: str, scenario: str, seeds: Union[range, int], opts: "EvaluateOptions") -> Result:
    """An agent given by name runs in Rust, as ``agentsim sweep`` runs it:
    ``"llm:MODEL"`` (a model behind an OpenAI-compatible endpoint, docs/llm.md),
    a preset or a stack file; ``concurrency`` episodes in flight (default: 64
    for a model asked live, else one per core). The GIL is released meanwhile."""
    if opts.record_all or opts.resume or opts.shared:
        raise ValueError("record_all, resume, shared: only for a Python agent")
    if isinstance(seeds, int):
        seeds = range(seeds)
    if not isinstance(seeds, range) or seeds.step != 1 or len(seeds) == 0 or seeds.start < 0:
        raise ValueError(f"seeds: expected a non-empty range of non-negative seeds with step 1, found {seeds!r}")
    if not isinstance(opts.concurrency, int) or opts.concurrency < 1:
        raise ValueError(f"concurrency: expected an integer >= 1, found {opts.concurrency!r}")
    if not isinstance(opts.trials, int) or not 1 <= opts.trials <= 64:
        raise ValueError(f"trials: expected an integer in 1..=64, found {opts.trials!r}")
    if opts.cassette_mode not in (None, "record", "replay", "record-missing"):
        raise ValueError(f"cassette_mode: expected record, replay or record-missing, found {opts.cassette_mode!r}")
    if opts.cassette_mode is not None and opts.cassette is None:
        raise ValueError("cassette_mode: needs cassette, the folder")
    out = None if opts.out is None else str(opts.out)
    summary, rows = _native.sweep(
        scenario, agent, seeds.start, seeds.stop, float(opts.fault_scale), opts.layers, opts.tasks, opts.trials,
        opts.failures, out, opts.user, opts.llm_base_url, opts.llm_api_key_env,
        None if opts.cassette is None else str(opts.cassette), opts.cassette_mode,
        # The default concurrency (1) leaves the choice to agentsim.
        opts.concurrency if opts.concurrency > 1 else None,
    )
    if rows is None:
        import csv

        with open(Path(out) / "trajectories.csv", newline="") as f:
            parsed = [dict(row) for row in csv.DictReader(f)]
    else:
        parsed = json.loads(rows)
    return Result(json.loads(summary), parsed, None if out is None else Path(out))


def _evaluate_sync(agent: AgentLike, scenario: str, seeds: Union[range, int], opts: "EvaluateOptions") -> Result:
    """A synchronous agent: one episode at a time on the calling thread, without
    an event loop, until the agent is seen to wait (:class:`_Pace`); then, with
    ``concurrency`` > 1, the rest on a thread pool (:func:`_pooled`). The same
    files as :func:`evaluate_async` either way."""
    world, evaluation, seeds = _setup(agent, scenario, seeds, opts)
    add = _adder(world, evaluation, opts.out, opts.record_all, opts.label or _label(agent))
    record = opts.failures > 0 or opts.record_all
    shared = opts.shared
    tools = json.loads(world.tools_json())
    pace = _Pace() if opts.concurrency > 1 else None
    pending = iter(range(evaluation.next_seed, seeds.stop))
    interrupted = False
    try:
        for seed in pending:
            episode = world.start(seed, record, False, True)
            policy = _Sessions(agent, shared)
            if not _run_sync(episode, policy, tools, pace):
                # The agent waits: this episode and the rest go to threads.
                rest = (functools.partial(_episode_sync, world, tools, s, record, agent, shared) for s in pending)
                _pooled(opts.concurrency, (episode, policy, tools), rest, add)
                break
            add(episode)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        result = _result(evaluation, opts.out, interrupted)
    return result
