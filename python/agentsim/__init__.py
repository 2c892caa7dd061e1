"""agentsim: a deterministic discrete-event simulator for testing LLM-agent stacks.

The engine runs in-process (the native module ``agentsim._native``, built from
the same Rust crates as the ``agentsim`` command). This package adds no
simulation logic of its own:

- :class:`Env` is the Gymnasium API over any scenario (built-in, file, scripted);
- :func:`evaluate` runs a Python agent over many seeds, with many episodes in
  flight, and writes the files of ``agentsim sweep``;
- :func:`tools` gives a scenario's tools in the OpenAI and Anthropic
  function-calling shapes;
- :class:`loop.ToolLoop` runs an agent that drives its own loop (LangGraph, the
  OpenAI Agents SDK) under :func:`evaluate`, each tool call an action.

The package is typed (``py.typed``, stubs for the native module):
:class:`Agent` is the protocol of an agent object, :data:`AgentLike` what
:func:`evaluate` accepts, :class:`EvaluateOptions` its keyword arguments.

Bad input (an unknown scenario, an action of the wrong shape, a step after the
end) raises :class:`ValueError` naming the field (``"action: field `tool`:
unknown tool `x`"``); :class:`EpisodeEnded` and :class:`ResetNeeded` are its
subclasses.
"""

from ._native import PROTOCOL, World, builtin_scenarios, presets
from .errors import EpisodeEnded, ResetNeeded
from .observation import render, tools
from .env import ENV_IDS, Env
from .evaluate import Agent, AgentLike, EvaluateOptions, Result, evaluate, evaluate_async
from . import loop

__all__ = [
    "Agent",
    "AgentLike",
    "ENV_IDS",
    "Env",
    "EpisodeEnded",
    "EvaluateOptions",
    "PROTOCOL",
    "ResetNeeded",
    "Result",
    "World",
    "builtin_scenarios",
    "evaluate",
    "evaluate_async",
    "loop",
    "presets",
    "render",
    "tools",
]
__version__ = "0.1.0"
