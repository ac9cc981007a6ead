"""Regenerating one slide of a deck from a user's instructions: one focused model call.

The call sees the whole deck (marked as a prompt-cache breakpoint, so regenerating
several slides of one deck reads it from the cache) and the instructions, and answers
the slide's new data through the `write_slide` tool (or as a JSON object). The slide is
checked like any other, the deck is rendered again with only that slide changed, and
the change is recorded with the call's usage and cost, so usage and budgets count it.
Budgets are checked before the call like a run's. It is refused while a run is active
in the session: the run owns the session's deck until it ends.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from application.bridge import SyncBridge
from application.budget_guard import BudgetGuard
from application.decks import Changed, DeckEditor
from application.ports import LLM, BlobStore, LLMError, TokenCounter
from application.receipt import Receipt
from application.sessions import SessionService
from application.tools.base import input_schema
from application.tools.slides import SlideIn
from domain.budgets import BillingScope, Spend
from domain.conversation import (
    SESSION_KEY,
    CacheTtl,
    Message,
    ModelRequest,
    ModelTurn,
    TextBlock,
    ToolSpec,
)
from domain.deck_fold import DeckHistory
from domain.decks import Deck, Slide
from domain.errors import Conflict, InvalidCommand, RunAlreadyActive
from domain.events import SessionEvent
from domain.pricing import PriceTable
from domain.session import AgentSession
from domain.session_decks import File
from domain.values import ModelCallCost, artifact_id_of

SYSTEM = (
    "You edit one slide of a slide deck. Rewrite the slide the user names following "
    "their instructions, in the deck's language and style, one idea per slide. Keep "
    "what the instructions do not ask to change. Answer only by calling write_slide."
)
ATTEMPTS = 3  # records tried when other writes move the session meanwhile


@dataclass(frozen=True)
class RegenerationSettings:
    model: str | None = None
    max_tokens: int = 2048
    cache_ttl: CacheTtl = "5m"


@dataclass
class _SessionAt:
    """A session as of a version: its log then, and writes only if it is still there."""

    session_id: UUID
    log: list[SessionEvent]
    sessions: SessionService
    bridge: SyncBridge
    blobs: BlobStore
    tool_use_id: str | None = None

    async def events(self) -> Sequence[SessionEvent]:
        return self.log

    async def record(self, command: Callable[[AgentSession], None]) -> Receipt:
        version = self.log[-1].originator_version
        return await self.bridge(self.sessions.change_deck, self.session_id, command, version)

    async def keep(self, data: bytes, media_type: str) -> str:
        return await self.blobs.put(data, content_type=media_type)

    async def stored(self, blob_ref: str) -> bytes:
        return await self.blobs.get(blob_ref)


class SlideRegenerator:
    def __init__(
        self,
        *,
        sessions: SessionService,
        bridge: SyncBridge,
        llm: LLM,
        editor: DeckEditor,
        blobs: BlobStore,
        prices: PriceTable,
        budgets: BudgetGuard,
        counter: TokenCounter,
        settings: RegenerationSettings | None = None,
    ) -> None:
        self.sessions = sessions
        self.bridge = bridge
        self.llm = llm
        self.editor = editor
        self.blobs = blobs
        self.prices = prices
        self.budgets = budgets
        self.counter = counter
        self.settings = settings or RegenerationSettings()

    async def check(self, session_id: UUID, artifact_id: UUID) -> Deck:
        """The deck of `artifact_id`, if it can be regenerated now."""
        _, deck = await self._deck(session_id, artifact_id, None)
        return deck

    async def regenerate(
        self, session_id: UUID, artifact_id: UUID, page_index: int, instructions: str
    ) -> Changed:
        instructions = instructions.strip()
        if not instructions:
            raise InvalidCommand("say how the slide should change (instructions are empty)")
        session, deck = await self._deck(session_id, artifact_id, page_index)
        scope = BillingScope(
            session.organization_id, session.team_id, session.workspace_id, session.owner_id
        )
        request = self._request(session_id, deck, page_index, instructions, session.model)
        await self._check_budgets(scope, request)
        call = await self._call(request)
        slide = parse_slide(call)
        cost = self._cost(call, request.cache_ttl)
        made = await self._record(
            session_id, artifact_id, page_index, slide, instructions, call, cost
        )
        spent = [(made.receipt.notification_id, Spend(cost.usd, call.usage.total))]
        for crossing in await self.budgets.after_call(scope, session_id, spent):
            await self.bridge(self.sessions.note_budget_threshold, session_id, crossing)
        return made

    async def _deck(
        self, session_id: UUID, artifact_id: UUID, page_index: int | None
    ) -> tuple[AgentSession, Deck]:
        session = await self.bridge(self.sessions.get_session, session_id)
        if session.active_run is not None:
            raise RunAlreadyActive(
                f"run {session.active_run} is active in the session: regenerate the slide once "
                "it ends, or stop it"
            )
        log = await self.bridge(lambda: list(self.sessions.session_events(session_id)))
        deck = _deck_of(session_id, log, artifact_id)
        if page_index is not None:
            deck.check_index(page_index)
        return session, deck

    def _request(
        self, session_id: UUID, deck: Deck, index: int, instructions: str, model: str
    ) -> ModelRequest:
        shown = {
            "title": deck.title,
            "template": deck.template,
            "slides": [dict(s.to_json(), page=i) for i, s in enumerate(deck.slides, 1)],
        }
        the_deck = Message(
            "user",
            (TextBlock("The deck, as JSON:\n" + json.dumps(shown, ensure_ascii=False)),),
            cache_breakpoint=True,
        )
        ask = Message(
            "user",
            (TextBlock(f"Rewrite slide {index} ({deck.slide(index).title!r}): {instructions}"),),
        )
        return ModelRequest(
            SYSTEM, (write_slide_spec(),), (the_deck, ask),
            model=self.settings.model or model or None, max_tokens=self.settings.max_tokens,
            metadata={SESSION_KEY: str(session_id)}, cache_ttl=self.settings.cache_ttl,
        )  # fmt: skip

    async def _check_budgets(self, scope: BillingScope, request: ModelRequest) -> None:
        text = request.system + "".join(
            b.text for m in request.messages for b in m.content if isinstance(b, TextBlock)
        )
        estimate = self.counter.count(text)
        max_tokens = request.max_tokens or 0
        worst = self.prices.worst_case(request.model or "", estimate, max_tokens, request.cache_ttl)
        await self.budgets.before_call(scope, Spend(worst, estimate + max_tokens), [])

    async def _call(self, request: ModelRequest) -> ModelTurn:
        turn = None
        async for item in self.llm.stream(request):
            if isinstance(item, ModelTurn):
                turn = item
        if turn is None:
            raise LLMError("the model's stream ended without a finished turn", retryable=True)
        return turn

    def _cost(self, call: ModelTurn, cache_ttl: CacheTtl) -> ModelCallCost:
        cost = self.prices.cost(call.model, call.usage, cache_ttl)
        return ModelCallCost(cost.usd, cost.price_version, cost.priced, cache_ttl)

    async def _record(
        self,
        session_id: UUID,
        artifact_id: UUID,
        index: int,
        slide: Slide,
        instructions: str,
        call: ModelTurn,
        cost: ModelCallCost,
    ) -> Changed:
        """Record the new slide on the deck as it is now (another write may have moved
        the session since the call was asked; the slide is applied again then)."""
        for attempt in range(1, ATTEMPTS + 1):
            log = await self.bridge(lambda: list(self.sessions.session_events(session_id)))
            deck = _deck_of(session_id, log, artifact_id)
            at = _SessionAt(session_id, log, self.sessions, self.bridge, self.blobs)

            def write(s: AgentSession, d: Deck, i: int, sl: Slide, file: File) -> None:
                s.rewrite_slide(d, i, sl, file, instructions, call, cost)

            try:
                return await self.editor.rewrite(at, deck.number, index, slide, write)
            except Conflict:
                if attempt == ATTEMPTS:
                    raise
        raise AssertionError("unreachable")


def write_slide_spec() -> ToolSpec:
    return ToolSpec("write_slide", "The slide's new content.", input_schema(SlideIn))


def parse_slide(call: ModelTurn) -> Slide:
    """The slide the model wrote: its `write_slide` call's input, or a JSON object."""
    raw = next((u.input for u in call.tool_uses if u.name == "write_slide"), None)
    if raw is None:
        text = call.text
        try:
            raw = json.loads(text[text.find("{") : text.rfind("}") + 1])
        except ValueError:
            raise LLMError(
                "the model did not answer with a slide (no write_slide call, no JSON object)",
                retryable=False,
            ) from None
    try:
        return Slide.of(raw)
    except InvalidCommand as e:
        raise LLMError(f"the model's slide is not valid: {e}", retryable=False) from None


def _deck_of(session_id: UUID, log: Sequence[SessionEvent], artifact_id: UUID) -> Deck:
    history = DeckHistory.of(log)
    for number in history.numbers:
        deck = history.current(number)
        if artifact_id_of(session_id, deck.created_at) == artifact_id:
            return deck
    raise InvalidCommand(f"artifact {artifact_id} is not a slide deck: only decks regenerate")
