"""The environment variables TokenDance reads: each one's default and what it is.

`adapters.config.settings` reads them; docs/settings.md lists every one (a test
checks the names both ways).
"""

from __future__ import annotations

# name -> (default, what it is)
DOCUMENTED: dict[str, tuple[str, str]] = {
    "TOKENDANCE_DATA_DIR": (
        "./.tokendance",
        "where the embedded Postgres and NATS keep their data, and where blobs live",
    ),
    "TOKENDANCE_HOST": ("127.0.0.1", "address the HTTP API listens on"),
    "TOKENDANCE_PORT": ("8000", "port the HTTP API listens on"),
    "TOKENDANCE_DATABASE_URL": (
        "(unset: embedded Postgres)",
        "Postgres with pgvector, e.g. postgresql://user:pw@host:5432/db",
    ),
    "TOKENDANCE_API_DATABASE_URL": (
        "(unset: the database URL as user `tokendance_api`, no password)",
        "how the API's read-model queries log in: a role without SUPERUSER or BYPASSRLS, "
        "made (with this URL's password) and granted SELECT on the read models at start if "
        "missing; row-level security shows it only the caller's organizations' rows. Set it "
        "for a Postgres that asks for passwords, e.g. "
        "postgresql://tokendance_api:pw@host:5432/db",
    ),
    "TOKENDANCE_NATS_URL": (
        "(unset: embedded NATS)",
        "NATS server with JetStream, e.g. nats://host:4222",
    ),
    "TOKENDANCE_NATS_STREAM": ("TOKENDANCE", "JetStream stream that carries the events"),
    "TOKENDANCE_DB_POOL_SIZE": ("8", "Postgres connections kept open"),
    "TOKENDANCE_DB_MAX_OVERFLOW": ("8", "extra Postgres connections allowed under load"),
    "TOKENDANCE_STORE_THREADS": (
        "4",
        "threads that call the event store and the views from the event loop (at most "
        "pool size + overflow); each thread past the cores costs CPU in hand-offs of "
        "Python's lock on every call (`bench.stack_floor`)",
    ),
    "TOKENDANCE_DB_ASYNC_POOL_SIZE": (
        "4",
        "Postgres connections of the event loop's own pool: a run's writes to its session "
        "go through it without a thread (`application/loop_writes.py`)",
    ),
    "TOKENDANCE_DB_ASYNC_TIMEOUT": (
        "5",
        "seconds a write on the loop waits for a free connection of that pool; then it "
        "goes through the store's threads instead, as before",
    ),
    "TOKENDANCE_LOG_LEVEL": ("INFO", "log level"),
    "TOKENDANCE_LOG_FORMAT": (
        "text",
        "`text` (lines for people) or `json` (one JSON object per line on stderr: time, "
        "level, logger, message, trace_id, span_id, session_id, run_id, user_id, exc_info; "
        "secrets scrubbed)",
    ),
    "TOKENDANCE_LLM": (
        "(unset: Anthropic if ANTHROPIC_API_KEY is set)",
        "`scripted:<file.yaml>` (or `scripted:demo`) runs a scripted model instead",
    ),
    "TOKENDANCE_MODEL": (
        "claude-sonnet-5-5",
        "the model of agent turns, as `provider:model`: `anthropic:claude-sonnet-4-5`, "
        "`openai:gpt-4.1`, `gemini:gemini-2.5-pro`, `openai:llama3.1` (any OpenAI-compatible "
        "server at OPENAI_BASE_URL: vLLM, Ollama, OpenRouter, LiteLLM); a bare name is its "
        "family's (claude-* Anthropic, gpt-*/o* OpenAI, gemini-* Gemini; others Anthropic); "
        "a session's, workspace's or active skill's `model` wins",
    ),
    "TOKENDANCE_MODEL_FALLBACK": (
        "",
        "models (comma-separated, `provider:model`) that take over, in order, a model call "
        "that failed as overloaded, unavailable or rate limited after its retries, before "
        "any of its turn was streamed; the switch is a `ModelFallbackUsed` event and holds "
        "for the rest of that run",
    ),
    "TOKENDANCE_MCP_SERVERS": (
        "",
        "a YAML list of MCP servers every workspace's agent gets (each with the fields of "
        "`POST /api/v1/workspaces/{id}/mcp-servers`); a file that does not load stops the start",
    ),
    "TOKENDANCE_MCP_TIMEOUT": (
        "60",
        "seconds an MCP tool call may take (and an MCP server to start and list its tools)",
    ),
    "TOKENDANCE_MASTER_KEY": (
        "(unset: a random key kept in the data directory)",
        "base64 of 32 bytes: seals secrets kept at rest (MCP servers' env and header values, "
        "AES-GCM); the same on every process. While rotating, several, comma-separated: the "
        "first seals, each opens (`tokendance secrets reseal`, then drop the old)",
    ),
    "TOKENDANCE_MASTER_KEY_FILE": (
        "(unset)",
        "a file holding `TOKENDANCE_MASTER_KEY`'s value instead (a mounted secret); not both",
    ),
    "TOKENDANCE_OPENAI_API": (
        "chat",
        "which OpenAI API `openai:` models are called through: `chat` (Chat Completions, "
        "which every OpenAI-compatible server speaks) or `responses` (OpenAI's Responses API)",
    ),
    "TOKENDANCE_MAX_TOKENS": ("8192", "output token limit of one model turn"),
    "TOKENDANCE_THINKING_BUDGET": (
        "0",
        "extended thinking per model turn, in tokens: 0 (off), or 1024 or more and below "
        "`TOKENDANCE_MAX_TOKENS`; a session's or its workspace's `thinking_budget` setting "
        "wins; sent only to models that think (Claude 3.7 and later)",
    ),
    "TOKENDANCE_CONTEXT_WINDOW": (
        "200000",
        "the model's context window; the context is compacted at 70% of it",
    ),
    "TOKENDANCE_MAX_ITERATIONS": ("30", "model turns per run before it ends"),
    "TOKENDANCE_JWT_SECRET": (
        "(unset: a random secret kept in the data directory)",
        "signs access and refresh tokens; at least 32 bytes; the same on every API process",
    ),
    "TOKENDANCE_ACCESS_TTL": ("3600", "seconds an access token is valid"),
    "TOKENDANCE_INVITATION_TTL": (
        "604800",
        "seconds a team invitation can be accepted (7 days); it is used once",
    ),
    "TOKENDANCE_RATE_LIMIT_PER_MINUTE": (
        "100",
        "API requests per minute per user (per client address before login), counted across "
        "every API replica (a sliding window)",
    ),
    "TOKENDANCE_MAX_STREAMS_PER_USER": (
        "10",
        "SSE connections (chat runs, session streams) a user may hold open at once, across "
        "every API replica",
    ),
    "TOKENDANCE_UPLOADS_PER_MINUTE": (
        "10",
        "file uploads per minute per user, across every API replica (a sliding window)",
    ),
    "TOKENDANCE_LOGIN_ATTEMPTS": (
        "10",
        "failed logins per account (any address) and per client address (any account) in "
        "15 minutes; then every login of that account or from that address answers 429 "
        "with `Retry-After` until the oldest failure is 15 minutes old (across replicas)",
    ),
    "TOKENDANCE_TRUSTED_PROXIES": (
        "(unset: none)",
        "IPs or CIDR networks of the reverse proxies in front of the API (comma-separated); "
        "only a peer among them may name the client with `X-Forwarded-For` and "
        "`X-Forwarded-Proto`, otherwise the client is the socket's peer",
    ),
    "TOKENDANCE_CORS_ORIGINS": (
        "(unset: none; http://localhost:5173 on the embedded defaults)",
        "origins (scheme://host[:port], comma-separated) whose pages may call the API from "
        "a browser; `serve` without TOKENDANCE_DATABASE_URL also allows the web client's "
        "dev server, http://localhost:5173",
    ),
    "TOKENDANCE_MAX_UPLOAD_BYTES": (
        "26214400",
        "the largest workspace file, in bytes (25 MiB), uploaded or written by the agent",
    ),
    "TOKENDANCE_S3_URL": (
        "(unset: blobs in the data directory)",
        "keep blobs in an S3-compatible store (MinIO) at this endpoint, e.g. http://minio:9000",
    ),
    "TOKENDANCE_S3_BUCKET": ("tokendance", "the bucket blobs go to (made if it is missing)"),
    "TOKENDANCE_S3_ACCESS_KEY": ("", "the S3 access key (required with TOKENDANCE_S3_URL)"),
    "TOKENDANCE_S3_SECRET_KEY": ("", "the S3 secret key (required with TOKENDANCE_S3_URL)"),
    "TOKENDANCE_SHUTDOWN_GRACE": (
        "10",
        "seconds `serve` waits, on SIGTERM or Ctrl-C, for requests in flight before it "
        "stops (open streams end at once; their clients resume from `Last-Event-ID`)",
    ),
    "TOKENDANCE_APPROVAL_WAIT": (
        "600",
        "seconds a chat stream stays open while its run waits for a human's approval; then "
        "it ends with `done` status `waiting_confirmation` (the run stays resumable)",
    ),
    "TOKENDANCE_PRICES": (
        "",
        "a YAML price table to use instead of the bundled one (adapters/config/prices.yaml); "
        "a file that does not parse stops the start, naming the file and line",
    ),
    "TOKENDANCE_CACHE_TTL": (
        "5m",
        "prompt-cache lifetime model calls ask for: 5m, or 1h (cache writes cost more)",
    ),
    "TOKENDANCE_TAVILY_URL": (
        "",
        "another Tavily-compatible search server (the key is `TAVILY_API_KEY`; without one "
        "`web_search` answers that search is not configured)",
    ),
    "TOKENDANCE_FETCH_ALLOW": (
        "",
        "hosts, IPs or CIDR networks `read_url` may fetch although they are not public "
        "(comma-separated, any port); everything private, local or link-local is refused",
    ),
    "TOKENDANCE_SKILLS_DIR": (
        "",
        "a folder of more skills (a folder per skill with its SKILL.md) beside the built-in ones",
    ),
    "TOKENDANCE_EMBEDDER": (
        "(unset: voyage if VOYAGE_API_KEY is set, else wordllama)",
        "how messages are matched to skills beyond keywords, and memories found by meaning: "
        "voyage (Voyage AI's hosted models), wordllama (a local model that ships in its "
        "package) or hashing (deterministic, no model)",
    ),
    "VOYAGE_API_KEY": (
        "",
        "Voyage AI's API key; with it the embedder is `voyage` unless TOKENDANCE_EMBEDDER "
        "says otherwise (TOKENDANCE_EMBEDDER=voyage without it stops the start)",
    ),
    "TOKENDANCE_VOYAGE_MODEL": (
        "voyage-3.5",
        "the Voyage AI model (voyage-3.5, voyage-3.5-lite, ...: 1024 dimensions), or one "
        "with its size (voyage-3.5-512; 256, 512, 1024 or 2048); stored vectors name their "
        "model, so a change needs `tokendance memory reembed`",
    ),
    "TOKENDANCE_VOYAGE_BASE_URL": (
        "https://api.voyageai.com/v1",
        "another Voyage-compatible embeddings server (a proxy, or a local fake in tests)",
    ),
    "TOKENDANCE_SKILL_MATCH_THRESHOLD": (
        "0.3",
        "the least cosine similarity for a skill to be picked by meaning rather than keywords",
    ),
    "TOKENDANCE_SANDBOX": (
        "bubblewrap",
        "where code_execute runs: `bubblewrap` (Debian's bubblewrap package) or `docker` "
        "(a Docker-API engine and the image built from sandbox/)",
    ),
    "TOKENDANCE_SANDBOX_TIMEOUT": ("30", "seconds of wall-clock time a sandboxed run gets"),
    "TOKENDANCE_SANDBOX_MAX_TIMEOUT": (
        "300",
        "the most seconds a code_execute call may ask for",
    ),
    "TOKENDANCE_SANDBOX_MEMORY_MB": ("512", "memory (address space) of a sandboxed run, MiB"),
    "TOKENDANCE_SANDBOX_PROCESSES": ("64", "processes a sandboxed run may have at once"),
    "TOKENDANCE_SANDBOX_ALLOW_DOMAINS": (
        "",
        "domains sandboxed code may reach through the filtering proxy, comma-separated "
        "(`*.example.com` for subdomains); none: no network",
    ),
    "TOKENDANCE_SANDBOX_IMAGE": (
        "tokendance-sandbox:latest",
        "the image the docker sandbox runs (built by sandbox/build_image.sh)",
    ),
    "TOKENDANCE_SOFFICE": (
        "",
        "LibreOffice's `soffice` for slide thumbnails and PDF export (none: found on PATH; "
        "absent: previews without thumbnails, PDF export answers 501)",
    ),
    "TOKENDANCE_WORKER_CONCURRENCY": ("16", "runs one `tokendance worker` process drives at once"),
    "TOKENDANCE_RUN_ACK_WAIT": (
        "30",
        "seconds a worker may go without a heartbeat before its run is handed to another",
    ),
    "TOKENDANCE_RUN_MAX_DELIVERIES": (
        "5",
        "times a run is handed to a worker before it fails (RUN_DELIVERY_EXHAUSTED) "
        "instead of looping",
    ),
    "TOKENDANCE_RUN_SWEEP": (
        "15",
        "seconds between a worker's looks for active runs that no live worker holds "
        "(requested while NATS was away, or left by a dead worker)",
    ),
    "TOKENDANCE_WEB_DIR": (
        "(unset: web/dist of the repository)",
        "the built web client (`npm --prefix web run build`) served at `/`; without its "
        "index.html `/` answers 503 saying how to build it, and the API works the same",
    ),
    "TOKENDANCE_ALERT_WEBHOOK": ("", "URL budget alerts are POSTed to as JSON (none: not sent)"),
    "TOKENDANCE_ALERT_WEBHOOK_SECRET": (
        "",
        "key of the alerts' HMAC-SHA256 signature header (required with the webhook)",
    ),
}
