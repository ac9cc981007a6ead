"""What a usage report is asked for (group keys, UTC days), checked the same way for
the HTTP API and the `tokendance usage` command."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import cast

from projections.usage_queries import GROUP_KEYS, GroupKey


class UsageParamError(ValueError):
    """A group key or date that cannot be; the message says which and why, `field` the
    parameter (`group_by`, `from`, `to`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def group_keys(raw: str) -> list[GroupKey]:
    """`org,model` -> the keys, in order; unknown or repeated keys are refused."""
    keys = [k.strip() for k in raw.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        raise UsageParamError(
            "group_by", f"group_by takes keys of {', '.join(GROUP_KEYS)}; not {', '.join(unknown)}"
        )
    if len(set(keys)) != len(keys):
        raise UsageParamError("group_by", "group_by names a key twice")
    return cast(list[GroupKey], keys)


def day_range(start: str | None, end: str | None, today: date | None = None) -> tuple[date, date]:
    """UTC days `start`..`end`, inclusive; by default the current month to date."""
    today = today or datetime.now(UTC).date()
    first = _date(start, "from") if start else today.replace(day=1)
    last = _date(end, "to") if end else today
    if first > last:
        raise UsageParamError("from", f"from ({first}) is after to ({last})")
    return first, last


def _date(raw: str, name: str) -> date:
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise UsageParamError(name, f"{name} must be a date, YYYY-MM-DD; not {raw!r}") from None
