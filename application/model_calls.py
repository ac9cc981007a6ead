"""One model call of a run: its deltas out live, its turn back, and the fallback models
taking over a call the model could not serve.

A call that fails as overloaded, unavailable or rate limited (after the adapter's own
retries) before any of its turn was streamed goes to the next model of the fallback
list; the switch is recorded first (`ModelFallbackUsed`), so the log says which model
answered and why, and the run keeps the new model for its later calls (the ledger
reads it back from the event: a replay makes the same choice). A call that failed
after part of its turn went out is never handed to another model: viewers saw that
part, and two models' words would run together.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from uuid import UUID

from application.ports import FALLBACK_ERRORS, LLM, DeltaSink, LLMError
from domain.conversation import SESSION_KEY, ModelRequest, ModelTurn
from domain.ledger import Ledger
from domain.values import SessionSettings

# Told of a switch before the fallback model is called: (from, to, the error).
OnFallback = Callable[[str, str, LLMError], Awaitable[None]]


class ModelCalls:
    """Streams model calls for sessions, with `fallback` models tried in order."""

    def __init__(
        self, llm: LLM, deltas: DeltaSink, *, default_model: str, fallback: Sequence[str] = ()
    ) -> None:
        self.llm = llm
        self.deltas = deltas
        self.default_model = default_model
        self.fallback = tuple(fallback)

    async def call(
        self,
        session_id: UUID,
        request: ModelRequest,
        *,
        live: bool = True,
        on_fallback: OnFallback | None = None,
    ) -> tuple[ModelTurn, int]:
        """The finished turn and its latency in ms; `LLMError` when no model could answer."""
        current = request.model or self.default_model
        tried = [current]
        while True:
            streamed: list[bool] = [False]
            try:
                return await self._once(session_id, request, live, streamed)
            except FALLBACK_ERRORS as e:
                successor = next((m for m in self.fallback if m not in tried), None)
                if streamed[0] or successor is None or on_fallback is None:
                    raise
                await on_fallback(current, successor, e)
            tried.append(successor)
            current, request = successor, replace(request, model=successor)

    async def _once(
        self, session_id: UUID, request: ModelRequest, live: bool, streamed: list[bool]
    ) -> tuple[ModelTurn, int]:
        started = time.perf_counter()
        turn: ModelTurn | None = None
        metadata = {**request.metadata, SESSION_KEY: str(session_id)}
        async for item in self.llm.stream(replace(request, metadata=metadata)):
            if isinstance(item, ModelTurn):
                turn = item
            else:
                streamed[0] = True
                if live:
                    await self.deltas.publish(session_id, item)
        if turn is None:
            raise LLMError("the model's stream ended without a finished turn", retryable=True)
        return turn, int((time.perf_counter() - started) * 1000)


def on_run_model(
    ledger: Ledger, settings: SessionSettings, run_id: UUID, request: ModelRequest
) -> ModelRequest:
    """The request on the run's model: a fallback's once one took over the run, else the
    active skill's preferred model unless the session or its workspace names one."""
    model = ledger.fallback_models.get(run_id)
    skill = ledger.skill
    if model is None and skill is not None and settings.model is None:
        model = skill.model
    return request if model is None else replace(request, model=model)
