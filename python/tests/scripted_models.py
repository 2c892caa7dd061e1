"""Deterministic stand-ins for an LLM, one per framework, so that the framework
recipes run in tests without a network or an API key.

Both wrap one policy, :func:`next_turn`: it reads the conversation as a model
would (the task's text, then each tool call with the JSON text it returned) and
picks the next tool call or the final answer. It replays that conversation
through the example agent (``examples/agents/support_desk_agent.py``), so the
decisions are a real support_desk policy's: look the order up, confirm with the
customer, refund, tell the customer, back off on temporary errors.

- :class:`ScriptedAgentsModel` is an OpenAI Agents SDK ``Model``;
- :class:`ScriptedChatModel` is a LangChain chat model (LangGraph,
  ``langchain.agents.create_agent``).

Each records the tool descriptions it was shown per turn (``shown``), which the
drift tests read.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

import support_desk_agent

#: (tool, arguments, result text) of each call so far.
Exchange = Tuple[str, Dict[str, Any], str]


#: Every way a support_desk customer opens (worlds/src/support_desk/world.rs,
#: ``start``), as what the words say: the item (``whole order`` for all of it)
#: and, unless the customer is vague, the order.
OPENINGS = {
    "item": r"Please refund the (?P<item>.+?) from order (?P<order_id>\w+)\.",
    "whole order": r"Please refund my (?P<item>whole order) (?P<order_id>\w+)\.",
    "vague": r"I want my money back for the (?P<item>.+?) I bought\.",
}


def opening_kind(task: str) -> str:
    """Which of :data:`OPENINGS` the task's text is; ValueError for a phrasing
    the scripted model does not know (it would misread the request silently)."""
    for kind, pattern in OPENINGS.items():
        if re.search(pattern, task):
            return kind
    raise ValueError(f"the scripted model does not know this opening (add it to OPENINGS): {task!r}")


def opening(task: str) -> Dict[str, Any]:
    """What the customer asks, from the task's text: its structured part when
    the text carries one (``agentsim.render``), else read from the words (as
    through MCP, whose prompt is the words only)."""
    if m := re.search(r"\(structured: (\{.*\})\)", task):
        return json.loads(m.group(1))
    content: Dict[str, Any] = re.search(OPENINGS[opening_kind(task)], task).groupdict()
    if m := re.search(r"\((C\d+)\)", task):
        content["customer_id"] = m.group(1)
    return content


def understand(text: str) -> Dict[str, Any]:
    """What the customer means by a reply, read from its words (as a model
    would, when the structured meaning is not given)."""
    content: Dict[str, Any] = {}
    if text.startswith("Yes"):
        content["confirm"] = True
    elif text.startswith("No"):
        content["confirm"] = False
    elif text.startswith("Actually"):
        content["confirm"], content["changed_mind"] = False, True
    if m := re.search(r"the (.+?) from order (\w+)", text):
        content["item"], content["order_id"] = m.group(1), m.group(2)
    return content


def _texts(content: Any) -> str:
    """A tool result's text parts (a string, or a list of content blocks), one a line."""
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content or [])


def _event(tool: str, args: Dict[str, Any], text: str) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """A tool's answer back as the protocol's event, and the user's reply in it:
    the first line is the result's JSON; through MCP, the reply is a second text
    (`The user replied: ...`)."""
    call = {"tool": tool, "args": args}
    first, _, rest = (text or "").partition("\n")
    try:
        result = json.loads(first)
    except json.JSONDecodeError:
        return {"kind": "tool_result", "call": call, "ok": False, "error": {"type": "unparseable", "status": 200}}, None
    if not isinstance(result, dict):
        return {"kind": "tool_result", "call": call, "ok": True, "body": result}, None
    reply = result.pop("user_reply", None)
    if m := re.search(r"The user replied: (.*)", rest):
        reply = {"text": m.group(1), "content": understand(m.group(1))}
    if "error" in result:
        error = dict(result["error"]) if isinstance(result["error"], dict) else {"status": 500}
        error.setdefault("type", "timeout" if error.get("status") == 504 else "http")
        return {"kind": "tool_result", "call": call, "ok": False, "error": error}, reply
    return {"kind": "tool_result", "call": call, "ok": True, "body": result}, reply


def next_turn(task: str, exchanges: List[Exchange], tools: Dict[str, str]) -> Tuple[str, Any]:
    """``("call", (tool, args))`` or ``("final", text)``: the next turn of a model
    that has read ``task``, the ``tools`` it is shown (name: description) and the
    ``exchanges`` so far. Without a ``wait`` tool (MCP), a backoff is skipped
    and waiting for the user ends the turn."""
    agent = support_desk_agent.Agent()
    can_wait = "wait" in tools
    action = agent.step({"now_ms": 0, "event": {"kind": "user_message", "content": opening(task)}})
    for tool, args, text in exchanges:
        if tool == "wait":
            reply = json.loads(text).get("user_reply")
            event = {"kind": "user_message", "content": reply.get("content") or {}} if reply else {"kind": "wake"}
            action = agent.step({"now_ms": 0, "event": event})
            continue
        event, reply = _event(tool, args, text)
        action = agent.step({"now_ms": 0, "event": event})
        if reply:
            action = agent.step({"now_ms": 0, "event": {"kind": "user_message", "content": reply.get("content") or {}}})
    if action["action"] == "sleep":
        if can_wait:
            return "call", ("wait", {"ms": action["until_ms"]})
        action = agent.decide()
    if action["action"] == "idle":
        if can_wait:
            return "call", ("wait", {"ms": 60_000})
        return "final", "Waiting for the customer, who has not answered."
    if action["action"] == "call":
        return "call", (action["tool"], action.get("args", {}))
    return "final", "Done: the customer's request is handled."


# ---- the OpenAI Agents SDK -----------------------------------------------------


def _agents_sdk_model_class():
    from agents import ModelResponse, Usage
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedAgentsModel(Model):
        """An Agents SDK ``Model`` that answers with :func:`next_turn`."""

        def __init__(self, policy=next_turn):
            self.policy = policy
            self.shown: List[Dict[str, str]] = []
            self.turns = 0

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                               tracing, **_):
            self.turns += 1
            shown = {t.name: getattr(t, "description", "") or "" for t in tools}
            self.shown.append(shown)
            items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            task, exchanges, calls = "", [], {}
            for item in items:
                item = item if isinstance(item, dict) else item.model_dump()
                kind = item.get("type")
                if item.get("role") == "user" and not task:
                    content = item.get("content")
                    task = content if isinstance(content, str) else " ".join(
                        c.get("text", "") for c in content if isinstance(c, dict))
                elif kind == "function_call":
                    calls[item["call_id"]] = (item["name"], json.loads(item.get("arguments") or "{}"))
                elif kind == "function_call_output":
                    name, args = calls[item["call_id"]]
                    exchanges.append((name, args, _texts(item.get("output"))))
            turn, value = self.policy(task, exchanges, shown)
            if turn == "call":
                name, args = value
                output = ResponseFunctionToolCall(type="function_call", call_id=f"call_{len(exchanges)}", name=name,
                                                  arguments=json.dumps(args), id=f"fc_{len(exchanges)}",
                                                  status="completed")
            else:
                output = ResponseOutputMessage(id="msg_final", role="assistant", status="completed", type="message",
                                               content=[ResponseOutputText(type="output_text", text=value,
                                                                           annotations=[])])
            return ModelResponse(output=[output], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the scripted model does not stream")

    return ScriptedAgentsModel


def ScriptedAgentsModel(policy=next_turn):  # noqa: N802 - a class, built once the SDK is importable
    return _agents_sdk_model_class()(policy)


# ---- LangChain / LangGraph -------------------------------------------------------


def _chat_model_class():
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):
        """A LangChain chat model that answers with :func:`next_turn`; ``bind_tools``
        keeps the tools it is given (their names and descriptions)."""

        policy: Any = next_turn
        tools: List[Any] = []
        shown: List[Dict[str, str]] = []

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kwargs):
            return self.model_copy(update={"tools": list(tools)})

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            shown = {t.name: t.description or "" for t in self.tools}
            self.shown.append(shown)
            task, exchanges, calls = "", [], {}
            for m in messages:
                if isinstance(m, HumanMessage) and not task:
                    task = m.content if isinstance(m.content, str) else str(m.content)
                elif isinstance(m, AIMessage):
                    for c in m.tool_calls:
                        calls[c["id"]] = (c["name"], c["args"])
                elif isinstance(m, ToolMessage):
                    name, args = calls[m.tool_call_id]
                    exchanges.append((name, args, _texts(m.content)))
            turn, value = self.policy(task, exchanges, shown)
            if turn == "call":
                name, args = value
                message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{len(exchanges)}",
                                                             "type": "tool_call"}])
            else:
                message = AIMessage(content=value)
            return ChatResult(generations=[ChatGeneration(message=message)])

    return ScriptedChatModel


def ScriptedChatModel(policy=next_turn):  # noqa: N802 - a class, built once LangChain is importable
    return _chat_model_class()(policy=policy, shown=[])
