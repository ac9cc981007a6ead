"""Every read model of the system, one typed field each.

`ReadModels` is also a read-only mapping from each view's `name` to the view, in the
order the fields are declared: what iterates over all of them (the projection runners,
the probes, `tokendance rebuild`) reads it so, and what needs one reads its field.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from eventsourcing.postgres import PostgresDatastore

from projections.accounts import AccountsView
from projections.artifacts import ArtifactsView
from projections.budgets import BudgetsView
from projections.confirmations import ConfirmationsView
from projections.episodes import EpisodesView
from projections.memories import MemoriesView
from projections.sessions import SessionsView
from projections.usage import UsageView
from projections.view import View
from projections.working_memory import WorkingMemoryView
from projections.workspace_files import WorkspaceFilesView


@dataclass(frozen=True)
class ReadModels(Mapping[str, View]):
    """The read models, each under its view's `name` (checked when built)."""

    sessions: SessionsView
    working_memory: WorkingMemoryView
    confirmations: ConfirmationsView
    accounts: AccountsView
    usage: UsageView
    budgets: BudgetsView
    artifacts: ArtifactsView
    workspace_files: WorkspaceFilesView
    memories: MemoriesView
    episodes: EpisodesView

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            view = getattr(self, field.name)
            if view.name != field.name:
                raise ValueError(f"read model {view.name!r} given as {field.name!r}")

    def __getitem__(self, name: str) -> View:
        if name not in self._names():
            raise KeyError(name)
        view: View = getattr(self, name)
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def on(self, datastore: PostgresDatastore) -> ReadModels:
        """Copies of these read models that query through `datastore` (another pool):
        their tables, statements and models are the same."""
        copies: dict[str, Any] = {}
        for name, view in self.items():
            copies[name] = copy.copy(view)
            copies[name].datastore = datastore
        return dataclasses.replace(self, **copies)

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))
