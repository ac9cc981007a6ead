"""Erasing a user (GDPR Art. 17) by crypto-shredding: its key goes, its events stay.

The events that held the user's content keep their bytes (versions, hashes and the
chain verify), and from now on their personal fields read as `[erased]` everywhere they
are read: the API, streams, replay, exports, a rebuilt read model. What was opened from
them before is removed (`PersonalCopies`): the episodes of its messages, its memories,
the snapshots of aggregates that held its content, its idempotency records and failed
logins; the blobs its messages attached are deleted. Its account records a `UserErased`
(who erased whom; the read model's email and name read as erased), its logins end and
its API keys are revoked. Usage and cost rows stay: they hold no content.

Erasing again finds the key gone and does the rest again (a retry after a crash ends
the work), and says the user was erased already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from application.bridge import SyncBridge
from application.ports import BlobStore
from domain.account_errors import Forbidden
from domain.accounts import User
from domain.errors import NotFound
from domain.memories import MemoryNamespace
from domain.personal_data import ERASED
from domain.session import AgentSession as S

if TYPE_CHECKING:
    from application.accounts import AccountService
    from application.sessions import SessionService


@dataclass(frozen=True)
class Copies:
    """What was copied out of the user's sealed events."""

    messages: tuple[tuple[UUID, int], ...]  # (session, version) of each message
    memories: tuple[UUID, ...]
    aggregates: tuple[UUID, ...]  # every aggregate that held the user's content
    attachments: tuple[str, ...]  # blob refs its messages attached


class PersonalCopies(Protocol):
    def sealed_events(self, user_id: UUID) -> list[StoredEvent]: ...

    def logins(self, user_id: UUID) -> list[UUID]:
        """The user's token families."""
        ...

    def remove(self, user_id: UUID, email: str | None, copies: Copies) -> None: ...


class ErasableKeys(Protocol):
    def destroy(self, user_id: UUID, by: UUID | None) -> bool: ...

    def reseal(self) -> int:
        """Wrap every key again with the current master key; how many changed."""
        ...


@dataclass(frozen=True)
class Erased:
    user_id: UUID
    erased_by: UUID | None
    already: bool  # erased before this call
    messages: int
    memories: int
    blobs: int


class Erasure:
    def __init__(
        self,
        accounts: AccountService,
        sessions: SessionService,
        keys: ErasableKeys,
        copies: PersonalCopies,
        blobs: BlobStore,
        bridge: SyncBridge,
    ) -> None:
        self.accounts, self.sessions, self.keys = accounts, sessions, keys
        self.copies, self.blobs, self.bridge = copies, blobs, bridge

    def check_may_erase(self, caller: UUID, user_id: UUID) -> None:
        """A user may erase itself; an owner or admin of an organization may erase its
        members (`Forbidden` else, `NotFound` for no such user)."""
        if caller == user_id:
            return
        user = self.accounts.find_user(user_id)
        if user is None:
            raise NotFound(f"no user {user_id}")
        roles = self.accounts.organization_roles(caller)
        if not any(roles.get(o) in ("owner", "admin") for o in user.organization_ids):
            raise Forbidden("only an owner or admin of one of its organizations erases a user")

    async def erase(self, user_id: UUID, by: UUID | None) -> Erased:
        """Erase the user (`NotFound` if there is none); `by`: who asked (None: the operator)."""
        found, already = await self.bridge(self._erase, user_id, by)
        for ref in found.attachments:
            await self.blobs.delete(ref)
        return Erased(
            user_id, by, already, len(found.messages), len(found.memories),
            len(found.attachments),
        )  # fmt: skip

    def _erase(self, user_id: UUID, by: UUID | None) -> tuple[Copies, bool]:
        user = self.accounts.find_user(user_id)
        if user is None:
            raise NotFound(f"no user {user_id}")
        email = None if user.email == ERASED else user.email
        found = self._copies(self.copies.sealed_events(user_id))
        destroyed = self.keys.destroy(user_id, by)
        first = self.accounts.erase_account(user_id, by, self.copies.logins(user_id))
        self.copies.remove(user_id, email, found)
        return found, not (destroyed or first)

    def _copies(self, stored: Sequence[StoredEvent]) -> Copies:
        messages: list[tuple[UUID, int]] = []
        memories: list[UUID] = []
        attachments: list[str] = []
        for s in stored:
            of_session = s.topic.startswith("domain.session:")
            mapper = self.sessions.mapper if of_session else self.accounts.mapper
            event = mapper.to_domain_event(s)
            match event:
                case S.UserMessageAppended():
                    messages.append((event.originator_id, event.originator_version))
                    attachments.extend(event.attachments)
                case MemoryNamespace.MemoryRemembered() | MemoryNamespace.MemoryUpdated():
                    memories.append(event.memory_id)
                case User.UserRegistered() | User.ProfileChanged():
                    pass  # the user's own aggregate: its snapshot goes with the others
        aggregates = sorted({UUID(str(s.originator_id)) for s in stored}, key=str)
        return Copies(tuple(messages), tuple(memories), tuple(aggregates), tuple(attachments))
