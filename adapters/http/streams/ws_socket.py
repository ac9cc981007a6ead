"""One push socket's sessions: what it follows, what it has been told, what it may see.

Each followed session has a state (`ws_messages.SessionState`: status, version, title),
taken from the session itself when subscribed and moved on by each stored event after
it, in version order: from the process's shared subscription (`PushHub`) while NATS is
there, from the store when a version is missing, when the inbox overflowed, when the
store announces a commit NATS has not brought within `GRACE` (at once while NATS is
away; `StoreTail`), every `POLL_WITHOUT_NATS` seconds while NATS and the tail are
away, and before each quiet `IDLE`. A version is told once, as on the SSE streams.

Rights are asked again every `RECHECK` seconds the way the SSE streams ask them
(`stream_guard.permit`): a session the caller may no longer see is dropped with an
`error` naming it, and nothing more of it is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from uuid import UUID

from adapters.http.deps import Api
from adapters.http.streams.stream_guard import RECHECK, Allowed, permit
from adapters.http.streams.ws_messages import SessionState, push_messages
from adapters.nats.session_feed import CHECK_NATS, Behind, Stored
from adapters.nats.session_hub import Inbox, Overflowed
from application.tokens import Principal
from domain.account_errors import AuthError
from domain.errors import NotFound
from domain.events import SessionEvent
from schemas import ws

POLL_WITHOUT_NATS = 1.0  # seconds between store reads while NATS and the tail are away
IDLE = 15.0  # a quiet socket re-reads the store this often
MAX_SESSIONS = 500  # sessions one socket may follow

Send = Callable[[ws.ServerMessage], Awaitable[None]]


class TooMany(Exception):
    """A subscription past `MAX_SESSIONS`."""


class LoginEnded(Exception):
    """The caller's login or API key is no longer live (logged out, revoked, expired)."""


class PushSocket:
    """The sessions one socket follows (see the module docstring)."""

    def __init__(self, api: Api, principal: Principal, send: Send) -> None:
        self.api = api
        self.hub = api.feed.push
        self.tail = api.feed.tail
        self.principal = principal
        self.send = send
        self.inbox: Inbox[Stored] = Inbox()
        self.hub.attach(self.inbox)  # a shutdown wakes it at once
        self.states: dict[UUID, SessionState] = {}
        self._allowed: dict[UUID, Allowed] = {}
        self._behind: dict[UUID, Behind] = {}
        # Events are applied, and sessions added or dropped, one at a time.
        self._lock = asyncio.Lock()

    async def subscribe(self, session_ids: list[UUID]) -> None:
        """Follow the sessions the caller may see; an `error` for each other one."""
        fresh = [s for s in dict.fromkeys(session_ids) if s not in self.states]
        if len(self.states) + len(fresh) > MAX_SESSIONS:
            raise TooMany(f"a socket follows at most {MAX_SESSIONS} sessions")
        try:  # as a request with its token would be asked (one cached read)
            await self.api.bridge(self.api.accounts.check_live, self.principal)
        except AuthError as e:
            raise LoginEnded(str(e)) from None
        async with self._lock:
            for sid in fresh:
                self.hub.follow(sid, self.inbox)
            await self.hub.subscribe()  # before reading the sessions: no event falls between
            for sid in fresh:
                await self._add(sid)
            await self.send(ws.Subscribed(session_ids=list(self.states)))
            for sid in fresh:
                if sid in self.states:
                    await self.send(self.states[sid].update())

    async def unsubscribe(self, session_ids: list[UUID]) -> None:
        async with self._lock:
            gone = [s for s in dict.fromkeys(session_ids) if s in self.states]
            for sid in gone:
                await self._drop(sid)
            await self.send(ws.Unsubscribed(session_ids=gone))

    async def close(self) -> None:
        for sid in list(self.states):
            await self._drop(sid)
        self.hub.detach(self.inbox)

    async def pump(self) -> None:
        """Push what happens in the followed sessions until the feed closes."""
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        while True:
            item = await self.inbox.get(self._wait())
            if self.inbox.closed:
                return  # shutting down
            async with self._lock:
                if isinstance(item, Stored):
                    await self._arrived(item.event)
                    quiet_since = loop.time()
                elif isinstance(item, Overflowed):
                    await self._catch_up_all()  # messages were dropped for this socket
                elif not self.hub.is_live():
                    await self.hub.subscribe()  # NATS back: before the store read
                    if self.tail is None or not self.tail.live:
                        await self._catch_up_all()
                elif loop.time() - quiet_since >= IDLE:
                    await self._catch_up_all()
                    quiet_since = loop.time()
                await self._catch_up_behind()

    def _wait(self) -> float:
        lefts = [left for b in self._behind.values() if (left := b.left()) is not None]
        if lefts:  # wake when NATS's grace is over for one of them
            return max(0.01, min(*lefts, CHECK_NATS))
        if self.hub.is_live() or (self.tail is not None and self.tail.live):
            return CHECK_NATS
        return POLL_WITHOUT_NATS

    async def _catch_up_behind(self) -> None:
        """Read the sessions whose commits the store announced and NATS has not brought."""
        if self.tail is None:
            return
        live = self.hub.is_live()
        for sid, behind in list(self._behind.items()):
            state = self.states.get(sid)
            if state is not None and behind.due(self.tail.head(sid), state.version, live):
                await self._catch_up(state)

    async def guard(self) -> None:
        """Drop, every `RECHECK` seconds, the sessions the caller may no longer see."""
        while True:
            await asyncio.sleep(RECHECK)
            denied = [sid for sid, allowed in list(self._allowed.items()) if not await allowed()]
            if not denied:
                continue
            async with self._lock:
                gone = [sid for sid in denied if sid in self.states]
                for sid in gone:
                    await self._drop(sid)
                    await self.send(_not_visible(sid))
                await self.send(ws.Unsubscribed(session_ids=gone))

    async def _add(self, sid: UUID) -> None:
        if self.tail is not None:  # before the session is read: no commit falls between
            self.tail.watch(sid)
            self._behind[sid] = Behind()
        try:
            session = await self.api.access.session(self.principal, sid)
        except NotFound:  # unknown, or another tenant's: the same answer
            await self._drop(sid)
            await self.send(_not_visible(sid))
            return
        self.states[sid] = SessionState.of(session)
        self._allowed[sid] = permit(self.api.access, self.principal, sid)

    async def _drop(self, sid: UUID) -> None:
        self.states.pop(sid, None)
        self._allowed.pop(sid, None)
        if self._behind.pop(sid, None) is not None and self.tail is not None:
            self.tail.unwatch(sid)
        await self.hub.unfollow(sid, self.inbox)

    async def _arrived(self, event: SessionEvent) -> None:
        state = self.states.get(event.originator_id)
        if state is None or event.originator_version <= state.version:
            return  # not followed (any more), or told already
        if event.originator_version > state.version + 1:
            await self._catch_up(state)  # a message went missing: the store has it
        else:
            await self._apply(state, event)

    async def _catch_up_all(self) -> None:
        for state in list(self.states.values()):
            await self._catch_up(state)

    async def _catch_up(self, state: SessionState) -> None:
        for event in await self.api.feed.events_after(state.session_id, state.version):
            state = await self._apply(state, event)

    async def _apply(self, state: SessionState, event: SessionEvent) -> SessionState:
        state, messages = push_messages(state, event)
        self.states[state.session_id] = state
        for message in messages:
            await self.send(message)
        return state


def _not_visible(sid: UUID) -> ws.Error:
    return ws.Error(detail=f"no session {sid}", error_code="NOT_FOUND", session_id=sid)
