"""`ReadModels`: each view under its own name, typed, and walked in one order."""

from __future__ import annotations

import dataclasses

import pytest
from eventsourcing.postgres import PostgresDatastore

from adapters.embeddings.hashing import HashingEmbedder
from projections.accounts import AccountsView
from projections.artifacts import ArtifactsView
from projections.budgets import BudgetsView
from projections.confirmations import ConfirmationsView
from projections.episodes import EpisodesView
from projections.memories import MemoriesView
from projections.memory_vectors import EmbeddingModels
from projections.read_models import ReadModels
from projections.sessions import SessionsView
from projections.usage import UsageView
from projections.working_memory import WorkingMemoryView
from projections.workspace_files import WorkspaceFilesView


def store(name: str = "a") -> PostgresDatastore:
    return PostgresDatastore(name, "localhost", "5432", "u", "p")  # never connected here


def read_models(datastore: PostgresDatastore) -> ReadModels:
    hashing = HashingEmbedder()
    models = EmbeddingModels(hashing, lambda _: hashing)
    return ReadModels(
        SessionsView(datastore), WorkingMemoryView(datastore), ConfirmationsView(datastore),
        AccountsView(datastore), UsageView(datastore), BudgetsView(datastore),
        ArtifactsView(datastore), WorkspaceFilesView(datastore), MemoriesView(datastore, models),
        EpisodesView(datastore, models),
    )  # fmt: skip


def test_each_view_is_under_its_own_name_in_the_fields_order() -> None:
    views = read_models(store())
    names = [f.name for f in dataclasses.fields(ReadModels)]
    assert list(views) == names and len(views) == len(names)
    assert all(views[name].name == name for name in names)
    assert views["sessions"] is views.sessions
    with pytest.raises(KeyError):
        views["on"]  # a method is not a read model


def test_a_view_given_under_another_name_is_refused() -> None:
    views = read_models(store())
    with pytest.raises(ValueError, match="'usage' given as 'budgets'"):
        dataclasses.replace(views, budgets=views.usage)  # type: ignore[arg-type]


def test_on_another_pool_copies_every_view_and_leaves_the_first_alone() -> None:
    owner, other = store("owner"), store("other")
    views = read_models(owner)
    moved = views.on(other)
    for name in views:
        assert moved[name] is not views[name] and type(moved[name]) is type(views[name])
        assert moved[name].datastore is other and views[name].datastore is owner
