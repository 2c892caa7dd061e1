"""Observations as text an LLM can read, and tool lists in function-calling shapes."""

from __future__ import annotations

import json
from typing import Any, Dict, List


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.3f}s"


def render(observation: Dict[str, Any]) -> str:
    """The observation (the external protocol's, ``docs/protocol.md``) as text.

    ASCII only (anything else is escaped), one event per observation; the first
    observation also lists the tools by name.
    """
    now = observation.get("now_ms", 0)
    event = observation.get("event", {})
    kind = event.get("kind")
    head = f"[t={_seconds(now)}] "
    if kind == "user_message":
        text = head + "User: " + str(event.get("text", ""))
        content = event.get("content")
        if content:
            text += "\n(structured: " + _compact(content) + ")"
    elif kind == "tool_result":
        call = event.get("call", {})
        called = f"{call.get('tool')}({_compact(call.get('args', {}))})"
        latency = f" after {event.get('latency_ms', 0)} ms"
        if event.get("ok"):
            text = head + f"Tool {called} returned{latency}: " + _compact(event.get("body"))
            if event.get("cache_age_ms") is not None:
                text += f" (from a cache, {event['cache_age_ms']} ms old)"
        else:
            error = event.get("error", {})
            kind_ = error.get("type")
            if kind_ == "http":
                text = head + f"Tool {called} failed{latency}: HTTP {error.get('status')} {error.get('message', '')}"
                if error.get("retry_after_ms") is not None:
                    text += f" (retry after {error['retry_after_ms']} ms)"
            elif kind_ == "timeout":
                text = head + f"Tool {called} timed out{latency} (a write may have been applied)"
            else:
                text = head + f"Tool {called} answered something unparseable{latency}: " + str(error.get("text", ""))
    elif kind == "blocked":
        call = event.get("call", {})
        text = head + (
            f"The {event.get('layer')} layer blocked {call.get('tool')}({_compact(call.get('args', {}))}): "
            + str(event.get("reason", ""))
        )
    elif kind == "wake":
        text = head + "Woke up (the timer fired)."
    else:
        text = head + _compact(event)
    if "tools" in observation:
        names = ", ".join(t["name"] for t in observation["tools"])
        text = f"Tools: {names}.\n" + text
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _openai(tool: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["parameters"],
        },
    }


def _anthropic(tool: Dict[str, Any]) -> Dict[str, Any]:
    return {"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}


class Tools:
    """A scenario's tools in three shapes.

    - ``agentsim``: the external protocol's tool list (name, description, kind,
      parameters, response_fields);
    - ``openai``: ``[{"type": "function", "function": {...}}]``, the ``tools``
      argument of OpenAI's chat completions;
    - ``anthropic``: ``[{"name", "description", "input_schema"}]``, the ``tools``
      argument of Anthropic's messages.
    """

    def __init__(self, tool_list: List[Dict[str, Any]]):
        self.agentsim = tool_list
        self.openai = [_openai(t) for t in tool_list]
        self.anthropic = [_anthropic(t) for t in tool_list]

    @property
    def names(self) -> List[str]:
        return [t["name"] for t in self.agentsim]

    def __len__(self) -> int:
        return len(self.agentsim)

    def __iter__(self):
        return iter(self.agentsim)

    def __repr__(self) -> str:
        return f"Tools({self.names})"


def tools(scenario: str = "support_desk") -> Tools:
    """The tools of a scenario (a built-in name or a file)."""
    from ._native import World

    return Tools(json.loads(World(scenario).tools_json()))


def call(tool: str, arguments: Any = None, idempotency_key: str | None = None) -> Dict[str, Any]:
    """The action calling ``tool``; ``arguments`` may be a dict or the JSON text an
    LLM's tool call carries."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"arguments: not JSON: {e}") from None
    action: Dict[str, Any] = {"action": "call", "tool": tool, "args": arguments or {}}
    if idempotency_key is not None:
        action["idempotency_key"] = idempotency_key
    return action
