"""`tokendance usage`: the usage read model's figures as a table, for an operator
(every organization; the same figures `GET /api/v1/usage` gives)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import date

from adapters.commands.usage_params import UsageParamError, day_range, group_keys
from domain.pricing import usd_text
from projections.usage_queries import (
    COLUMNS,
    Figures,
    GroupKey,
    UsageFilter,
    UsageGroup,
    UsageQueries,
    Visibility,
)

NUMBERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
           "cost_usd", "calls", "unpriced_calls")  # fmt: skip


def report(queries: UsageQueries, args: argparse.Namespace) -> str:
    """The table the arguments ask for; exits naming a bad key or date."""
    try:
        keys = group_keys(args.group_by)
        first, last = day_range(args.start, args.end)
    except UsageParamError as e:
        sys.exit(f"tokendance usage: {e}")
    where = UsageFilter(first, last, args.workspace_id, args.user_id, args.model)
    groups = queries.usage(Visibility.operator(), where, keys)
    return table(keys, groups, first, last)


def table(keys: Sequence[GroupKey], groups: Sequence[UsageGroup], first: date, last: date) -> str:
    """Aligned columns: the group keys, then the figures; a totals line at the end."""
    names = [COLUMNS[k][1] for k in keys]
    rows = [[_text(g.keys[n]) for n in names] + _numbers(g.figures) for g in groups]
    totals = sum((g.figures for g in groups), Figures())
    rows.append(["total"] + [""] * (len(names) - 1) + _numbers(totals) if names else
                _numbers(totals))  # fmt: skip
    header = [*names, *NUMBERS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"usage {first} .. {last} (UTC)"]
    for r in [header, *rows]:
        cells = [c.ljust(w) if i < len(names) else c.rjust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=True))]  # fmt: skip
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _numbers(f: Figures) -> list[str]:
    return [f"{f.input_tokens:,}", f"{f.output_tokens:,}", f"{f.cache_read_tokens:,}",
            f"{f.cache_write_tokens:,}", usd_text(f.cost_usd), f"{f.calls:,}",
            f"{f.unpriced_calls:,}"]  # fmt: skip


def _text(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)
