"""How the value objects of session events are stored as JSON (eventsourcing transcodings)."""

from __future__ import annotations

from eventsourcing.persistence import JSONTranscoder, Transcoding

from domain.values import Citation, PlanItem, SessionSettings


class PlanItemAsDict(Transcoding):
    type = PlanItem
    name = "plan_item"

    def encode(self, obj: PlanItem) -> dict[str, str]:
        return obj.to_json()

    def decode(self, data: dict[str, str]) -> PlanItem:
        return PlanItem.of(data)


class CitationAsDict(Transcoding):
    type = Citation
    name = "citation"

    def encode(self, obj: Citation) -> dict[str, str]:
        return obj.to_json()

    def decode(self, data: dict[str, str]) -> Citation:
        return Citation.of(data)


class SessionSettingsAsDict(Transcoding):
    type = SessionSettings
    name = "session_settings"

    def encode(self, obj: SessionSettings) -> dict[str, object]:
        return obj.to_json()

    def decode(self, data: dict[str, object]) -> SessionSettings:
        return SessionSettings.of(data)


def register_value_objects(transcoder: JSONTranscoder) -> None:
    for transcoding in (PlanItemAsDict(), CitationAsDict(), SessionSettingsAsDict()):
        transcoder.register(transcoding)
