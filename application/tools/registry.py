"""The tools of a deployment: validates what the model asks of them, and lists them for it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from application.tools.base import AnyTool
from domain.conversation import ToolSpec


class ToolRejected(Exception):
    """The model asked for a tool that does not exist or sent arguments it does not take."""


class ToolRegistry:
    """Tool instances (their ports already injected), by name; their specs in a fixed order."""

    def __init__(self, tools: Iterable[AnyTool]) -> None:
        self._tools: dict[str, AnyTool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"two tools are called {tool.name!r}")
            self._tools[tool.name] = tool
        self._specs = tuple(self._tools[name].spec() for name in sorted(self._tools))

    def __iter__(self) -> Iterator[AnyTool]:
        """The tools in name order (so a registry can seed another one)."""
        return (self._tools[name] for name in self.names)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    def get(self, name: str) -> AnyTool:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self.names)
            raise ToolRejected(f"unknown tool {name!r}; the tools are: {known}") from None

    def parse(self, name: str, raw: dict[str, object]) -> tuple[AnyTool, msgspec.Struct]:
        """The tool and its validated arguments, or `ToolRejected` saying what is wrong."""
        tool = self.get(name)
        try:
            return tool, msgspec.convert(raw, tool.Args)
        except msgspec.ValidationError as e:
            raise ToolRejected(f"invalid arguments for {name}: {e}") from None
