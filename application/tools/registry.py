"""Finds the tools, validates what the model asks of them, and lists them for it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable

import msgspec

import application.tools as package
from application.tools.base import Tool
from domain.conversation import ToolSpec


class ToolRejected(Exception):
    """The model asked for a tool that does not exist or sent arguments it does not take."""


class ToolRegistry:
    """The tools of a deployment, by name; their specs in a fixed order."""

    def __init__(self, tools: Iterable[Tool[msgspec.Struct]]) -> None:
        self._tools = {t.name: t for t in tools}
        self._specs = tuple(self._tools[name].spec() for name in sorted(self._tools))

    @classmethod
    def discover(cls, *extra: Tool[msgspec.Struct]) -> ToolRegistry:
        """Every concrete `Tool` in the `application.tools` package, plus `extra`.

        Adding a tool is adding one module there.
        """
        found: list[Tool[msgspec.Struct]] = []
        for module_info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{module_info.name}")
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(obj, Tool)
                    and not inspect.isabstract(obj)
                    and obj.__module__ == module.__name__
                ):
                    found.append(obj())
        return cls([*found, *extra])

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    def get(self, name: str) -> Tool[msgspec.Struct]:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self.names)
            raise ToolRejected(f"unknown tool {name!r}; the tools are: {known}") from None

    def parse(
        self, name: str, raw: dict[str, object]
    ) -> tuple[Tool[msgspec.Struct], msgspec.Struct]:
        """The tool and its validated arguments, or `ToolRejected` saying what is wrong."""
        tool = self.get(name)
        try:
            return tool, msgspec.convert(raw, tool.Args)
        except msgspec.ValidationError as e:
            raise ToolRejected(f"invalid arguments for {name}: {e}") from None
