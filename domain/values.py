"""Value objects that session events carry, and the rules on the plain data they hold.

Events are stored as JSON: these types are immutable, compare by value, and convert
to and from the JSON shape older events were stored in (plain dicts), so a stored
event of any age loads as the same value.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, cast
from uuid import UUID, uuid5

from domain.conversation import CacheTtl
from domain.errors import InvalidCommand, InvalidValue, MessageTooLarge
from domain.model_names import parse_model_name

MAX_MESSAGE_BYTES = 1024 * 1024
MAX_TITLE_CHARS = 500

SessionStatus = Literal["created", "running", "waiting", "completed", "error", "stopped"]
MIN_THINKING_BUDGET = 1024  # the least extended thinking the vendor accepts
MANUAL_PREFIX = "manual_"  # tool calls a person made by hand, outside any model turn
ToolResultStatus = Literal["success", "error", "cancelled", "interrupted"]
RiskLevel = Literal["safe", "risky"]
PlanItemStatus = Literal["pending", "in_progress", "done", "skipped"]
ConfirmationPolicy = Literal["always", "risky", "never"]
ArtifactKind = Literal["report", "ppt", "code", "file"]
BudgetScope = Literal["org", "team", "workspace", "user"]
SourceVia = Literal["search", "read"]
SkillActivation = Literal["keyword", "embedding", "tool"]

TOOL_RESULT_STATUSES: tuple[ToolResultStatus, ...] = (
    "success",
    "error",
    "cancelled",
    "interrupted",
)
ARTIFACT_KINDS: tuple[ArtifactKind, ...] = ("report", "ppt", "code", "file")
PLAN_ITEM_STATUSES: tuple[PlanItemStatus, ...] = ("pending", "in_progress", "done", "skipped")
CONFIRMATION_POLICIES: tuple[ConfirmationPolicy, ...] = ("always", "risky", "never")
# How each plan status is marked in a checklist (recitation and task_plan.md alike).
PLAN_MARKS: dict[PlanItemStatus, str] = {
    "done": "x",
    "in_progress": "~",
    "pending": " ",
    "skipped": "-",
}


@dataclass(frozen=True)
class PlanItem:
    """One step of the agent's plan."""

    title: str
    status: PlanItemStatus = "pending"

    @classmethod
    def of(cls, raw: object) -> PlanItem:
        """From its stored JSON shape (a dict), checked."""
        if not isinstance(raw, dict):
            raise InvalidCommand("a plan item must be an object with a title")
        title = str(raw.get("title", "")).strip()
        status = raw.get("status", "pending")
        if not title:
            raise InvalidCommand("every plan item needs a title")
        if status not in PLAN_ITEM_STATUSES:
            raise InvalidCommand(f"unknown plan item status {status!r}")
        return cls(title, cast(PlanItemStatus, status))

    def to_json(self) -> dict[str, str]:
        return {"title": self.title, "status": self.status}


@dataclass(frozen=True)
class Citation:
    """A source a finding rests on: the page's url, its title, and its text in the blob store."""

    url: str
    title: str = ""
    blob_ref: str = ""

    @classmethod
    def of(cls, raw: object) -> Citation:
        if not isinstance(raw, dict) or not str(raw.get("url", "")).strip():
            raise InvalidCommand("every citation needs a url")
        url, title = str(raw["url"]).strip(), str(raw.get("title") or "").strip()
        return cls(url, title, str(raw.get("blob_ref") or ""))

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "title": self.title, "blob_ref": self.blob_ref}


@dataclass(frozen=True)
class SessionSettings:
    """How the agent may act in one session; None means the server's default."""

    confirmation: ConfirmationPolicy = "risky"
    allowed_tools: tuple[str, ...] | None = None
    max_iterations: int | None = None
    token_budget: int | None = None
    model: str | None = None
    thinking_budget: int | None = None  # tokens of extended thinking a turn may use; 0: off

    @classmethod
    def of(cls, raw: object) -> SessionSettings:
        """From its stored JSON shape (a dict, keys optional), checked."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InvalidCommand("settings must be an object")
        confirmation = raw.get("confirmation", "risky")
        if confirmation not in CONFIRMATION_POLICIES:
            raise InvalidCommand(f"confirmation must be one of {', '.join(CONFIRMATION_POLICIES)}")
        tools = raw.get("allowed_tools")
        return cls(
            confirmation=cast(ConfirmationPolicy, confirmation),
            allowed_tools=None if tools is None else tuple(str(t) for t in tools),
            max_iterations=_optional_int(raw.get("max_iterations")),
            token_budget=_optional_int(raw.get("token_budget")),
            model=_model(raw.get("model")),
            thinking_budget=_thinking_budget(raw.get("thinking_budget")),
        )

    def to_json(self) -> dict[str, object]:
        """Only what was set, as older events stored it."""
        raw: dict[str, object] = {"confirmation": self.confirmation}
        if self.allowed_tools is not None:
            raw["allowed_tools"] = list(self.allowed_tools)
        for key in ("max_iterations", "token_budget", "model", "thinking_budget"):
            value = getattr(self, key)
            if value is not None:
                raw[key] = value
        return raw


def _model(raw: object) -> str | None:
    """A model setting, checked: a `provider:model` name or a bare one (see
    `domain.model_names`); kept as written."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidCommand("model must be a string such as openai:gpt-4.1")
    parse_model_name(raw)
    return raw


@dataclass(frozen=True)
class SkillSpec:
    """What a session records of a skill it activates (its instructions and limits)."""

    name: str
    version: str
    instructions: str
    allowed_tools: tuple[str, ...] | None = None
    max_iterations: int | None = None
    timeout: int | None = None
    model: str | None = None  # the model the skill prefers, `provider:model`


@dataclass(frozen=True)
class SourceSeen:
    """A page a tool call saw, before the session numbers it."""

    url: str
    title: str
    snippet: str = ""
    via: SourceVia = "search"
    blob_ref: str | None = None  # where its full text is kept, when it was read


_ARTIFACTS = UUID("8d5f3c1a-9b2e-4f7d-a6c0-1e2d3f4a5b6c")


def artifact_id_of(session_id: UUID, version: int) -> UUID:
    """An artifact's id: derived from the event that created it, the same in a rebuild."""
    return uuid5(_ARTIFACTS, f"{session_id}:{version}")


@dataclass(frozen=True)
class AttachedFile:
    """A workspace file a user message attaches, as the conversation carries it: its
    text (whole, or head and tail when long, with the whole kept in `text_blob_ref`)."""

    file_id: UUID
    path: str
    media_type: str
    size: int
    text: str
    text_blob_ref: str | None = None

    @classmethod
    def of(cls, raw: object) -> AttachedFile:
        if not isinstance(raw, dict):
            raise InvalidCommand("an attached file must be an object")
        ref = raw.get("text_blob_ref")
        return cls(
            UUID(str(raw["file_id"])), str(raw["path"]), str(raw["media_type"]),
            int(raw["size"]), str(raw["text"]), None if ref is None else str(ref),
        )  # fmt: skip

    def to_json(self) -> dict[str, object]:
        return {
            "file_id": str(self.file_id), "path": self.path, "media_type": self.media_type,
            "size": self.size, "text": self.text, "text_blob_ref": self.text_blob_ref,
        }  # fmt: skip


@dataclass(frozen=True)
class CitedSource:
    """A session source an answer cites: its number (`[n]`), page, and the text cited
    (the passage the model quoted, else the source's snippet)."""

    number: int
    url: str
    title: str
    snippet: str

    @classmethod
    def of(cls, raw: object) -> CitedSource:
        if not isinstance(raw, dict):
            raise InvalidCommand("a cited source must be an object")
        return cls(int(raw["number"]), str(raw["url"]), str(raw["title"]), str(raw["snippet"]))

    def to_json(self) -> dict[str, object]:
        return {"number": self.number, "url": self.url, "title": self.title,
                "snippet": self.snippet}  # fmt: skip


@dataclass(frozen=True)
class RunArtifact:
    """An artifact a run made, as its end lists it."""

    artifact_id: UUID
    kind: ArtifactKind
    name: str

    @classmethod
    def of(cls, raw: object) -> RunArtifact:
        if not isinstance(raw, dict) or raw.get("kind") not in ARTIFACT_KINDS:
            raise InvalidCommand("a run's artifact needs an id, a kind and a name")
        return cls(UUID(str(raw["artifact_id"])), raw["kind"], str(raw["name"]))

    def to_json(self) -> dict[str, object]:
        return {"artifact_id": str(self.artifact_id), "kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class ArtifactRef:
    """An artifact a tool created: its id, and its bytes in the blob store."""

    artifact_id: UUID
    blob_ref: str
    size: int
    sha256: str


@dataclass(frozen=True)
class ModelCallCost:
    """What one model call cost when it was recorded, and by which price table."""

    usd: Decimal = Decimal(0)
    price_version: str = ""
    priced: bool = False  # False: no price matched the model, so `usd` is 0
    cache_ttl: CacheTtl = "5m"  # the prompt-cache lifetime the call asked for


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCommand("max_iterations and token_budget must be whole numbers")
    return value


def _thinking_budget(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue("thinking_budget must be a whole number")
    check_thinking_budget(value)
    return value


def check_thinking_budget(budget: int, max_tokens: int | None = None) -> None:
    """0 (off), or at least the vendor's minimum and below a turn's output limit (thinking
    is part of the turn's output)."""
    if budget != 0 and budget < MIN_THINKING_BUDGET:
        raise InvalidValue(
            f"thinking_budget must be 0 (off) or at least {MIN_THINKING_BUDGET} tokens"
        )
    if budget and max_tokens is not None and budget >= max_tokens:
        raise InvalidValue(
            f"thinking_budget must be below the output limit of a turn ({max_tokens} tokens)"
        )


# -- rules on plain input ---------------------------------------------------------------


def check_message_size(text: str) -> None:
    size = len(text.encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise MessageTooLarge(size, MAX_MESSAGE_BYTES)


def check_title(title: str) -> str:
    title = title.strip()
    if not title or len(title) > MAX_TITLE_CHARS:
        raise InvalidCommand(f"title must be 1 to {MAX_TITLE_CHARS} characters")
    return title


@dataclass(frozen=True)
class RecalledMemory:
    """A long-term memory as a run recalled it: enough to show it to the model and to
    point back to the memory and where it came from."""

    memory_id: UUID
    namespace: str  # "user:<id>" | "workspace:<id>" | "team:<id>"
    category: str
    text: str
    score: float
    source_session_id: UUID | None = None
    source_version: int | None = None

    @classmethod
    def of(cls, raw: object) -> RecalledMemory:
        if not isinstance(raw, dict):
            raise InvalidCommand("a recalled memory must be an object")
        session, version = raw.get("source_session_id"), raw.get("source_version")
        return cls(
            UUID(str(raw["memory_id"])), str(raw["namespace"]), str(raw["category"]),
            str(raw["text"]), float(raw["score"]),
            None if session is None else UUID(str(session)),
            None if version is None else int(version),
        )  # fmt: skip

    def to_json(self) -> dict[str, object]:
        return {
            "memory_id": str(self.memory_id), "namespace": self.namespace,
            "category": self.category, "text": self.text, "score": self.score,
            "source_session_id": None if self.source_session_id is None
            else str(self.source_session_id),
            "source_version": self.source_version,
        }  # fmt: skip
