"""Cheap copies of aggregates whose state is immutable values.

The repository's cache hands each command a deep copy of the cached aggregate, so a
command that fails leaves the cached one as it was. `copy.deepcopy` walks every value:
a namespace of 10,000 memories took most of a second per command. When an aggregate
holds only immutable values (strings, numbers, UUIDs, datetimes, tuples, frozen
dataclasses) directly or in dicts, lists and sets, a copy with containers of its own
that share those values is just as safe.
"""

from __future__ import annotations

import copy
from typing import Self


class ValueState:
    """Mixed into an aggregate whose state is immutable values and containers of them."""

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        copied = copy.copy(self)
        for name, value in vars(self).items():
            if isinstance(value, dict | list | set):
                vars(copied)[name] = copy.copy(value)
        return copied
