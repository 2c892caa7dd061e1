"""A deterministic stand-in for an LLM that plays a tau2-bench retail task in words.

**It knows the gold.** It reads tau2's own ``tasks.json`` and plays each task's
gold actions (``evaluation_criteria.actions``): it stands in for a model that
solves the task, so that what is tested is everything around the model: the
conversation through LangGraph (``agentsim.loop.langgraph_chat``, the tools of
``agentsim.loop.langchain_tools``), the simulated customer that reads the words
(docs/conversation.md) and the judge (the final database, tau2's check).

It reads the customer's words only, as a chat model does: the human messages of
LangGraph's history (never a structured ``content``; the framework carries none).
The task is the one whose opening the first message is (tau2's ``known_info``
and ``reason_for_call``, as the imported world's customer opens: docs/tau2.md).
Then, turn by turn:

- each read of the gold is a tool call (its result is not needed: the gold
  already holds the arguments, and a gold call tau2 refuses is made and passed);
- before each write (a tool whose description asks for the user's explicit
  confirmation, as tau2's policy does), its final answer is a proposal in words
  naming the action and every argument (``Shall I go ahead with this: the
  action is cancel pending order, the order id is #W... and the reason is
  ordered by mistake?``), and it makes the write only after the customer's next
  message says yes; a refusal is proposed again, with any value the customer
  corrected (``the order id is #W...``) read from their words;
- it ends with a closing that says it is done and writes each string of the
  task's ``communicate_info`` (tau2 judges ``info.lower() in
  message.lower().replace(",", "")``).

:class:`WrongProposal` proposes a wrong order id once (one digit off), to show
the customer refusing it with the correction.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: ("user", words) | ("call", tool, args) | ("said", words), in the history's order.
Entry = Tuple[Any, ...]

#: What tau2's policy says of a consequential write, as the imported tools' descriptions say it.
CONFIRM_WORD = "confirmation"
YES = re.compile(r"^\s*(yes\b|ok\b|okay\b|that's correct|that sounds right|correct\b)", re.IGNORECASE)
#: A correction in the customer's refusal: ``the order id is #W2378156``.
CORRECTION = re.compile(r"\bthe ([a-z ]+?) (?:is|are) ([^,.;:!?\s]+)", re.IGNORECASE)
TRANSFER_TOOL = "transfer_to_human_agents"


def opening_key(text: str) -> str:
    """The opening as compared: its words, single-spaced, without braces (the
    imported customer's opening drops them: its request is a template, where
    `{name}` is a fact)."""
    return " ".join(text.replace("{", "").replace("}", "").split())


def load_tasks(folder: Any) -> Dict[str, Dict[str, Any]]:
    """tau2's retail tasks (``folder/tasks.json``) by their opening (``known_info``
    then ``reason_for_call``)."""
    tasks = json.loads((Path(folder) / "tasks.json").read_text())
    by_opening: Dict[str, Dict[str, Any]] = {}
    for task in tasks:
        instructions = task["user_scenario"]["instructions"]
        opening = f"{instructions.get('known_info') or ''} {instructions.get('reason_for_call') or ''}"
        by_opening[opening_key(opening)] = task
    return by_opening


def shown(value: Any) -> str:
    """A value as a person writes it (as agentsim's Speak layer does): a code
    name without digits as words, an id as it is, a list joined."""
    if isinstance(value, list):
        items = [shown(v) for v in value]
        return f"{', '.join(items[:-1])} and {items[-1]}" if len(items) > 1 else "".join(items)
    text = str(value)
    if "_" in text and not any(c.isdigit() for c in text):
        return text.replace("_", " ")
    return text


def proposal(action: str, args: Dict[str, Any]) -> str:
    """``Shall I go ahead with this: the action is ..., the order id is ... and ...?``"""
    parts = [f"the action is {shown(action)}"]
    for name, value in args.items():
        verb = "are" if isinstance(value, list) and len(value) > 1 else "is"
        parts.append(f"the {name.replace('_', ' ')} {verb} {shown(value)}")
    return f"Shall I go ahead with this: {', '.join(parts[:-1])} and {parts[-1]}?"


def closing(task: Dict[str, Any], confirms: Sequence[str]) -> str:
    """What the agent says last: what was done, and each string tau2 wants told."""
    actions = task["evaluation_criteria"].get("actions") or []
    writes = [a for a in actions if a["name"] in confirms]
    done = [f"{shown(a['name'])} for order {a['arguments']['order_id']}" if "order_id" in a["arguments"]
            else shown(a["name"]) for a in writes]
    words = ["Done: I have completed " + "; ".join(done) + "." if done else "Done: I have looked into your request."]
    if any(a["name"] == TRANSFER_TOOL for a in actions):
        words.append("I have transferred you to a human agent, who will take it from here.")
    info = task["evaluation_criteria"].get("communicate_info") or []
    if info:
        words.append("Here is what you asked about: " + " and ".join(str(i) for i in info) + ".")
    return " ".join(words)


def plan(task: Dict[str, Any], confirms: Sequence[str]) -> List[Tuple[str, Dict[str, Any]]]:
    """The gold as steps: ``("call", action)``, ``("propose", action)`` before a
    write, then ``("close", {})``."""
    steps: List[Tuple[str, Dict[str, Any]]] = []
    for action in task["evaluation_criteria"].get("actions") or []:
        if action["name"] in confirms:
            steps.append(("propose", action))
        steps.append(("call", action))
    steps.append(("close", {}))
    return steps


def corrected(args: Dict[str, Any], reply: str) -> Dict[str, Any]:
    """``args`` with each value the customer's refusal corrects (``the order id
    is #W2378156`` corrects ``order_id``)."""
    fixed = dict(args)
    for label, value in CORRECTION.findall(reply):
        name = label.strip().lower().replace(" ", "_")
        if name in fixed and not isinstance(fixed[name], list):
            fixed[name] = value
    return fixed


class Conversation:
    """Where the task stands after a history: the step to take, and the
    arguments of the write being agreed (as last proposed, corrected by the
    customer's refusal). ``wrong_first``: the first proposal says a wrong
    order id."""

    def __init__(self, task: Dict[str, Any], confirms: Sequence[str], wrong_first: bool = False):
        self.steps = plan(task, confirms)
        self.at = 0
        self.args: Optional[Dict[str, Any]] = None  # the write's arguments as last proposed
        self.proposals = 0  # said so far, in the whole conversation
        self.wrong_first = wrong_first
        self.awaiting = False

    def step(self) -> Tuple[str, Dict[str, Any]]:
        return self.steps[self.at] if self.at < len(self.steps) else ("over", {})

    def replay(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            kind, (step, action) = entry[0], self.step()
            if kind == "call" and step == "call":
                self.at += 1
                self.args = None  # the next write is proposed afresh
            elif kind == "said":
                self.awaiting = True
                if step == "propose":
                    self.args = self.proposal_args(action)
                    self.proposals += 1
            elif kind == "user" and self.awaiting:
                self.awaiting = False
                self.hear(entry[1])

    def hear(self, reply: str) -> None:
        """The customer's answer to what was said last."""
        step, _ = self.step()
        if step == "close":
            self.at += 1
        elif step == "propose":
            if YES.search(reply):
                self.at += 1  # the write, with the arguments agreed
            else:
                self.args = corrected(self.args or {}, reply)

    def proposal_args(self, action: Dict[str, Any]) -> Dict[str, Any]:
        """What the next proposal of ``action`` says: as corrected, else the gold."""
        args = dict(self.args) if self.args is not None else dict(action["arguments"])
        if self.wrong_first and self.proposals == 0 and isinstance(args.get("order_id"), str):
            args["order_id"] = one_digit_off(args["order_id"])
        return args

    def write_args(self, action: Dict[str, Any]) -> Dict[str, Any]:
        """The write's arguments: those the customer agreed to."""
        return dict(self.args) if self.args is not None else dict(action["arguments"])


def tau2_turn(tasks: Dict[str, Dict[str, Any]], entries: List[Entry], confirms: Sequence[str],
              wrong_first: bool = False) -> Tuple[str, Any]:
    """``("call", (tool, args))`` or ``("final", words)``: the next turn of a
    model that has read ``entries`` (the first is the customer's opening)."""
    opening = entries[0][1] if entries and entries[0][0] == "user" else ""
    task = tasks.get(opening_key(opening))
    if task is None:
        return "final", "Done: I am sorry, I have not found a request I can help with."
    talk = Conversation(task, confirms, wrong_first)
    talk.replay(entries[1:])
    step, action = talk.step()
    if step == "call" and action["name"] in confirms:
        return "call", (action["name"], talk.write_args(action))
    if step == "call":
        return "call", (action["name"], dict(action["arguments"]))
    if step == "propose":
        return "final", proposal(action["name"], talk.proposal_args(action))
    if step == "close":
        return "final", closing(task, confirms)
    return "final", "Goodbye."


def one_digit_off(order_id: str) -> str:
    """``#W2378156`` -> ``#W2378157``: an id of the same shape that is not it."""
    last = order_id[-1]
    return order_id[:-1] + (str((int(last) + 1) % 10) if last.isdigit() else "1")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content or [])


def _chat_model_class():
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from pydantic import Field

    class Tau2RetailChatModel(BaseChatModel):
        """A LangChain chat model that answers with :func:`tau2_turn` (it knows
        the gold: see the module's docstring). ``heard`` collects every message
        of the customer it read, in order (shared by its copies)."""

        # Out of the repr: LangChain serialises the model (its repr) on every call.
        tasks: Dict[str, Dict[str, Any]] = Field(default_factory=dict, repr=False)
        tools: List[Any] = Field(default_factory=list, repr=False)
        wrong_first: bool = False
        heard: List[str] = Field(default_factory=list, repr=False)

        @property
        def _llm_type(self) -> str:
            return "scripted-tau2-retail"

        def bind_tools(self, tools, **kwargs):
            return self.model_copy(update={"tools": list(tools)})

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            entries: List[Entry] = []
            for m in messages:
                if isinstance(m, HumanMessage):
                    entries.append(("user", _text(m.content)))
                elif isinstance(m, AIMessage):
                    entries.extend(("call", c["name"], c["args"]) for c in m.tool_calls)
                    if not m.tool_calls:
                        entries.append(("said", _text(m.content)))
                elif isinstance(m, ToolMessage):
                    pass  # the gold holds what the results would tell
            if entries and entries[-1][0] == "user":
                self.heard.append(entries[-1][1])
            # Which writes need a yes: what the tools' descriptions say (tau2's policy).
            confirms = [t.name for t in self.tools if CONFIRM_WORD in (getattr(t, "description", "") or "")]
            turn, value = tau2_turn(self.tasks, entries, confirms, self.wrong_first)
            if turn == "call":
                name, args = value
                message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{len(entries)}",
                                                             "type": "tool_call"}])
            else:
                message = AIMessage(content=value)
            return ChatResult(generations=[ChatGeneration(message=message)])

    return Tau2RetailChatModel


def Tau2RetailChatModel(folder: Any, wrong_first: bool = False):  # noqa: N802 - a class, built with LangChain
    """The stand-in over tau2's retail data in ``folder`` (its ``tasks.json``)."""
    return _chat_model_class()(tasks=load_tasks(folder), wrong_first=wrong_first, heard=[])


def WrongProposal(folder: Any):  # noqa: N802
    """The stand-in whose first proposal says a wrong order id (one digit off)."""
    return Tau2RetailChatModel(folder, wrong_first=True)
