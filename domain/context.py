"""Context assembly: the request to the model as a pure function of the session's events.

Frozen system prompt and tool list first; then the conversation folded from events
(what each one adds: `domain.context_turns`), or after a `ContextCompacted` its summary
and what came after; the plan recited at
the very end, as a message of its own. Nothing earlier changes from one step to the
next, so the prompt prefix stays byte-identical and the vendor's prompt cache keeps
working. (Consecutive user messages are fine: the Messages API joins them.)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from domain.context_turns import skill_instructions, turn_of
from domain.conversation import (
    PER_MESSAGE_OVERHEAD,
    CacheTtl,
    ContentBlock,
    Message,
    ModelRequest,
    Role,
    SearchResultBlock,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    message_text,
)
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.sources import NumberedSource, add_source
from domain.values import MANUAL_PREFIX, PLAN_MARKS, PlanItem


@dataclass(frozen=True)
class ContextFrame:
    """What stays the same for a whole session: the role, the rules, the tools."""

    system: str
    tools: tuple[ToolSpec, ...]
    model: str | None = None
    max_tokens: int | None = None
    thinking_budget: int = 0
    cache_ttl: CacheTtl = "5m"


Compaction = tuple[str, int]  # (summary, the last version it stands for)
Turn = tuple[Role, list[ContentBlock]]
Added = tuple[int, Role, list[ContentBlock]]  # what the event at a version added


@dataclass
class FoldedContext:
    """A `ContextBuilder`'s state without its frame: a pure function of the events it
    applied, kept in a snapshot (`application/context_snapshots.py`)."""

    added: list[Added] = field(default_factory=list)  # since the newest compaction
    turns: list[Turn] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # of the first turns, as counted
    plan: list[PlanItem] = field(default_factory=list)
    sources: dict[int, NumberedSource] = field(default_factory=dict)
    reads: dict[int, str] = field(default_factory=dict)
    skill: S.SkillActivated | None = None
    compaction: Compaction | None = None  # the newest, which `added` and `turns` follow
    compacted_at: int = 0  # the version of its `ContextCompacted` (0: none)


def build_request(
    events: Sequence[SessionEvent], frame: ContextFrame, compaction: Compaction | None = None
) -> ModelRequest:
    """The next model request for a session whose log is `events` (in version order).

    `compaction` overrides the log's newest `ContextCompacted` (to measure one first).
    """
    builder = ContextBuilder(frame)
    for e in events:
        builder.apply(e)
    if compaction is not None:
        builder.compact(*compaction)
    return builder.request()


def fold_messages(
    events: Sequence[SessionEvent], compaction: Compaction | None = None
) -> list[Message]:
    """The conversation as alternating user / assistant messages (no plan, no marks)."""
    builder = ContextBuilder(ContextFrame("", ()))
    for e in events:
        builder.apply(e)
    if compaction is not None:
        builder.compact(*compaction)
    return builder.conversation()


class ContextBuilder:
    """`build_request` kept up to date one event at a time.

    Each event becomes content once and each message is rebuilt only when it grows,
    so a step costs the same late in a long session as early on. Token estimates are
    kept per message for the same reason.
    """

    def __init__(self, frame: ContextFrame, count: Callable[[str], int] = len) -> None:
        self.frame = frame
        self._count = count
        # What each event added, by version, since the newest compaction: a compaction
        # keeps what came after the version it goes through (which only moves forward).
        self._added: list[Added] = []
        self._skill: S.SkillActivated | None = None  # the newest, never compacted away
        self._turns: list[Turn] = []  # merged, in order
        self._messages: list[Message] = []  # one per turn, valid below `_dirty`
        self._tokens: list[int] = []
        self._dirty = 0
        self._plan: list[PlanItem] = []
        self._sources: dict[int, NumberedSource] = {}  # as far as the log has come
        self._reads: dict[int, str] = {}  # source number -> the call that last read it
        self._frame_tokens = _frame_tokens(frame.system, _tools_json(frame.tools), count)
        self._compaction: Compaction | None = None
        self._compacted_at = 0

    @classmethod
    def turns_of(
        cls, added: list[Added], compaction: Compaction | None, skill: S.SkillActivated | None
    ) -> list[Turn]:
        """The merged turns of a folded context, from what its events added since its
        newest compaction (a snapshot keeps those, not the turns: `FoldedContext`)."""
        builder = cls(ContextFrame("", ()))
        builder._skill = skill
        if compaction is None:
            for _, role, blocks in added:
                builder._add((role, blocks))
        else:
            builder._added = list(added)  # all after the compaction's version
            builder.compact(*compaction)
        return builder._turns

    def apply(self, e: SessionEvent) -> None:
        match e:
            case S.PlanUpdated(items=items):
                self._plan = list(items)
            case S.ContextCompacted(summary=summary, through_version=through):
                self.compact(summary, through)
                self._compacted_at = e.originator_version
            case S.SourceRecorded(number=number, via=via, tool_use_id=tool_use_id):
                add_source(self._sources, e)
                if via == "read":
                    self._reads[number] = tool_use_id
            case S.ToolResultRecorded(sources=[_, *_], tool_use_id=tool_use_id) if (
                not tool_use_id.startswith(MANUAL_PREFIX)  # no model turn to cite from
            ):
                # As it is now: a later sighting of a page must not change this result.
                self._adds(e.originator_version, ("user", [self._showing_pages(e)]))
            case S.SkillActivated():
                self._skill = e
                self._adds(e.originator_version, turn_of(e))
            case _:
                self._adds(e.originator_version, turn_of(e))

    def compact(self, summary: str, through_version: int) -> None:
        """Start again from the summary and what came after `through_version`."""
        self._turns, self._messages, self._tokens, self._dirty = [], [], [], 0
        self._compaction = (summary, through_version)
        self._add(("user", [TextBlock(f"[Summary of the conversation so far]\n{summary}")]))
        skill = self._skill
        if skill is not None and skill.originator_version <= through_version:
            self._add(("user", [skill_instructions(skill)]))  # never compacted away
        self._added = [a for a in self._added if a[0] > through_version]
        for _, role, blocks in self._added:
            self._add((role, blocks))

    def folded(self) -> FoldedContext:
        """The state so far (shared, not copied: encode it before applying more)."""
        del self._messages[self._dirty :], self._tokens[self._dirty :]
        return FoldedContext(
            self._added, self._turns, self._tokens, self._plan, self._sources, self._reads,
            self._skill, self._compaction, self._compacted_at,
        )  # fmt: skip

    def restore(self, folded: FoldedContext) -> None:
        """Continue from `folded` (from a builder with the same counter)."""
        self._added, self._turns, self._tokens = folded.added, folded.turns, folded.tokens
        self._plan, self._sources, self._reads = folded.plan, folded.sources, folded.reads
        self._skill, self._compaction = folded.skill, folded.compaction
        self._compacted_at = folded.compacted_at
        self._messages = [
            _message(role, blocks) for role, blocks in self._turns[: len(self._tokens)]
        ]
        self._dirty = len(self._tokens)

    def conversation(self) -> list[Message]:
        for role, blocks in self._turns[self._dirty :]:
            message = _message(role, blocks)
            self._messages.append(message)
            self._tokens.append(self._count(message_text(message)) + PER_MESSAGE_OVERHEAD)
        self._dirty = len(self._turns)
        return list(self._messages)

    def request(self) -> ModelRequest:
        return self.request_and_estimate()[0]

    def request_and_estimate(self) -> tuple[ModelRequest, int]:
        """The next request, and an estimate of its input tokens."""
        messages = _mark_stable(self.conversation())
        estimate = self._frame_tokens + sum(self._tokens)
        if self._plan:
            recitation = Message("user", (TextBlock(plan_recitation(self._plan)),))
            messages.append(recitation)
            estimate += self._count(message_text(recitation)) + PER_MESSAGE_OVERHEAD
        request = ModelRequest(
            system=self.frame.system,
            tools=self.frame.tools,
            messages=tuple(messages),
            model=self.frame.model,
            max_tokens=self.frame.max_tokens,
            thinking_budget=self.frame.thinking_budget,
            cache_ttl=self.frame.cache_ttl,
        )
        return request, estimate

    def _adds(self, version: int, turn: Turn | None) -> None:
        if turn is not None:
            self._added.append((version, *turn))
            self._add(turn)

    def _showing_pages(self, e: S.ToolResultRecorded) -> ToolResultBlock:
        """A result that showed pages, as search results the model can cite: the page a
        call read is its text (the summary), a page it found is its snippet."""
        shown = [self._sources[n] for n in e.sources]
        if len(shown) == 1 and self._reads.get(shown[0].number) == e.tool_use_id:
            texts = [e.summary]
        else:
            texts = [s.snippet or s.title or s.url for s in shown]
        results = tuple(
            SearchResultBlock(s.url, f"[{s.number}] {s.title or s.url}", text)
            for s, text in zip(shown, texts, strict=True)
        )
        return ToolResultBlock(e.tool_use_id, e.summary, results=results)

    def _add(self, turn: Turn) -> None:
        role, blocks = turn
        if self._turns and self._turns[-1][0] == role:
            self._turns[-1][1].extend(blocks)
        else:
            self._turns.append((role, list(blocks)))
        index = len(self._turns) - 1
        if index < self._dirty:
            self._dirty = index
            del self._messages[index:], self._tokens[index:]


# A run starts with its frame's tokens: with all the tools that is a JSON text of
# thousands of tokens, about 1.5 ms to write and count. Both are kept per frame.
_TOOLS_JSON: dict[int, tuple[tuple[ToolSpec, ...], str]] = {}  # id -> (the specs, JSON)


def _tools_json(tools: tuple[ToolSpec, ...]) -> str:
    """The specs as JSON, written once per tuple of specs (the registry hands out one)."""
    kept = _TOOLS_JSON.get(id(tools))
    if kept is not None and kept[0] is tools:  # the same tuple, not a new one at its id
        return kept[1]
    text = json.dumps([_tool_json(t) for t in tools], sort_keys=True)
    if len(_TOOLS_JSON) >= 16:
        _TOOLS_JSON.clear()
    _TOOLS_JSON[id(tools)] = (tools, text)
    return text


@functools.lru_cache(maxsize=16)
def _frame_tokens(system: str, tools: str, count: Callable[[str], int]) -> int:
    return count(system) + count(tools)


def _tool_json(tool: ToolSpec) -> dict[str, object]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def _message(role: Role, blocks: list[ContentBlock]) -> Message:
    if role == "user":  # tool results must come first in a user message
        blocks = sorted(blocks, key=lambda b: not isinstance(b, ToolResultBlock))
    return Message(role, tuple(blocks))


def latest_compaction(events: Sequence[SessionEvent]) -> Compaction | None:
    for e in reversed(events):
        if isinstance(e, S.ContextCompacted):
            return e.summary, e.through_version
    return None


def current_plan(events: Sequence[SessionEvent]) -> list[PlanItem]:
    for e in reversed(events):
        if isinstance(e, S.PlanUpdated):
            return list(e.items)
    return []


def plan_recitation(plan: list[PlanItem]) -> str:
    done = sum(1 for i in plan if i.status == "done")
    lines = [f"[Current plan: {done}/{len(plan)} done]"]
    lines += [f"[{PLAN_MARKS[i.status]}] {n}. {i.title}" for n, i in enumerate(plan, 1)]
    lines.append("Stay on the plan; update it with update_plan when a step is done.")
    return "\n".join(lines)


def _mark_stable(messages: list[Message]) -> list[Message]:
    """A cache breakpoint on the newest message of the conversation.

    The next request repeats it unchanged (the plan recitation, which changes, is a
    message of its own after it), so the prefix up to here is read from the cache.
    """
    if not messages:
        return messages
    last = messages[-1]
    return [*messages[:-1], Message(last.role, last.content, True)]
