"""Types of the native module (built from python/src/lib.rs): the engine's
worlds, episodes suspended at each decision, and the writer of a sweep's files.
Its users are the package's own modules; the public API is in ``agentsim``."""

import os
from typing import List, Optional, Tuple, Union

#: The external agent protocol's description (docs/protocol.md), as JSON text.
PROTOCOL: str

class World:
    """A prepared scenario: ``scenario`` is a built-in name or a scenario file;
    ``layers`` ``None``, a preset or a stack file (its layers only); ``tasks``
    ``None``, ``"all"`` or ids separated by commas (scripted worlds)."""

    def __init__(
        self, scenario: str, fault_scale: float = 1.0, layers: Optional[str] = None, tasks: Optional[str] = None
    ) -> None: ...
    @property
    def name(self) -> str: ...
    def tools_json(self) -> str:
        """The protocol's tool list, as JSON text."""
    def task_of(self, seed: int) -> Optional[str]:
        """The task seed ``seed`` runs, in a world with named tasks."""
    def start(self, seed: int, record: bool = False, tools: bool = True, sessions: bool = False) -> "Episode":
        """Starts the episode of ``seed``, suspended at its first decision.
        ``sessions=True`` accepts a scenario of many sessions (each observation
        names its ``session``)."""

class Episode:
    """One episode, suspended at each decision of its agent."""

    @property
    def seed(self) -> int: ...
    @property
    def done(self) -> bool: ...
    def observation(self) -> Optional[str]:
        """The protocol's observation waiting for an action (JSON text), or ``None`` at the end."""
    def check(self, action: str) -> None:
        """Raises ``ValueError`` naming the field if ``action`` (JSON text) is not a valid action."""
    def act(self, action: str) -> None:
        """Takes the action (JSON text) and runs the simulation to the next decision."""
    def fail(self, reason: str, detail: str = "") -> None:
        """Ends the episode as the agent's error (``agent_error``)."""
    def result_json(self) -> Optional[str]:
        """The finished trajectory as JSON text, or ``None`` before the end."""
    def incident(self, world: World, agent: str) -> Optional[str]:
        """The finished episode as an incident file (RON text), or ``None`` before the end."""
    def timeline(self) -> Optional[str]:
        """The finished episode's timeline, as ``agentsim run`` prints it."""

class Evaluation:
    """The writer of a sweep's files (trajectories.csv, summary.json, run.json,
    failures/) for the episodes of ``seed_start..seed_end``, added in any order
    and written in seed order."""

    def __init__(
        self,
        world: World,
        agent: str,
        seed_start: int,
        seed_end: int,
        failures: int = 3,
        out: Optional[str] = None,
        resume: bool = False,
    ) -> None: ...
    @property
    def next_seed(self) -> int: ...
    def add(self, episode: Episode) -> None:
        """Adds a finished episode (taking its trajectory)."""
    def finish(self) -> Tuple[str, str]:
        """(summary.json, the rows as a JSON list), as text."""

def sweep(
    scenario: str,
    agent: str,
    seed_start: int,
    seed_end: int,
    fault_scale: float = 1.0,
    layers: Optional[str] = None,
    tasks: Optional[str] = None,
    trials: int = 1,
    failures: int = 3,
    out: Optional[Union[str, os.PathLike[str]]] = None,
    user: Optional[str] = None,
    llm_base_url: Optional[str] = None,
    llm_api_key_env: Optional[str] = None,
    cassette: Optional[Union[str, os.PathLike[str]]] = None,
    cassette_mode: Optional[str] = None,
    in_flight: Optional[int] = None,
) -> Tuple[str, Optional[str]]:
    """A sweep whose agent runs in Rust (``llm:MODEL``, a preset, a stack
    file), as ``agentsim sweep`` runs it: ``(summary, rows)`` as JSON text
    (``rows`` is ``None`` with ``out``)."""
def builtin_scenarios() -> List[str]: ...
def presets() -> List[str]: ...
def explain_error(error: str) -> str: ...
def write_atomic(path: Union[str, os.PathLike[str]], text: str) -> None: ...
