"""Use cases on a user's own account: its profile, and changing its password."""

from __future__ import annotations

from uuid import UUID

from application.account_store import AccountStore
from application.passwords import Passwords, check_password_policy
from domain.account_errors import UserNotFound, WrongPassword
from domain.account_values import UNSET, Unset
from domain.accounts import User


class Profiles(AccountStore):
    """A user's name, avatar and preferences, and its password."""

    _passwords: Passwords

    def change_profile(
        self,
        user_id: UUID,
        *,
        name: str | None = None,
        avatar_url: str | Unset | None = UNSET,
        preferences: dict[str, object] | None = None,
    ) -> User:
        user = self._user(user_id)
        user.change_profile(name, avatar_url, preferences)
        self._save(user)
        return user

    def change_password(self, user_id: UUID, old_password: str, new_password: str) -> None:
        """A new password, given the current one; every login the user has stops being
        able to refresh (their access tokens end with their short lifetime)."""
        user = self._user(user_id)
        check_password_policy(new_password)
        if not self._passwords.verify(user.password_hash, old_password):
            raise WrongPassword()
        user.change_password(self._passwords.hash(new_password))
        self._save(user)

    def _user(self, user_id: UUID) -> User:
        user = self._get(User, user_id)
        if user is None:
            raise UserNotFound()
        return user
