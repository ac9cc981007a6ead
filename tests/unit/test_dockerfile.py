"""The Dockerfile, read without a Docker engine: its base images pinned to published
versions, a slim and a full runtime that run as a user, the dependencies in a layer of
their own before the code, a build context without what the image never needs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator

from tests.unit.test_deploy_files import DEPLOY, ROOT, image_problems

DOCKERFILE = ROOT / "Dockerfile"


def dockerfile_stages() -> Iterator[tuple[str, str, list[str]]]:
    """(base, stage name, its instructions) per FROM, with ARG defaults put in."""
    args: dict[str, str] = {}
    stage: tuple[str, str, list[str]] | None = None
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "ARG" and stage is None and "=" in rest:
            key, _, value = rest.partition("=")
            args[key.strip()] = value.strip()
        elif word.upper() == "FROM":
            if stage is not None:
                yield stage
            parts = re.sub(r"--platform=\S+\s+", "", rest).split()
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), parts[0])
            name = parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else ""
            stage = (base, name, [])
        elif stage is not None:
            stage[2].append(line)
    if stage is not None:
        yield stage


def test_the_dockerfile_base_images_are_pinned() -> None:
    stages = list(dockerfile_stages())
    names = set()
    for base, name, _ in stages:
        if base not in names:
            assert "$" not in base, f"FROM {base}: an ARG without a default"
            assert image_problems(base, built=False) == [], base
        names.add(name)
    python = [b for b, _, _ in stages if b.startswith("python:")]
    assert python and all(re.match(r"python:3\.11\.\d+-slim", b) for b in python)


def test_the_dockerfile_has_a_slim_and_a_full_runtime_as_a_user() -> None:
    stages = {name: (base, lines) for base, name, lines in dockerfile_stages()}
    last = list(stages)[-1]
    assert last == "full", "the default target (the last stage) is the full image"
    base_lines = stages["base"][1]
    assert any(line.startswith("HEALTHCHECK") and "/readiness" in line for line in base_lines)
    for name in ("slim", "full"):
        lines = stages[name][1]
        users = [line.split()[1] for line in lines if line.startswith("USER ")]
        assert users and users[-1] not in ("root", "0"), f"{name} runs as root"
        assert any("/app/web/dist" in line for line in lines), f"{name} lacks the web app"
    full = " ".join(stages["full"][1])
    for package in ("bubblewrap", "socat", "libreoffice-impress", "--no-install-recommends"):
        assert package in full
    assert "libreoffice" not in " ".join(stages["slim"][1] + base_lines).replace("LibreOffice", "")


def test_the_dependencies_are_installed_before_the_code_is_copied() -> None:
    build = next(lines for _, name, lines in dockerfile_stages() if name == "build")
    text = "\n".join(build)
    deps = text.index("pip install --require-hashes -r /tmp/deps/requirements-deploy.lock")
    assert text.index("COPY requirements-deploy.lock") < deps
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for package in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]:
        folder = package.rstrip("*")
        assert f"COPY {folder} {folder}" in text, f"the image lacks {folder}/"
        assert text.index(f"COPY {folder} {folder}") > deps


def test_the_build_context_leaves_out_what_the_image_never_needs() -> None:
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".git", ".venv", "web/node_modules", "web/dist", ".env"):
        assert entry in ignored


def test_the_dependency_layer_lists_the_extras_asked_for() -> None:
    script = DEPLOY / "pyproject_requirements.py"
    pyproject = ROOT / "pyproject.toml"

    def run(*extras: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(script), str(pyproject), *extras]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)

    only_voyage = run("--extras-only", "voyage")
    assert only_voyage.returncode == 0, only_voyage.stderr
    assert [r.split(">")[0] for r in only_voyage.stdout.split()] == ["voyageai"]
    plain, with_s3 = run(), run("s3")
    assert plain.returncode == 0 and with_s3.returncode == 0, with_s3.stderr
    base = plain.stdout.split()
    assert any(r.startswith("litestar") for r in base)
    assert not any(r.startswith("minio") for r in base)
    assert any(r.startswith("minio") for r in with_s3.stdout.split())
    assert not any(r.startswith("tokendance") for r in run("test").stdout.split())
    missing = run("no-such-extra")
    assert missing.returncode != 0 and "no-such-extra" in missing.stderr
