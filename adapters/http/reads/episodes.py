"""Episodic search: the episodes read model, searched once it has what the sessions' log
held (`/search`, `adapters/http/routes/episodic_search.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from adapters.http.reads.read_your_writes import ViewWaiter
from application.bridge import SyncBridge
from projections.episodes import EpisodesView
from schemas.memories import EpisodeHitOut, EpisodeHits


@dataclass(frozen=True)
class Episodes:
    """The episodes read model, searched once it has what the sessions' log held."""

    view: EpisodesView
    waiter: ViewWaiter
    bridge: SyncBridge

    async def search(
        self,
        owner_id: UUID,
        query: str,
        *,
        workspace_id: UUID | None,
        start: datetime | None,
        end: datetime | None,
        k: int,
        workspaces: tuple[UUID, ...] | None = None,
    ) -> EpisodeHits:
        await self.waiter.caught_up(EpisodesView.name)
        hits = await self.bridge(
            self.view.search,
            owner_id,
            query,
            workspace_id=workspace_id,
            start=start,
            end=end,
            k=k,
            workspaces=workspaces,
        )
        return EpisodeHits(
            items=[
                EpisodeHitOut(
                    session_id=h.session_id,
                    version=h.version,
                    kind=h.kind,
                    snippet=h.snippet,
                    score=h.score,
                )
                for h in hits
            ]
        )
