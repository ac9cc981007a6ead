"""`scripts/setup`: its dry run installs nothing and says what it would do; without root
or network it names what it could not install and what follows, and it fails only when
Python itself cannot be set up.

Each test runs a copy of the script in a temporary tree (the script works on the tree it
sits in), most with a PATH of stand-ins: `id` says who we are, `sudo` and `apt-get` fail
as they do without a password or a network, and the tools a fresh machine lacks are simply
not on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash") or "/bin/bash"
PYTHON = os.path.realpath(sys.executable)  # the interpreter behind .venv: a fresh Python


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what the script reads: itself, pyproject.toml and the lock files."""
    copy = tmp_path / "tree"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup", copy / "scripts" / "setup")
    for name in ("pyproject.toml", "requirements.lock", "requirements-test.lock"):
        shutil.copy2(ROOT / name, copy / name)
    return copy


def stand_ins(directory: Path, *, uid: int, python: bool = True) -> Path:
    """A PATH directory: `id -u` says `uid`, `sudo -n` and `apt-get` fail (no password,
    no network), `env` and (if `python`) `python3` are the real ones, and nothing else
    (no bwrap, socat, soffice, node, npm, make, chromium)."""
    directory.mkdir()
    scripts = {
        "id": f"#!{BASH}\necho {uid}\n",
        "sudo": f"#!{BASH}\necho 'sudo: a password is required' >&2\nexit 1\n",
        "apt-get": f"#!{BASH}\necho 'E: Could not resolve deb.debian.org' >&2\nexit 100\n",
    }
    for name, text in scripts.items():
        (directory / name).write_text(text)
        (directory / name).chmod(0o755)
    (directory / "env").symlink_to(shutil.which("env") or "/usr/bin/env")
    if python:
        (directory / "python3").symlink_to(PYTHON)
    return directory


def run(tree: Path, *args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    environ |= {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}  # no package index
    if path is not None:
        environ["PATH"] = str(path)
    return subprocess.run(
        [BASH, str(tree / "scripts" / "setup"), *args],
        capture_output=True, text=True, env=environ, stdin=subprocess.DEVNULL, timeout=240,
    )  # fmt: skip


def test_the_dry_run_says_what_it_would_do_and_installs_nothing(tree: Path) -> None:
    done = run(tree, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would run: .venv/bin/python -m pip install uv==" in done.stdout
    assert "would run: .venv/bin/uv pip install --require-hashes -r requirements.lock" in (
        done.stdout
    )
    assert "uv pip install -e '.[embedded]'" in done.stdout
    assert "dry run: nothing was installed" in done.stdout
    assert not (tree / ".venv").exists()
    assert not (tree / "web").exists()


def test_the_dry_run_with_test_uses_the_test_lock(tree: Path) -> None:
    done = run(tree, "--test", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "-r requirements-test.lock" in done.stdout
    assert "uv pip install -e '.[test]'" in done.stdout
    assert not (tree / ".venv").exists()


def test_an_unknown_option_is_refused_with_the_usage(tree: Path) -> None:
    done = run(tree, "--tset")
    assert done.returncode == 2
    assert "unknown option --tset" in done.stderr
    assert "usage: scripts/setup" in done.stderr


def test_without_root_it_names_each_missing_package_and_what_follows(
    tree: Path, tmp_path: Path
) -> None:
    done = run(tree, "--test", "--dry-run", path=stand_ins(tmp_path / "bin", uid=1000))
    assert done.returncode == 0, done.stderr
    said = done.stderr
    why = "(not root and no password-less sudo)"
    assert f"cannot install bubblewrap socat {why}" in said
    assert said.count("cannot install bubblewrap socat") == 1  # one line for the pair
    assert "code_execute will say the sandbox is unavailable" in said
    assert f"cannot install libreoffice-impress {why}" in said
    assert "PDF export answers 501" in said
    assert f"cannot install nodejs npm {why}" in said
    assert "the web app is not built" in said
    assert f"cannot install chromium {why}" in said
    assert "the browser tests are skipped" in said
    assert f"cannot install make {why}" in said
    assert "apt-get update" not in done.stdout  # nothing it could not do is offered
    assert not (tree / ".venv").exists()


def test_without_network_it_says_what_it_could_not_install_and_fails_on_python(
    tree: Path, tmp_path: Path
) -> None:
    done = run(tree, "--no-web", path=stand_ins(tmp_path / "bin", uid=0))
    said = done.stderr
    assert done.returncode == 1, said
    assert done.stdout.count("apt-get update") == 1  # tried once, for all the packages
    assert "apt-get update failed (no network?)" in said
    sandbox = "code_execute will say the sandbox is unavailable"
    assert f"could not install bubblewrap socat: {sandbox}" in said
    assert "could not install libreoffice-impress: slide previews come without thumbnails" in said
    assert "could not install uv" in said  # then pip, which has no network either
    assert "could not install the Python packages in requirements.lock (no network to PyPI?)" in (
        said
    )
    assert said.rstrip().endswith("Python could not be set up: nothing runs without it.")


def test_without_python_it_fails_saying_so(tree: Path, tmp_path: Path) -> None:
    done = run(tree, path=stand_ins(tmp_path / "bin", uid=1000, python=False))
    assert done.returncode == 1
    assert "cannot install python3 python3-venv (not root and no password-less sudo)" in (
        done.stderr
    )
    assert "python3 is missing, older than 3.11, or has no venv module" in done.stderr
    assert "Python could not be set up" in done.stderr
    assert not (tree / ".venv").exists()
