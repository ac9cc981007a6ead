"""An owner or admin erases a member's personal data (`application.erasure`; oneself:
`DELETE /api/v1/auth/me`, in `adapters.http.routes.profile`)."""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, delete
from litestar.params import FromPath
from litestar.status_codes import HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from domain.account_errors import Forbidden


class ErasureController(Controller):
    path = "/api/v1/users"
    tags = ["auth"]

    @delete("/{user_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def erase_user(self, user_id: FromPath[UUID], request: Caller, api: ApiDep) -> None:
        """Erase a member (an owner or admin of one of its organizations), as `DELETE
        /api/v1/auth/me` does. Erasing an erased user again answers 204."""
        if request.user.api_key_id is not None:
            raise Forbidden("an API key cannot erase a user; log in to do it")
        caller = request.user.user_id
        await api.bridge(api.erasure.check_may_erase, caller, user_id)
        await api.erasure.erase(user_id, caller)
