"""A TypeScript client generated from the OpenAPI document compiles, and types what it uses.

openapi-typescript (the generator) and TypeScript come from web/package.json
(`npm ci --prefix web`, which the README's test command and CI run).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from adapters.http.contract.openapi_document import openapi_text

WEB = Path(__file__).parents[2] / "web"
USES = Path(__file__).parent / "openapi_client" / "uses.ts"
TSC = ["--noEmit", "--strict", "--target", "es2022", "--module", "esnext"]
TSC += ["--moduleResolution", "bundler", "--skipLibCheck", "false"]


def tool(name: str) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(
            "Node.js and npm are not installed: the generated TypeScript client is not checked"
        )
    found = WEB / "node_modules" / ".bin" / name
    if not found.exists():
        pytest.fail(f"{found} is missing: run `npm ci --prefix web`")
    return found


def run(*command: str | Path) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the document's generated types (`api.d.ts`)."""
    generate = tool("openapi-typescript")
    folder = tmp_path_factory.mktemp("client")
    document = folder / "openapi.json"
    document.write_text(openapi_text())
    # Fields with a default are optional in a request (and may be left out of an answer).
    run(generate, document, "--default-non-nullable", "false", "--output", folder / "api.d.ts")
    return folder


def compile_uses(folder: Path, source: str) -> subprocess.CompletedProcess[str]:
    (folder / "uses.ts").write_text(source)
    command = [tool("tsc"), *TSC, folder / "uses.ts"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_generated_typescript_client_compiles(generated: Path) -> None:
    done = compile_uses(generated, USES.read_text())
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_mistyped_use_does_not_compile(generated: Path) -> None:
    done = compile_uses(generated, USES.read_text().replace("session.version", "session.versions"))
    assert done.returncode != 0
    assert "versions" in done.stdout
