"""The price table as a YAML file: the bundled `prices.yaml`, or an operator's own.

The file is read as YAML nodes rather than Python values, so each rate becomes a
`Decimal` from the text written (`0.30` is `Decimal("0.30")`, never a float) and each
refusal names the file and the line to fix.
"""

from __future__ import annotations

import hashlib
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from domain.pricing import ModelPrice, PriceTable, Rates, Tier

RATE_KEYS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
_TOP_KEYS = frozenset({"version", "models"})
_MODEL_KEYS = frozenset({"match", "tiers", *RATE_KEYS})
_TIER_KEYS = frozenset({"above_input_tokens", *RATE_KEYS})

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"


class PriceFileError(Exception):
    """A price file that cannot be used; the message names the file and the line."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = str(path) if line is None else f"{path} line {line}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.problem = message


def bundled_prices_path() -> Path:
    """The price table shipped with TokenDance."""
    return Path(__file__).with_name("prices.yaml")


def load_prices(path: Path | None = None) -> PriceTable:
    """The price table in the file at `path`; None: the bundled one."""
    path = bundled_prices_path() if path is None else path
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise PriceFileError(path, None, f"cannot be read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise PriceFileError(path, None, f"is not UTF-8 text: {e.reason}") from None
    return parse_prices(text, path)


def parse_prices(text: str, path: Path) -> PriceTable:
    """The price table `text` describes; `path` names the file in errors.

    Without a `version`, the table's version is a digest of the text, so a changed
    file never passes for the old one.
    """
    reader = _Reader(path)
    root = reader.compose(text)
    fields = reader.mapping(root, _TOP_KEYS, "the top level")
    version_node = fields.get("version")
    if version_node is None:
        version = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    else:
        version = reader.version(version_node)
    return PriceTable(version, reader.models(fields.get("models"), root))


class _Reader:
    """Turns one file's YAML nodes into pricing values, refusing with file and line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, node: Node, message: str) -> PriceFileError:
        return PriceFileError(self.path, node.start_mark.line + 1, message)

    def compose(self, text: str) -> Node:
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line = None if mark is None else mark.line + 1
            raise PriceFileError(self.path, line, f"not valid YAML: {e.problem}") from None
        except yaml.YAMLError as e:
            raise PriceFileError(self.path, None, f"not valid YAML: {e}") from None
        if root is None:
            raise PriceFileError(self.path, 1, "the file is empty; it needs a 'models' list")
        return root

    def mapping(self, node: Node, keys: frozenset[str], what: str) -> dict[str, Node]:
        """The values of a mapping by key, refusing keys outside `keys` and repeats."""
        if not isinstance(node, MappingNode):
            raise self.fail(node, f"{what} must be a mapping of keys to values")
        fields: dict[str, Node] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, ScalarNode) and key.tag == _STR else None
            if not isinstance(name, str) or name not in keys:
                known = ", ".join(sorted(keys))
                raise self.fail(key, f"unknown key {key.value!r} in {what} (known: {known})")
            if name in fields:
                raise self.fail(key, f"key {name!r} appears twice in {what}")
            fields[name] = value
        return fields

    def required(self, fields: dict[str, Node], key: str, owner: Node, what: str) -> Node:
        if key not in fields:
            raise self.fail(owner, f"{what} has no {key!r}")
        return fields[key]

    def version(self, node: Node) -> str:
        if not (isinstance(node, ScalarNode) and node.tag == _STR and node.value):
            raise self.fail(node, "'version' must be a non-empty string (quote it)")
        return str(node.value)

    def models(self, node: Node | None, root: Node) -> tuple[ModelPrice, ...]:
        if node is None:
            raise self.fail(root, "the file has no 'models' list")
        if not (isinstance(node, SequenceNode) and node.value):
            raise self.fail(node, "'models' must be a non-empty list of model entries")
        return tuple(self.model(entry) for entry in node.value)

    def model(self, node: Node) -> ModelPrice:
        what = "a model entry"
        fields = self.mapping(node, _MODEL_KEYS, what)
        pattern = self.pattern(self.required(fields, "match", node, what))
        rates = self.rates(fields, node, what)
        return ModelPrice(pattern, rates, self.tiers(fields.get("tiers")))

    def pattern(self, node: Node) -> str:
        if not (isinstance(node, ScalarNode) and node.tag == _STR and node.value):
            raise self.fail(node, "'match' must be a non-empty regular expression (a string)")
        try:
            re.compile(node.value)
        except re.error as e:
            raise self.fail(node, f"'match' is not a valid regular expression: {e}") from None
        return str(node.value)

    def tiers(self, node: Node | None) -> tuple[Tier, ...]:
        if node is None:
            return ()
        if not isinstance(node, SequenceNode):
            raise self.fail(node, "'tiers' must be a list of tiers")
        tiers: list[Tier] = []
        for entry in node.value:
            fields = self.mapping(entry, _TIER_KEYS, "a tier")
            threshold_node = self.required(fields, "above_input_tokens", entry, "a tier")
            threshold = self.threshold(threshold_node)
            if tiers and threshold <= tiers[-1].above_input_tokens:
                previous = tiers[-1].above_input_tokens
                raise self.fail(
                    threshold_node,
                    f"tier 'above_input_tokens' {threshold} must be above the previous "
                    f"tier's {previous}",
                )
            tiers.append(Tier(threshold, self.rates(fields, entry, "a tier")))
        return tuple(tiers)

    def threshold(self, node: Node) -> int:
        value = _integer(node)
        if value is None or value <= 0:
            raise self.fail(node, "'above_input_tokens' must be a positive whole number")
        return value

    def rates(self, fields: dict[str, Node], owner: Node, what: str) -> Rates:
        values = [self.rate(k, self.required(fields, k, owner, what)) for k in RATE_KEYS]
        return Rates(*values)

    def rate(self, key: str, node: Node) -> Decimal:
        value = _number(node)
        if value is None or value < 0:
            raise self.fail(node, f"rate {key!r} must be a non-negative number")
        return value


def _integer(node: Node) -> int | None:
    """A YAML integer scalar's value (hex, octal and `1_000` included), else None."""
    if not (isinstance(node, ScalarNode) and node.tag == _INT):
        return None
    return SafeConstructor().construct_yaml_int(node)


def _number(node: Node) -> Decimal | None:
    """A YAML number scalar's exact value, from its text; None for anything else."""
    whole = _integer(node)
    if whole is not None:
        return Decimal(whole)
    if not (isinstance(node, ScalarNode) and node.tag == _FLOAT):
        return None
    try:
        value = Decimal(str(node.value))
    except InvalidOperation:  # .inf, .nan, 1:30.5
        return None
    return value if value.is_finite() else None
