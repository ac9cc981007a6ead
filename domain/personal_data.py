"""Which fields of which events are a user's personal content, and whose.

Each such field is sealed in the store with a key of that user's (crypto-shredding):
destroying the key erases the content from every copy of the log (the store, NATS,
backups) without changing a stored byte, so versions and the hash chain stand. The
owner is named by an attribute of the event (`originator_id`: the aggregate is the
user). A string field is sealed whole; `files.text` is the `text` of each attached file.

What an erased field reads as is `ERASED`; a field whose key is there but cannot open
it (the key table tampered with) reads as `UNREADABLE`, that field alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.accounts import User
from domain.memories import MemoryNamespace
from domain.session import AgentSession as S

ERASED = "[erased]"
UNREADABLE = "[unreadable]"


@dataclass(frozen=True)
class PersonalFields:
    owner: str  # the attribute holding the user's id (None there: nothing is sealed)
    fields: tuple[str, ...]  # attribute names; "a.b": attribute `b` of each item of `a`


PERSONAL: dict[type, PersonalFields] = {
    S.UserMessageAppended: PersonalFields("author_id", ("text", "files.text")),
    MemoryNamespace.MemoryRemembered: PersonalFields("owner_id", ("text",)),
    MemoryNamespace.MemoryUpdated: PersonalFields("owner_id", ("text",)),
    User.UserRegistered: PersonalFields("originator_id", ("email", "name")),
    User.ProfileChanged: PersonalFields("originator_id", ("name", "avatar_url")),
}
