"""How the value objects of session events are stored as JSON (eventsourcing transcodings)."""

from __future__ import annotations

from typing import Protocol, Self

from eventsourcing.persistence import JSONTranscoder, Transcoding

from domain.decks import Slide
from domain.values import (
    AttachedFile,
    Citation,
    CitedSource,
    PlanItem,
    RecalledMemory,
    RunArtifact,
    SessionSettings,
)


class ValueObject(Protocol):
    """A value object that knows its JSON shape: `to_json`, and `of` to read it back."""

    @classmethod
    def of(cls, raw: object) -> Self: ...

    def to_json(self) -> object: ...


class AsJson(Transcoding):
    """Stores a value object as its JSON shape, under a name that never changes."""

    def __init__(self, value_type: type[ValueObject], name: str) -> None:
        self.type = self.value_type = value_type
        self.name = name

    def encode(self, obj: ValueObject) -> object:
        return obj.to_json()

    def decode(self, data: object) -> ValueObject:
        return self.value_type.of(data)


def register_value_objects(transcoder: JSONTranscoder) -> None:
    transcoder.register(AsJson(PlanItem, "plan_item"))
    transcoder.register(AsJson(Citation, "citation"))
    transcoder.register(AsJson(SessionSettings, "session_settings"))
    transcoder.register(AsJson(CitedSource, "cited_source"))
    transcoder.register(AsJson(RunArtifact, "run_artifact"))
    transcoder.register(AsJson(AttachedFile, "attached_file"))
    transcoder.register(AsJson(Slide, "slide"))
    transcoder.register(AsJson(RecalledMemory, "recalled_memory"))
