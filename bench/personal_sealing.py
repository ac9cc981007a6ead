"""What sealing personal fields costs the mapper: encode + decode of a user message.

python -m bench.personal_sealing

A ~1 KB user message is mapped to its stored form and back, with the sessions'
mapper sealing its text with the author's key (AES-256-GCM, the key cached) and with
the same mapper given no keys, alternating rounds in one run. Prints microseconds per
event for both and their ratio. The key store is in memory: a key's load from Postgres
happens once per user per `TTL` seconds and is not in this figure.
"""

from __future__ import annotations

import os
import time
from uuid import uuid4

from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.config.secrets import Sealer
from adapters.personal_keys import InMemoryKeyStore, UserKeys
from bench.harness import cores, median
from domain.session import AgentSession as S

MESSAGE = ("The quick brown fox jumps over the lazy dog. " * 23)[:1000]
EVENTS, ROUNDS = 2000, 9


def main() -> None:
    app = in_memory_sessions()
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="bench").session_id
    app.append_user_message(sid, MESSAGE)
    (event,) = [e for e in app.session_events(sid) if isinstance(e, S.UserMessageAppended)]
    mapper = app.mapper
    keys = UserKeys(InMemoryKeyStore(), Sealer(os.urandom(32)))

    def per_event(sealed: bool) -> float:
        mapper.keys = keys if sealed else None
        t = time.perf_counter()
        for _ in range(EVENTS):
            back = mapper.to_domain_event(mapper.to_stored_event(event))
        elapsed = time.perf_counter() - t
        assert isinstance(back, S.UserMessageAppended) and back.text == MESSAGE
        return elapsed / EVENTS * 1e6

    plain, sealed = [], []
    for _ in range(ROUNDS):
        plain.append(per_event(False))
        sealed.append(per_event(True))
    p, s = median(plain), median(sealed)
    print(f"personal sealing, {cores()} cores, {EVENTS} events x {ROUNDS} rounds")
    print(f"  encode+decode, plain : {p:7.1f} us/event")
    print(f"  encode+decode, sealed: {s:7.1f} us/event  (+{s - p:.1f} us, {s / p:.2f}x)")


if __name__ == "__main__":
    main()
