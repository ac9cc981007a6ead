"""Settings, read once from environment variables (command-line flags override)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from ipaddress import ip_address, ip_network
from pathlib import Path

from adapters.config.env_vars import DOCUMENTED
from adapters.config.origins import parse_origins
from domain.conversation import CacheTtl
from domain.errors import InvalidCommand, InvalidValue
from domain.model_names import parse_model_name
from domain.values import check_thinking_budget
from sandbox.proxy import valid_pattern


def _default(name: str) -> str:
    return DOCUMENTED[name][0]


# The embedder without TOKENDANCE_EMBEDDER or VOYAGE_API_KEY (see `default_embedder`).
DEFAULT_EMBEDDER = "wordllama"
# The web client's build without TOKENDANCE_WEB_DIR: `web/dist` of this repository.
WEB_DIST = Path(__file__).resolve().parents[2] / "web" / "dist"


@dataclass(frozen=True)
class Settings:
    """Everything the process is configured with."""

    data_dir: Path = field(default_factory=lambda: Path(_default("TOKENDANCE_DATA_DIR")))
    host: str = _default("TOKENDANCE_HOST")
    port: int = int(_default("TOKENDANCE_PORT"))
    database_url: str | None = None
    api_database_url: str | None = None  # the API role's login (row-level security)
    nats_url: str | None = None
    nats_stream: str = _default("TOKENDANCE_NATS_STREAM")
    db_pool_size: int = int(_default("TOKENDANCE_DB_POOL_SIZE"))
    db_max_overflow: int = int(_default("TOKENDANCE_DB_MAX_OVERFLOW"))
    store_threads: int = int(_default("TOKENDANCE_STORE_THREADS"))
    db_async_pool_size: int = int(_default("TOKENDANCE_DB_ASYNC_POOL_SIZE"))
    db_async_timeout: int = int(_default("TOKENDANCE_DB_ASYNC_TIMEOUT"))
    log_level: str = _default("TOKENDANCE_LOG_LEVEL")
    log_format: str = _default("TOKENDANCE_LOG_FORMAT")
    llm: str | None = None
    model: str = _default("TOKENDANCE_MODEL")
    model_fallback: tuple[str, ...] = ()
    openai_api: str = _default("TOKENDANCE_OPENAI_API")
    max_tokens: int = int(_default("TOKENDANCE_MAX_TOKENS"))
    thinking_budget: int = int(_default("TOKENDANCE_THINKING_BUDGET"))
    context_window: int = int(_default("TOKENDANCE_CONTEXT_WINDOW"))
    max_iterations: int = int(_default("TOKENDANCE_MAX_ITERATIONS"))
    jwt_secret: str | None = None
    access_ttl: int = int(_default("TOKENDANCE_ACCESS_TTL"))
    invitation_ttl: int = int(_default("TOKENDANCE_INVITATION_TTL"))
    rate_limit_per_minute: int = int(_default("TOKENDANCE_RATE_LIMIT_PER_MINUTE"))
    max_streams_per_user: int = int(_default("TOKENDANCE_MAX_STREAMS_PER_USER"))
    uploads_per_minute: int = int(_default("TOKENDANCE_UPLOADS_PER_MINUTE"))
    login_attempts: int = int(_default("TOKENDANCE_LOGIN_ATTEMPTS"))
    cors_origins: tuple[str, ...] = ()
    trusted_proxies: tuple[str, ...] = ()
    max_upload_bytes: int = int(_default("TOKENDANCE_MAX_UPLOAD_BYTES"))
    s3_url: str | None = None
    s3_bucket: str = _default("TOKENDANCE_S3_BUCKET")
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    shutdown_grace: int = int(_default("TOKENDANCE_SHUTDOWN_GRACE"))
    approval_wait: int = int(_default("TOKENDANCE_APPROVAL_WAIT"))
    prices: Path | None = None
    cache_ttl: CacheTtl = "5m"
    alert_webhook: str | None = None
    alert_webhook_secret: str | None = None
    tavily_api_key: str | None = None
    tavily_url: str | None = None
    fetch_allow: str = ""
    skills_dir: Path | None = None
    embedder: str = DEFAULT_EMBEDDER
    skill_match_threshold: float = float(_default("TOKENDANCE_SKILL_MATCH_THRESHOLD"))
    sandbox: str = _default("TOKENDANCE_SANDBOX")
    sandbox_timeout: int = int(_default("TOKENDANCE_SANDBOX_TIMEOUT"))
    sandbox_max_timeout: int = int(_default("TOKENDANCE_SANDBOX_MAX_TIMEOUT"))
    sandbox_memory_mb: int = int(_default("TOKENDANCE_SANDBOX_MEMORY_MB"))
    sandbox_processes: int = int(_default("TOKENDANCE_SANDBOX_PROCESSES"))
    sandbox_allow_domains: tuple[str, ...] = ()
    sandbox_image: str = _default("TOKENDANCE_SANDBOX_IMAGE")
    soffice: str | None = None
    worker_concurrency: int = int(_default("TOKENDANCE_WORKER_CONCURRENCY"))
    run_ack_wait: int = int(_default("TOKENDANCE_RUN_ACK_WAIT"))
    run_max_deliveries: int = int(_default("TOKENDANCE_RUN_MAX_DELIVERIES"))
    run_sweep: int = int(_default("TOKENDANCE_RUN_SWEEP"))
    web_dir: Path = WEB_DIST
    mcp_servers_file: Path | None = None
    mcp_timeout: int = int(_default("TOKENDANCE_MCP_TIMEOUT"))
    master_key: str | None = None
    master_key_file: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ

        def get(name: str) -> str:
            value = env.get(name, "").strip()
            return value or _default(name)

        return cls(
            data_dir=Path(get("TOKENDANCE_DATA_DIR")),
            host=get("TOKENDANCE_HOST"),
            port=_int(get("TOKENDANCE_PORT"), "TOKENDANCE_PORT"),
            database_url=env.get("TOKENDANCE_DATABASE_URL") or None,
            api_database_url=env.get("TOKENDANCE_API_DATABASE_URL") or None,
            nats_url=env.get("TOKENDANCE_NATS_URL") or None,
            nats_stream=get("TOKENDANCE_NATS_STREAM"),
            db_pool_size=_int(get("TOKENDANCE_DB_POOL_SIZE"), "TOKENDANCE_DB_POOL_SIZE"),
            db_max_overflow=_int(get("TOKENDANCE_DB_MAX_OVERFLOW"), "TOKENDANCE_DB_MAX_OVERFLOW"),
            store_threads=_limit(get("TOKENDANCE_STORE_THREADS"), "TOKENDANCE_STORE_THREADS"),
            db_async_pool_size=_limit(
                get("TOKENDANCE_DB_ASYNC_POOL_SIZE"), "TOKENDANCE_DB_ASYNC_POOL_SIZE"
            ),
            db_async_timeout=_limit(
                get("TOKENDANCE_DB_ASYNC_TIMEOUT"), "TOKENDANCE_DB_ASYNC_TIMEOUT"
            ),
            log_level=_choice(
                get("TOKENDANCE_LOG_LEVEL").upper(), "TOKENDANCE_LOG_LEVEL", LOG_LEVELS
            ),
            log_format=_choice(get("TOKENDANCE_LOG_FORMAT"), "TOKENDANCE_LOG_FORMAT", LOG_FORMATS),
            llm=env.get("TOKENDANCE_LLM") or None,
            model=_model(get("TOKENDANCE_MODEL"), "TOKENDANCE_MODEL"),
            model_fallback=tuple(
                _model(m.strip(), "TOKENDANCE_MODEL_FALLBACK")
                for m in env.get("TOKENDANCE_MODEL_FALLBACK", "").split(",")
                if m.strip()
            ),
            openai_api=_openai_api(get("TOKENDANCE_OPENAI_API")),
            mcp_servers_file=_optional_path(env.get("TOKENDANCE_MCP_SERVERS")),
            mcp_timeout=_seconds(get("TOKENDANCE_MCP_TIMEOUT"), "TOKENDANCE_MCP_TIMEOUT"),
            master_key=env.get("TOKENDANCE_MASTER_KEY", "").strip() or None,
            master_key_file=_optional_path(env.get("TOKENDANCE_MASTER_KEY_FILE")),
            max_tokens=_int(get("TOKENDANCE_MAX_TOKENS"), "TOKENDANCE_MAX_TOKENS"),
            thinking_budget=_thinking_budget(get),
            context_window=_int(get("TOKENDANCE_CONTEXT_WINDOW"), "TOKENDANCE_CONTEXT_WINDOW"),
            max_iterations=_int(get("TOKENDANCE_MAX_ITERATIONS"), "TOKENDANCE_MAX_ITERATIONS"),
            jwt_secret=env.get("TOKENDANCE_JWT_SECRET") or None,
            access_ttl=_int(get("TOKENDANCE_ACCESS_TTL"), "TOKENDANCE_ACCESS_TTL"),
            invitation_ttl=_limit(get("TOKENDANCE_INVITATION_TTL"), "TOKENDANCE_INVITATION_TTL"),
            rate_limit_per_minute=_limit(
                get("TOKENDANCE_RATE_LIMIT_PER_MINUTE"), "TOKENDANCE_RATE_LIMIT_PER_MINUTE"
            ),
            max_streams_per_user=_limit(
                get("TOKENDANCE_MAX_STREAMS_PER_USER"), "TOKENDANCE_MAX_STREAMS_PER_USER"
            ),
            uploads_per_minute=_limit(
                get("TOKENDANCE_UPLOADS_PER_MINUTE"), "TOKENDANCE_UPLOADS_PER_MINUTE"
            ),
            login_attempts=_limit(get("TOKENDANCE_LOGIN_ATTEMPTS"), "TOKENDANCE_LOGIN_ATTEMPTS"),
            cors_origins=_origins(env.get("TOKENDANCE_CORS_ORIGINS", "")),
            trusted_proxies=_proxies(env.get("TOKENDANCE_TRUSTED_PROXIES", "")),
            max_upload_bytes=_limit(
                get("TOKENDANCE_MAX_UPLOAD_BYTES"), "TOKENDANCE_MAX_UPLOAD_BYTES"
            ),
            s3_url=_s3_url(env),
            s3_bucket=get("TOKENDANCE_S3_BUCKET"),
            s3_access_key=env.get("TOKENDANCE_S3_ACCESS_KEY", "").strip() or None,
            s3_secret_key=env.get("TOKENDANCE_S3_SECRET_KEY", "").strip() or None,
            shutdown_grace=_seconds(get("TOKENDANCE_SHUTDOWN_GRACE"), "TOKENDANCE_SHUTDOWN_GRACE"),
            approval_wait=_seconds(get("TOKENDANCE_APPROVAL_WAIT"), "TOKENDANCE_APPROVAL_WAIT"),
            prices=Path(env["TOKENDANCE_PRICES"]) if env.get("TOKENDANCE_PRICES") else None,
            cache_ttl=_cache_ttl(get("TOKENDANCE_CACHE_TTL")),
            alert_webhook=env.get("TOKENDANCE_ALERT_WEBHOOK") or None,
            alert_webhook_secret=_webhook_secret(env),
            tavily_api_key=env.get("TAVILY_API_KEY", "").strip() or None,
            tavily_url=env.get("TOKENDANCE_TAVILY_URL") or None,
            fetch_allow=env.get("TOKENDANCE_FETCH_ALLOW", ""),
            skills_dir=Path(env["TOKENDANCE_SKILLS_DIR"])
            if env.get("TOKENDANCE_SKILLS_DIR")
            else None,
            embedder=_embedder(env),
            skill_match_threshold=_fraction(
                get("TOKENDANCE_SKILL_MATCH_THRESHOLD"), "TOKENDANCE_SKILL_MATCH_THRESHOLD"
            ),
            sandbox=_choice(get("TOKENDANCE_SANDBOX"), "TOKENDANCE_SANDBOX", SANDBOXES),
            sandbox_timeout=_limit(get("TOKENDANCE_SANDBOX_TIMEOUT"), "TOKENDANCE_SANDBOX_TIMEOUT"),
            sandbox_max_timeout=_limit(
                get("TOKENDANCE_SANDBOX_MAX_TIMEOUT"), "TOKENDANCE_SANDBOX_MAX_TIMEOUT"
            ),
            sandbox_memory_mb=_limit(
                get("TOKENDANCE_SANDBOX_MEMORY_MB"), "TOKENDANCE_SANDBOX_MEMORY_MB"
            ),
            sandbox_processes=_limit(
                get("TOKENDANCE_SANDBOX_PROCESSES"), "TOKENDANCE_SANDBOX_PROCESSES"
            ),
            sandbox_allow_domains=_domains(env.get("TOKENDANCE_SANDBOX_ALLOW_DOMAINS", "")),
            sandbox_image=get("TOKENDANCE_SANDBOX_IMAGE"),
            soffice=get("TOKENDANCE_SOFFICE") or None,
            worker_concurrency=_limit(
                get("TOKENDANCE_WORKER_CONCURRENCY"), "TOKENDANCE_WORKER_CONCURRENCY"
            ),
            run_ack_wait=_limit(get("TOKENDANCE_RUN_ACK_WAIT"), "TOKENDANCE_RUN_ACK_WAIT"),
            run_max_deliveries=_limit(
                get("TOKENDANCE_RUN_MAX_DELIVERIES"), "TOKENDANCE_RUN_MAX_DELIVERIES"
            ),
            run_sweep=_limit(get("TOKENDANCE_RUN_SWEEP"), "TOKENDANCE_RUN_SWEEP"),
            web_dir=_optional_path(env.get("TOKENDANCE_WEB_DIR", "").strip()) or WEB_DIST,
        )

    def override(self, **changes: object) -> Settings:
        """A copy with the given fields replaced; `None` values leave a field as it is."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]

    def signing_secret(self) -> str:
        """The JWT secret: the configured one, or one made once and kept in the data dir."""
        if self.jwt_secret:
            if len(self.jwt_secret.encode()) < 32:
                raise SystemExit("TOKENDANCE_JWT_SECRET must be at least 32 bytes")
            return self.jwt_secret
        path = self.data_dir / "jwt-secret"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(48))
            path.chmod(0o600)
        return path.read_text().strip()

    @property
    def nats_accounts_stream(self) -> str:
        """The stream of the accounts' log: its notification ids are a sequence of their
        own, so they never share a dedup window or a predecessor chain with the sessions'."""
        return f"{self.nats_stream}_ACCOUNTS"

    @property
    def nats_runs_stream(self) -> str:
        """The work-queue stream of run requests (one message per run to drive)."""
        return f"{self.nats_stream}_RUNS"

    @property
    def thread_pool_size(self) -> int:
        """The bridge's threads: never more than the connections, so a burst of calls
        queues for a thread rather than for a connection while holding a thread."""
        return max(1, min(self.store_threads, self.db_pool_size + self.db_max_overflow))


SANDBOXES = ("bubblewrap", "docker")
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
EMBEDDERS = ("wordllama", "hashing", "voyage")


def default_embedder(env: Mapping[str, str]) -> str:
    """The embedder when none is configured: Voyage AI's once its key is given (a key is
    set to be used), else the local model, which needs no account."""
    if env.get("VOYAGE_API_KEY", "").strip() and not env.get("TOKENDANCE_EMBEDDER", "").strip():
        return "voyage"
    return DEFAULT_EMBEDDER


def _embedder(env: Mapping[str, str]) -> str:
    name = env.get("TOKENDANCE_EMBEDDER", "").strip() or default_embedder(env)
    _choice(name, "TOKENDANCE_EMBEDDER", EMBEDDERS)
    if name == "voyage" and not env.get("VOYAGE_API_KEY", "").strip():
        raise SystemExit("VOYAGE_API_KEY must be set with TOKENDANCE_EMBEDDER=voyage")
    return name


def _choice(value: str, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise SystemExit(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def _thinking_budget(get: Callable[[str], str]) -> int:
    budget = _int(get("TOKENDANCE_THINKING_BUDGET"), "TOKENDANCE_THINKING_BUDGET")
    try:
        check_thinking_budget(budget, _int(get("TOKENDANCE_MAX_TOKENS"), "TOKENDANCE_MAX_TOKENS"))
    except InvalidValue as e:
        raise SystemExit(f"TOKENDANCE_THINKING_BUDGET: {e}") from None
    return budget


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"{name} must be an integer, not {value!r}") from None


def _webhook_secret(env: Mapping[str, str]) -> str | None:
    secret = env.get("TOKENDANCE_ALERT_WEBHOOK_SECRET") or None
    if env.get("TOKENDANCE_ALERT_WEBHOOK") and (secret is None or len(secret.encode()) < 16):
        raise SystemExit(
            "TOKENDANCE_ALERT_WEBHOOK_SECRET (16 bytes or more) must be set with "
            "TOKENDANCE_ALERT_WEBHOOK: receivers check each alert's signature with it"
        )
    return secret


def _domains(value: str) -> tuple[str, ...]:
    """The sandbox's allowed domains, each checked (a start with a bad one stops here)."""
    try:
        return tuple(valid_pattern(d) for d in value.split(",") if d.strip())
    except ValueError as e:
        raise SystemExit(f"TOKENDANCE_SANDBOX_ALLOW_DOMAINS: {e}") from None


def _origins(value: str) -> tuple[str, ...]:
    try:
        return parse_origins(value)
    except ValueError as e:
        raise SystemExit(f"TOKENDANCE_CORS_ORIGINS: {e}") from None


def _proxies(value: str) -> tuple[str, ...]:
    """The trusted proxies' addresses and networks (`192.0.2.7`, `10.0.0.0/8`, `::1`), each
    checked as uvicorn reads them: a network with host bits set is refused, not widened."""
    proxies = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        try:
            parsed = ip_network(entry) if "/" in entry else ip_address(entry)
        except ValueError:
            raise SystemExit(
                f"TOKENDANCE_TRUSTED_PROXIES: {entry!r} is not an IP address or a CIDR network "
                "(e.g. 10.0.0.0/8) with no host bits set"
            ) from None
        proxies.append(str(parsed))
    return tuple(proxies)


def _s3_url(env: Mapping[str, str]) -> str | None:
    url = env.get("TOKENDANCE_S3_URL", "").strip() or None
    keys = ("TOKENDANCE_S3_ACCESS_KEY", "TOKENDANCE_S3_SECRET_KEY")
    if url and not all(env.get(key, "").strip() for key in keys):
        raise SystemExit(f"{' and '.join(keys)} must be set with TOKENDANCE_S3_URL")
    return url


def _optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _fraction(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 1.0:
        raise SystemExit(f"{name} must be a number from 0 to 1, not {value!r}")
    return number


def _model(value: str, name: str) -> str:
    try:
        parse_model_name(value)
    except InvalidCommand as e:
        raise SystemExit(f"{name}: {e}") from None
    return value


def _openai_api(value: str) -> str:
    if value not in ("chat", "responses"):
        raise SystemExit(f"TOKENDANCE_OPENAI_API must be chat or responses, not {value!r}")
    return value


def _cache_ttl(value: str) -> CacheTtl:
    if value == "5m":
        return "5m"
    if value == "1h":
        return "1h"
    raise SystemExit(f"TOKENDANCE_CACHE_TTL must be 5m or 1h, not {value!r}")


def _seconds(value: str, name: str) -> int:
    seconds = _int(value, name)
    if seconds < 0:
        raise SystemExit(f"{name} must be at least 0, not {seconds}")
    return seconds


def _limit(value: str, name: str) -> int:
    limit = _int(value, name)
    if limit < 1:
        raise SystemExit(f"{name} must be at least 1, not {limit}")
    return limit
