"""Deterministic stand-ins for an LLM that talks to its customer in words.

Like :mod:`scripted_models`, one policy behind an Agents SDK ``Model`` and a
LangChain chat model, but it is the policy of ``examples/agents/text_agent.py``
and it reads only the TEXT of the conversation: the user's messages (the
human/user messages of the framework's history), the tool results' JSON text,
never a structured ``content``. Its final answer is what it says to the
customer (a question, a proposal, the closing): ``agentsim.loop.langgraph_chat``
and ``agents_sdk_chat`` say it and append the reply.

``text_turn`` replays the history through a fresh ``text_agent.Agent`` each
turn (a model rereads its context), so the decisions are that agent's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "agents"))
import text_agent  # noqa: E402

#: ("user", words) | ("call", tool, args, result text) | ("said", words), in order.
Entry = Tuple[Any, ...]


def _tool_event(tool: str, args: Dict[str, Any], text: str) -> Dict[str, Any]:
    """A tool's answer (the JSON text ``Session.call`` returns) as the protocol's event."""
    call = {"tool": tool, "args": args}
    try:
        result = json.loads(text)
    except json.JSONDecodeError:
        return {"kind": "tool_result", "call": call, "ok": False, "error": {"type": "unparseable", "status": 200}}
    if isinstance(result, dict) and isinstance(result.get("error"), dict):
        error = dict(result["error"])
        error.setdefault("type", "timeout" if error.get("status") == 504 else "http")
        return {"kind": "tool_result", "call": call, "ok": False, "error": error}
    return {"kind": "tool_result", "call": call, "ok": True, "body": result}


#: The MCP server's tool that writes to the user (docs/mcp.md).
SAY_TOOL = "say_to_user"


def text_turn(entries: List[Entry], tools: Dict[str, str]) -> Tuple[str, Any]:
    """``("call", (tool, args))`` or ``("final", words)``: the next turn of the
    text agent that has read ``entries``. Through ``agentsim mcp`` (a
    ``say_to_user`` tool and no ``wait``), what it says is that tool's call,
    whose result is the customer's reply; a backoff is skipped; its final
    answer ends the session."""
    agent = text_agent.Agent()
    action: Dict[str, Any] = {"action": "idle"}
    over_mcp = SAY_TOOL in tools and "wait" not in tools
    for entry in entries:
        if entry[0] == "call" and entry[1] == SAY_TOOL:
            entry = ("user", entry[3])
        if entry[0] == "user":
            action = agent.step({"now_ms": 0, "event": {"kind": "user_message", "text": entry[1]}})
        elif entry[0] == "call":
            _, tool, args, text = entry
            if tool == "wait":
                reply = json.loads(text).get("user_reply")
                event = {"kind": "user_message", "text": reply.get("text", "")} if reply else {"kind": "wake"}
            else:
                event = _tool_event(tool, args, text)
            action = agent.step({"now_ms": 0, "event": event})
        # ("said", words): the agent's own message, already in its state.
    if over_mcp and action["action"] == "sleep":
        action = agent.decide()
    kind = action["action"]
    if over_mcp and kind == "say":
        return "call", (SAY_TOOL, {"text": action["text"]})
    if over_mcp and kind == "idle":
        return "final", "Goodbye."
    if kind == "sleep":
        return "call", ("wait", {"ms": action["until_ms"]})
    if kind == "idle":
        return "call", ("wait", {"ms": 60_000})
    if kind == "call":
        return "call", (action["tool"], action.get("args", {}))
    if kind == "say":
        return "final", action["text"]
    return "final", "Goodbye."


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content or [])


# ---- the OpenAI Agents SDK -----------------------------------------------------


def _agents_sdk_class():
    from agents import ModelResponse, Usage
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class TextAgentsModel(Model):
        """An Agents SDK ``Model`` that answers with :func:`text_turn`."""

        def __init__(self):
            self.turns = 0

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                               tracing, **_):
            self.turns += 1
            items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            entries: List[Entry] = []
            calls: Dict[str, Tuple[str, Dict[str, Any]]] = {}
            for item in items:
                item = item if isinstance(item, dict) else item.model_dump()
                kind, role = item.get("type"), item.get("role")
                if role == "user":
                    entries.append(("user", _text(item.get("content"))))
                elif role == "assistant":
                    entries.append(("said", _text(item.get("content"))))
                elif kind == "function_call":
                    calls[item["call_id"]] = (item["name"], json.loads(item.get("arguments") or "{}"))
                elif kind == "function_call_output":
                    name, args = calls[item["call_id"]]
                    entries.append(("call", name, args, _text(item.get("output"))))
            turn, value = text_turn(entries, {t.name: "" for t in tools})
            n = len(entries)
            if turn == "call":
                name, args = value
                output = ResponseFunctionToolCall(type="function_call", call_id=f"call_{n}", name=name,
                                                  arguments=json.dumps(args), id=f"fc_{n}", status="completed")
            else:
                output = ResponseOutputMessage(id=f"msg_{n}", role="assistant", status="completed", type="message",
                                               content=[ResponseOutputText(type="output_text", text=value,
                                                                           annotations=[])])
            return ModelResponse(output=[output], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the scripted model does not stream")

    return TextAgentsModel


def TextAgentsModel():  # noqa: N802 - a class, built once the SDK is importable
    return _agents_sdk_class()()


# ---- LangChain / LangGraph -------------------------------------------------------


def _chat_model_class():
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class TextChatModel(BaseChatModel):
        """A LangChain chat model that answers with :func:`text_turn`."""

        tools: List[Any] = []

        @property
        def _llm_type(self) -> str:
            return "scripted-text"

        def bind_tools(self, tools, **kwargs):
            return self.model_copy(update={"tools": list(tools)})

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            entries: List[Entry] = []
            calls: Dict[str, Tuple[str, Dict[str, Any]]] = {}
            for m in messages:
                if isinstance(m, HumanMessage):
                    entries.append(("user", _text(m.content)))
                elif isinstance(m, AIMessage):
                    for c in m.tool_calls:
                        calls[c["id"]] = (c["name"], c["args"])
                    if not m.tool_calls:
                        entries.append(("said", _text(m.content)))
                elif isinstance(m, ToolMessage):
                    name, args = calls[m.tool_call_id]
                    entries.append(("call", name, args, _text(m.content)))
            turn, value = text_turn(entries, {t.name: "" for t in self.tools})
            if turn == "call":
                name, args = value
                message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{len(entries)}",
                                                             "type": "tool_call"}])
            else:
                message = AIMessage(content=value)
            return ChatResult(generations=[ChatGeneration(message=message)])

    return TextChatModel


def TextChatModel():  # noqa: N802 - a class, built once LangChain is importable
    return _chat_model_class()()
