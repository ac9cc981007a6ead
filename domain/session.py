"""The `AgentSession` aggregate: one agent session, whose events are its context.

Each event carries only what is new (one message, one turn, one tool result); the
aggregate keeps just enough state to enforce its rules, never a copy of the
conversation. Events are nested classes with typed fields, declared here or on a base
(`domain.session_log` says how); their names (and so their stored topics,
`domain.session:AgentSession.<Name>`) never change. An event whose
fields changed has a `class_version` and an `upcast_*` that brings older stored
events up to date, so every event ever stored still loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.conversation import CacheTtl, ModelTurn
from domain.session_decks import DeckLog
from domain.session_log import State
from domain.session_runs import RunLog
from domain.session_steering import SteeringLog
from domain.session_work import WorkLog
from domain.stored_blocks import StoredBlock, turn_blocks
from domain.value_state import ValueState
from domain.values import (
    AttachedFile,
    CitedSource,
    ModelCallCost,
    SessionSettings,
    check_message_size,
    check_title,
)


def _unpriced_call(state: State) -> None:
    """Model calls recorded before calls carried their cost: unpriced, never dropped."""
    state.setdefault("cache_ttl", "5m")
    state.setdefault("cost_usd", Decimal(0))
    state.setdefault("price_version", "")
    state.setdefault("priced", False)


class AgentSession(ValueState, RunLog, WorkLog, SteeringLog, DeckLog):
    """One agent session in a workspace: its messages and turns, and the session's own
    life, here; its runs, tool calls, working memory, steering and slide decks in the
    bases (`RunLog`, `ToolLog`, `WorkLog`, `SteeringLog`, `DeckLog`)."""

    # v2: typed settings; a run's tokens and last message. v3: its organization and team.
    # v4: the numbers of its sources. v5: the active run's artifacts. v6: who holds the run
    # v7: whose message started the run
    class_version = 7

    @staticmethod
    def upcast_v1_v2(state: State) -> None:
        state["settings"] = SessionSettings.of(state.get("settings"))
        state.setdefault("run_tokens", 0)
        state.setdefault("run_message_id", None)

    @staticmethod
    def upcast_v2_v3(state: State) -> None:
        state.setdefault("organization_id", None)
        state.setdefault("team_id", None)

    @staticmethod
    def upcast_v3_v4(state: State) -> None:
        state.setdefault("source_numbers", {})

    @staticmethod
    def upcast_v4_v5(state: State) -> None:
        state.setdefault("run_artifacts", [])

    @staticmethod
    def upcast_v5_v6(state: State) -> None:
        state.setdefault("run_worker", None)

    @staticmethod
    def upcast_v6_v7(state: State) -> None:
        state.setdefault("run_requested_by", None)

    # -- events ----------------------------------------------------------------

    class SessionStarted(Aggregate.Created):
        workspace_id: UUID
        owner_id: UUID
        title: str
        task_type: str
        model: str
        settings: SessionSettings
        parent_id: UUID | None
        parent_version: int | None
        # Whom the session's spend is billed to (None: started before sessions said so).
        organization_id: UUID | None
        team_id: UUID | None

        class_version = 3

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state["settings"] = SessionSettings.of(state.get("settings"))

        @staticmethod
        def upcast_v2_v3(state: State) -> None:
            state.setdefault("organization_id", None)
            state.setdefault("team_id", None)

    class UserMessageAppended(Aggregate.Event):
        text: str
        attachments: list[str]  # blob refs of files uploaded to the session
        idempotency_key: str | None
        files: list[AttachedFile]  # workspace files it attaches, with their text
        # Who wrote it: whose key seals its text (None: written before messages said so,
        # and stored unsealed).
        author_id: UUID | None

        class_version = 3

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state.setdefault("files", [])

        @staticmethod
        def upcast_v2_v3(state: State) -> None:
            state.setdefault("author_id", None)

    class AssistantTurnRecorded(Aggregate.Event):
        run_id: UUID
        content: list[StoredBlock]
        stop_reason: str
        model: str
        input_tokens: int
        output_tokens: int
        cache_read_tokens: int
        cache_write_tokens: int
        latency_ms: int
        cache_ttl: CacheTtl  # the prompt-cache lifetime the call asked for
        # What the call cost when recorded, by the price table of `price_version`.
        cost_usd: Decimal
        price_version: str
        priced: bool  # False: no price matched the model (cost_usd is 0)
        # The session's sources its text cites, by first citation (its `[n]` markers and
        # the model's own citations), and the markers it wrote that name no source.
        citations: list[CitedSource]
        unknown_markers: list[int]

        class_version = 3
        upcast_v1_v2 = staticmethod(_unpriced_call)

        @staticmethod
        def upcast_v2_v3(state: State) -> None:
            state.setdefault("citations", [])
            state.setdefault("unknown_markers", [])

        @property
        def tokens(self) -> int:
            """Input (cache reads and writes included) plus output tokens."""
            return (
                self.input_tokens
                + self.output_tokens
                + self.cache_read_tokens
                + self.cache_write_tokens
            )

    class SessionRenamed(Aggregate.Event):
        title: str

    class SessionCompleted(Aggregate.Event):
        reason: str

    class SessionArchived(Aggregate.Event):
        pass

    # -- creation ----------------------------------------------------------------

    @event(SessionStarted)
    def __init__(
        self,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str,
        model: str,
        settings: SessionSettings,
        parent_id: UUID | None,
        parent_version: int | None,
        organization_id: UUID | None,
        team_id: UUID | None,
    ) -> None:
        self.workspace_id = workspace_id
        self.organization_id = organization_id
        self.team_id = team_id
        self.owner_id = owner_id
        self.title = title
        self.task_type = task_type
        self.model = model
        self.settings = settings
        self.status = "created"
        self.archived = False
        self.parent_id = parent_id
        self.parent_version = parent_version
        self.active_run = None
        self.run_worker = None
        self.run_requested_by = None
        self.run_tokens = 0
        self.run_message_id = None
        self.run_artifacts = []
        self.open_tool_calls = {}
        self.pending_confirmations = {}
        self.answered_confirmations = {}
        self.source_numbers = {}

    @classmethod
    def start(
        cls,
        *,
        workspace_id: UUID,
        owner_id: UUID,
        title: str,
        task_type: str = "general",
        model: str = "",
        settings: SessionSettings | None = None,
        organization_id: UUID | None = None,
        team_id: UUID | None = None,
    ) -> AgentSession:
        return cls(
            workspace_id,
            owner_id,
            check_title(title),
            task_type,
            model,
            settings or SessionSettings(),
            None,
            None,
            organization_id,
            team_id,
        )

    # -- messages and turns -------------------------------------------------

    def append_user_message(
        self,
        text: str,
        attachments: list[str] | None = None,
        idempotency_key: str | None = None,
        files: Sequence[AttachedFile] = (),
        author_id: UUID | None = None,
    ) -> None:
        """`author_id`: who wrote it (default: the session's owner)."""
        self._check_open()
        check_message_size(text)
        self._user_message_appended(
            text, list(attachments or []), idempotency_key, list(files), author_id or self.owner_id
        )

    @event(UserMessageAppended)
    def _user_message_appended(
        self,
        text: str,
        attachments: list[str],
        idempotency_key: str | None,
        files: list[AttachedFile],
        author_id: UUID | None,
    ) -> None:
        pass

    def record_assistant_turn(
        self,
        run_id: UUID,
        turn: ModelTurn,
        latency_ms: int,
        cost: ModelCallCost,
        citations: Sequence[CitedSource] = (),
        unknown_markers: Sequence[int] = (),
    ) -> None:
        self._check_run(run_id)
        usage = turn.usage
        self._assistant_turn_recorded(
            run_id, turn_blocks(turn), turn.stop_reason, turn.model, usage.input_tokens,
            usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens, latency_ms,
            cost.cache_ttl, cost.usd, cost.price_version, cost.priced, list(citations),
            list(unknown_markers),
        )  # fmt: skip

    @event(AssistantTurnRecorded)
    def _assistant_turn_recorded(
        self,
        run_id: UUID,
        content: list[StoredBlock],
        stop_reason: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
        latency_ms: int,
        cache_ttl: CacheTtl,
        cost_usd: Decimal,
        price_version: str,
        priced: bool,
        citations: list[CitedSource],
        unknown_markers: list[int],
    ) -> None:
        if run_id == self.active_run:
            self.run_tokens += input_tokens + output_tokens + cache_read_tokens + cache_write_tokens
            self.run_message_id = self.version + 1  # apply() runs before the version moves

    # -- session --------------------------------------------------------------

    def rename(self, title: str) -> None:
        self._check_open()
        self._renamed(check_title(title))

    @event(SessionRenamed)
    def _renamed(self, title: str) -> None:
        self.title = title

    def complete(self, reason: str = "marked complete by the user") -> None:
        """The user says the task is done; a run still going is stopped first."""
        self._check_open()
        if self.active_run is not None:
            self.stop(reason)
        self._completed(reason)

    @event(SessionCompleted)
    def _completed(self, reason: str) -> None:
        self.status = "completed"

    def archive(self) -> None:
        self._check_open()
        self._archived()

    @event(SessionArchived)
    def _archived(self) -> None:
        self.archived = True
