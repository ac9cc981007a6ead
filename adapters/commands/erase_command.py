"""`tokendance erase USER`: the operator erases a user (`application.erasure`)."""

from __future__ import annotations

import asyncio
from typing import TextIO
from uuid import UUID

from adapters.system import System
from domain.accounts import User
from domain.errors import NotFound

OK, NOT_FOUND = 0, 2


def run_erase(system: System, user: str, out: TextIO, err: TextIO) -> int:
    """Erase the user with this id or email; the exit status (2: no such user)."""
    try:
        user_id = UUID(user)
    except ValueError:
        user_id = User.id_for(user.strip().lower())
    try:
        done = asyncio.run(system.container.erasure.erase(user_id, None))
    except NotFound:
        print(f"tokendance erase: no user {user}", file=err)
        return NOT_FOUND
    what = (
        f"{done.messages} message(s), {done.memories} memory record(s), "
        f"{done.blobs} attached blob(s)"
    )
    if done.already:
        print(f"user {user_id} was erased already; its copies were removed again ({what})",
              file=out)  # fmt: skip
    else:
        print(f"erased user {user_id}: {what}; its key is destroyed", file=out)
    return OK
