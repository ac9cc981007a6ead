"""The store's mapper, sealing each event's personal fields with their owner's key.

The fields and their owner are `domain.personal_data.PERSONAL`'s. Sealing happens on
the way to the store, opening on the way back, so everything above the store (the
domain, the context, the read models, the streams) sees plain text, and every copy of
a stored event (Postgres, NATS, a context snapshot) holds only sealed text. A field
already reading as erased or unreadable is stored as it reads (a fork or replay of an
erased message copies the placeholder, not the text).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Mapper, StoredEvent

from application.loop_writes import NeedsThread
from application.ports import PersonalKeys
from domain.personal_data import ERASED, PERSONAL, UNREADABLE, PersonalFields

PLACEHOLDERS = (ERASED, UNREADABLE)


class SealingMapper(Mapper[UUID]):
    """Without keys (`keys` None: the in-memory store) it seals nothing."""

    def __init__(self, base: Mapper[UUID], keys: PersonalKeys | None = None) -> None:
        super().__init__(base.transcoder, base.compressor, base.cipher)
        self.keys = keys

    def in_memory(self, domain_event: DomainEventProtocol[UUID]) -> bool:
        """Whether mapping the event to store it needs no database (its owner's key, if
        it has personal fields, is held in memory)."""
        personal = PERSONAL.get(type(domain_event))
        owner = getattr(domain_event, personal.owner, None) if personal else None
        return self.keys is None or owner is None or self.keys.held(owner)

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        keys = self.keys
        personal = PERSONAL.get(type(domain_event))
        owner = getattr(domain_event, personal.owner, None) if personal else None
        if keys is None or personal is None or owner is None:
            return super().to_stored_event(domain_event)
        sealed = object.__new__(type(domain_event))
        state = dict(vars(domain_event))

        def seal(text: str) -> str:
            return text if text in PLACEHOLDERS else keys.seal(owner, text)

        _each_field(state, personal, seal)
        object.__setattr__(sealed, "__dict__", state)
        return super().to_stored_event(sealed)

    def to_domain_event(
        self, stored_event: StoredEvent, *, in_memory: bool = False
    ) -> DomainEventProtocol[UUID]:
        """The event, its personal fields opened; with `in_memory`, `NeedsThread` rather
        than a key read from the database."""
        event = super().to_domain_event(stored_event)
        keys = self.keys
        personal = PERSONAL.get(type(event))
        owner = getattr(event, personal.owner, None) if personal else None
        # Only an event naming its owner was sealed (older ones hold plain text).
        if keys is None or personal is None or owner is None:
            return event
        if in_memory and not keys.held(owner):
            raise NeedsThread(f"the key of user {owner} is not in memory")
        where = f"{stored_event.originator_id} v{stored_event.originator_version}"

        def open_(text: str) -> str:
            return keys.open(text, where) if keys.is_sealed(text) else text

        _each_field(event.__dict__, personal, open_)
        return event


def _each_field(
    state: dict[str, Any], personal: PersonalFields, change: Callable[[str], str]
) -> None:
    """Each personal field of an event's state changed in place (its items copied)."""
    for field in personal.fields:
        name, _, inner = field.partition(".")
        value = state.get(name)
        if not inner:
            if isinstance(value, str):
                state[name] = change(value)
        elif isinstance(value, list):
            state[name] = [
                dataclasses.replace(item, **{inner: change(getattr(item, inner))})
                if isinstance(getattr(item, inner, None), str)
                else item
                for item in value
            ]


class SealsPersonalData(Application[UUID]):
    """An application whose mapper seals personal fields once given keys (`seal_with`)."""

    mapper: SealingMapper

    def construct_mapper(self) -> SealingMapper:
        return SealingMapper(super().construct_mapper())

    def seal_with(self, keys: PersonalKeys) -> None:
        self.mapper.keys = keys
