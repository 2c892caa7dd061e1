"""Agents that run their own loop (LangGraph, the OpenAI Agents SDK, ...) as
agents of :func:`agentsim.evaluate`.

A framework's agent is a loop: the model picks a tool, the framework calls it,
the model reads the result, until the model answers. :func:`evaluate` asks the
opposite question (observation in, action out). :class:`ToolLoop` joins the two:
it runs the framework's loop as a task beside the episode, and every tool the
framework calls becomes the episode's next action, its result the observation
that answers it. When the loop returns, the episode finishes.

    async def run(session):                     # one episode
        agent = Agent(name="support", model=model, tools=agents_sdk_tools(session))
        await Runner.run(agent, session.task, max_turns=50)

    agentsim.evaluate(ToolLoop(run), "support_desk", range(100), concurrency=8)

The tools answer as ``agentsim mcp`` does, so a model sees the same thing through
either: a success is the body as JSON; a failure is ``{"error": {"status",
"message", "retryable", "retry_after_ms", "explanation"}}`` (the explanation a
sentence saying what to do); after a successful message to the user, the
user's reply (or ``null``) is added as ``user_reply``. One more tool, ``wait``,
lets the model wait for the user or back off, on the virtual clock.

A framework agent that talks to its user in words runs as a conversation
(:func:`langgraph_chat`, :func:`agents_sdk_chat`): each run of the framework
ends in a final answer, which goes to the user as the protocol's ``say``; the
user's reply (its words) is appended to the same conversation (LangGraph's
messages, the Agents SDK's ``to_input_list()``) and the framework runs again.
The episode finishes (``done``) when the user takes leave (:func:`is_farewell`:
the customer's thanks after a closing), after ``turns_max`` answers, or when the
world ends it (the user leaves, a budget, the horizon).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Awaitable, Callable, Dict, List, Optional

from . import _native
from .observation import Tools, render

#: The tool through which an agent writes to the user (the MCP server's too).
MESSAGING_TOOL = "send_message"
#: How long, in virtual ms, a message waits for the user's reply (as ``agentsim mcp``).
REPLY_WAIT_MS = 60_000
#: The extra tool: wait for the user's next message or for a time.
WAIT_TOOL = {
    "name": "wait",
    "description": "Wait (simulated time) for the user's next message, at most `ms` milliseconds: to back off "
    "after a temporary error, or when the user has not answered yet. Returns the user's message, or null.",
    "kind": "read",
    "parameters": {
        "type": "object",
        "properties": {"ms": {"type": "integer", "description": "the longest wait, in milliseconds"}},
        "required": ["ms"],
    },
}
WAIT_MS_MAX = 600_000
#: The most final answers (messages to the user) of one conversation; at the cap
#: the episode finishes as ``done``.
TURNS_MAX = 50
#: Words that thank or take leave (a word starting with ``thank`` counts too).
FAREWELL_WORDS = frozenset({"cheers", "bye", "goodbye"})
#: Words that show a message still wants something (consent, a request, a doubt).
WANTING_WORDS = frozenset({
    "yes", "no", "not", "go", "ahead", "proceed", "instead", "refund", "want", "like", "could", "would", "can",
    "please", "which", "what", "sorry", "but", "wait", "still", "wrong",
})


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def explain(error: Dict[str, Any]) -> Dict[str, Any]:
    """The protocol's error (``docs/protocol.md``) as ``agentsim mcp`` words it:
    ``status``, ``message``, ``retryable``, ``retry_after_ms`` and a sentence
    (the wording is the Rust library's, shared with the MCP server)."""
    out = json.loads(_native.explain_error(json.dumps(error)))
    # The order a model reads the keys in: what happened, then what to do.
    order = ("status", "retry_after_ms", "message", "retryable", "body", "explanation")
    return {key: out[key] for key in order if key in out}


def result_of(event: Dict[str, Any]) -> Dict[str, Any]:
    """A tool's answer (a ``tool_result`` or ``blocked`` event) as the model reads it."""
    if event.get("kind") == "blocked":
        return {
            "error": {
                "status": None,
                "message": str(event.get("reason", "")),
                "retryable": False,
                "retry_after_ms": None,
                "explanation": f"the {event.get('layer')} layer refused the call before it reached the tool: "
                f"{event.get('reason', '')}",
            }
        }
    if event.get("kind") != "tool_result":
        return {"event": event}
    if not event.get("ok"):
        return {"error": explain(event.get("error", {}))}
    body = event.get("body")
    result = dict(body) if isinstance(body, dict) else {"result": body}
    if event.get("cache_age_ms") is not None:
        result["cache_age_ms"] = event["cache_age_ms"]
    return result


def is_farewell(text: str) -> bool:
    """Whether the user's words take leave: they thank (or say goodbye) and want
    nothing more: no question mark, no digit (an id, an amount), none of
    :data:`WANTING_WORDS`. ``"Thanks, that's all I needed."`` is one; ``"Yes,
    please go ahead. Thank you!"`` and ``"Thanks. The order is A1002."`` are not.
    """
    if "?" in text or any(c.isdigit() for c in text):
        return False
    words = re.findall(r"[a-z']+", text.lower())
    thanks = any(w.startswith("thank") or w in FAREWELL_WORDS for w in words)
    return thanks and not any(w in WANTING_WORDS for w in words)


def final_text(content: Any) -> str:
    """A model's final answer as text: a string, or the text parts of a list of
    content blocks (``{"type": "text", "text": ...}``), one a line."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c if isinstance(c, str) else c.get("text", "") for c in content if isinstance(c, (str, dict))]
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def _reply_of(event: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if event.get("kind") == "user_message":
        return {"text": event.get("text", ""), "content": event.get("content")}
    return None


class Session:
    """One episode as a framework's agent sees it.

    - ``task``: the opening observation as text (the user's first message);
    - ``tools``: the scenario's tools plus ``wait`` (:class:`agentsim.observation.Tools`:
      ``.openai``, ``.anthropic``, ``.agentsim``);
    - ``opening``: the user's first message, its words only (no structured part);
    - ``tools``: the scenario's tools plus ``wait`` (:class:`agentsim.observation.Tools`:
      ``.openai``, ``.anthropic``, ``.agentsim``);
    - ``await call(name, arguments)``: the tool's answer as JSON text;
    - ``await say(text)``: tells the user ``text`` in words, returns its reply's words;
    - ``now_ms``: the virtual time of the last observation.
    """

    def __init__(self, first: Dict[str, Any], loop: "ToolLoop"):
        self._loop = loop
        self.now_ms = first.get("now_ms", 0)
        self.task = render({k: v for k, v in first.items() if k != "tools"})
        event = first.get("event", {})
        self.opening = str(event.get("text", "")) if event.get("kind") == "user_message" else ""
        self.tools = Tools(list(first.get("tools", [])) + [WAIT_TOOL])
        self.calls = 0

    async def _act(self, action: Dict[str, Any]) -> Dict[str, Any]:
        observation = await self._loop._exchange(action)
        self.now_ms = observation.get("now_ms", self.now_ms)
        return observation["event"]

    async def say(self, text: str) -> Optional[str]:
        """Tells the user ``text`` (the protocol's ``say``) and waits for the
        answer: the user's words, or None when what came was not a message."""
        event = await self._act({"action": "say", "text": str(text)})
        return str(event.get("text", "")) if event.get("kind") == "user_message" else None

    async def call(self, name: str, arguments: Any = None) -> str:
        """Calls tool ``name`` (``arguments``: a dict or JSON text); returns its
        answer as JSON text (``wait`` included)."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as e:
                return _dumps({"error": {"status": 400, "message": f"arguments are not JSON: {e}",
                                         "retryable": False, "explanation": "send the arguments as a JSON object"}})
        arguments = arguments or {}
        self.calls += 1
        if name == WAIT_TOOL["name"]:
            ms = arguments.get("ms")
            if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
                return _dumps({"error": {"status": 400, "message": "`ms` must be a non-negative integer",
                                         "retryable": False, "explanation": "call wait with {\"ms\": 5000}"}})
            event = await self._act({"action": "idle", "wake_at_ms": self.now_ms + min(ms, WAIT_MS_MAX)})
            return _dumps({"user_reply": _reply_of(event), "now_ms": self.now_ms})
        event = await self._act({"action": "call", "tool": name, "args": arguments})
        result = result_of(event)
        if name == self._loop.messaging_tool and event.get("kind") == "tool_result" and event.get("ok"):
            # As `agentsim mcp`: a message waits for the user's reply, which comes with it.
            reply = await self._act({"action": "idle", "wake_at_ms": self.now_ms + self._loop.reply_wait_ms})
            result["user_reply"] = _reply_of(reply)
        return _dumps(result)


class ToolLoop:
    """An agent for :func:`agentsim.evaluate` made of ``run(session)``, an async
    function that runs a framework's agent over ``session`` (its task and
    tools) and returns when the agent is done; the episode then finishes
    (``done``). An exception in ``run`` ends the episode as ``agent_error``.
    Each episode gets a fresh copy (``evaluate`` copies an object with ``act``)."""

    def __init__(
        self,
        run: Callable[[Session], Awaitable[Any]],
        messaging_tool: str = MESSAGING_TOOL,
        reply_wait_ms: int = REPLY_WAIT_MS,
    ):
        self.run = run
        self.messaging_tool = messaging_tool
        self.reply_wait_ms = reply_wait_ms
        self.reset()

    def reset(self) -> None:
        self._task: Optional[asyncio.Task] = None
        self._actions: Optional[asyncio.Queue] = None
        self._observations: Optional[asyncio.Queue] = None
        self.session: Optional[Session] = None

    def __deepcopy__(self, memo):
        return ToolLoop(self.run, self.messaging_tool, self.reply_wait_ms)

    async def _exchange(self, action: Dict[str, Any]) -> Dict[str, Any]:
        await self._actions.put(action)
        return await self._observations.get()

    async def _drive(self) -> None:
        try:
            await self.run(self.session)
            await self._actions.put({"action": "finish", "outcome": "done"})
        except BaseException as e:  # handed to act(), which raises it in the episode
            await self._actions.put(e)

    async def act(self, observation: Dict[str, Any]) -> Dict[str, Any]:
        if self._task is None:
            self._actions, self._observations = asyncio.Queue(), asyncio.Queue()
            self.session = Session(observation, self)
            self._task = asyncio.ensure_future(self._drive())
        else:
            await self._observations.put(observation)
        action = await self._actions.get()
        if isinstance(action, BaseException):
            raise action
        return action


def agents_sdk_tools(session: Session) -> List[Any]:
    """The session's tools as OpenAI Agents SDK ``FunctionTool``s."""
    from agents import FunctionTool

    def tool(spec: Dict[str, Any]) -> Any:
        name = spec["name"]

        async def invoke(_context: Any, arguments: str) -> str:
            return await session.call(name, arguments)

        return FunctionTool(
            name=spec["name"],
            description=spec["description"],
            params_json_schema=spec["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    return [tool(spec) for spec in session.tools.agentsim]


def langchain_tools(session: Session) -> List[Any]:
    """The session's tools as LangChain ``StructuredTool``s (LangGraph, ``create_agent``)."""
    from langchain_core.tools import StructuredTool

    def tool(spec: Dict[str, Any]) -> Any:
        name = spec["name"]

        async def invoke(**arguments: Any) -> str:
            return await session.call(name, arguments)

        return StructuredTool(
            name=name,
            description=spec["description"],
            args_schema=spec["parameters"],
            coroutine=invoke,
        )

    return [tool(spec) for spec in session.tools.agentsim]


async def converse(session: Session, turn: Callable[[Optional[str]], Awaitable[str]],
                   farewell: Callable[[str], bool] = is_farewell, turns_max: int = TURNS_MAX) -> None:
    """The conversation of one episode: ``await turn(reply)`` runs the framework
    on the user's latest words (None for the first turn, whose words are
    ``session.opening``) and returns its final answer, which goes to the user;
    ends when the user takes leave (``farewell``), sends no message, or after
    ``turns_max`` answers."""
    reply: Optional[str] = None
    for _ in range(turns_max):
        reply = await session.say(await turn(reply))
        if reply is None or farewell(reply):
            return


def langgraph_chat(build: Callable[[Session], Any], config: Optional[Dict[str, Any]] = None,
                   farewell: Callable[[str], bool] = is_farewell, turns_max: int = TURNS_MAX) -> ToolLoop:
    """A LangGraph agent (``build(session)`` returns the compiled graph, e.g.
    ``create_agent(model, langchain_tools(session))``) as a conversation with the
    user: each ``ainvoke`` ends in a final answer said to the user, whose reply
    is appended as a user message to the same ``messages``, which the next
    ``ainvoke`` gets whole (no checkpointer needed). ``config`` is ainvoke's
    (default ``{"recursion_limit": 100}``)."""

    async def run(session: Session) -> None:
        graph = build(session)
        state: Dict[str, Any] = {"messages": [{"role": "user", "content": session.opening}]}

        async def turn(reply: Optional[str]) -> str:
            nonlocal state
            if reply is not None:
                state = {**state, "messages": list(state["messages"]) + [{"role": "user", "content": reply}]}
            state = await graph.ainvoke(state, config or {"recursion_limit": 100})
            return final_text(state["messages"][-1].content)

        await converse(session, turn, farewell, turns_max)

    return ToolLoop(run)


def agents_sdk_chat(build: Callable[[Session], Any], max_turns: int = 50,
                    farewell: Callable[[str], bool] = is_farewell, turns_max: int = TURNS_MAX) -> ToolLoop:
    """An OpenAI Agents SDK agent (``build(session)`` returns the ``Agent``, e.g.
    with ``tools=agents_sdk_tools(session)``) as a conversation with the user:
    each ``Runner.run`` (at most ``max_turns`` model turns) ends in a final
    output said to the user; the next run's input is the previous run's
    ``to_input_list()`` plus the user's reply."""

    async def run(session: Session) -> None:
        from agents import Runner

        agent = build(session)
        conversation: Any = session.opening

        async def turn(reply: Optional[str]) -> str:
            nonlocal conversation
            if reply is not None:
                conversation = conversation.to_input_list() + [{"role": "user", "content": reply}]
            conversation = await Runner.run(agent, conversation, max_turns=max_turns)
            return final_text(conversation.final_output)

        await converse(session, turn, farewell, turns_max)

    return ToolLoop(run)
