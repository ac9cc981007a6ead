# TokenDance's image: every role (`serve`, `api`, `worker`, `relay`, `projections`) runs
# from it; compose.yaml picks the role with the command. docs/deployment.md says more.
#
#   docker build -t tokendance .                 # `full` (the default): with bubblewrap,
#                                                # socat and LibreOffice Impress
#   docker build --target slim -t tokendance:slim .
#                                                # without them: code_execute and PDF
#                                                # export answer that they are unavailable
#
# Stages: `web` builds the Vue client (web/dist), `build` makes the venv (the
# dependencies in a layer of their own, from requirements-deploy.lock), `base` is the
# runtime's user and settings, and `slim` and `full` are the two runtimes. Base images
# are pinned to published patch versions; change them with --build-arg.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
ARG NODE_IMAGE=node:20.19.5-bookworm-slim

# ---- web: the client, built into web/dist (`serve` and `api` serve it at `/`) ----
FROM ${NODE_IMAGE} AS web
WORKDIR /src
COPY web/package.json web/package-lock.json web/
RUN npm ci --prefix web --no-audit --no-fund
# `npm run build` first generates the client's API types from these documents.
COPY schemas/openapi.json schemas/sse.schema.json schemas/ws.schema.json schemas/
COPY web web
RUN npm --prefix web run build

# ---- build: the venv at /opt/tokendance ----
FROM ${PYTHON_IMAGE} AS build
# Extras of pyproject.toml to install besides the locked ones (the dependencies and `s3`,
# the blob store compose uses): e.g. `voyage` (hosted embeddings) with
# --build-arg EXTRAS=voyage. Those are resolved at build time, not from the lock.
ARG EXTRAS=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/tokendance
# The dependencies, from requirements-deploy.lock (every version and hash the tests ran
# with; `make lock` writes it): this layer is rebuilt only when the lock, pyproject.toml
# or EXTRAS change.
COPY requirements-deploy.lock pyproject.toml deploy/pyproject_requirements.py /tmp/deps/
RUN /opt/tokendance/bin/pip install --require-hashes -r /tmp/deps/requirements-deploy.lock \
    && if [ -n "$EXTRAS" ]; then \
        python /tmp/deps/pyproject_requirements.py --extras-only /tmp/deps/pyproject.toml \
            "$EXTRAS" > /tmp/deps/extras.txt \
        && /opt/tokendance/bin/pip install -r /tmp/deps/extras.txt; \
    fi
# The project itself, installed in place from /app (some files are read beside the code:
# schemas/*.json, web/dist), then one import of the CLI as a smoke test.
WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain domain
COPY application application
COPY projections projections
COPY adapters adapters
COPY skills skills
COPY sandbox sandbox
COPY schemas schemas
COPY deploy deploy
RUN /opt/tokendance/bin/pip install --no-deps --editable . \
    && /opt/tokendance/bin/tokendance --help > /dev/null

# ---- base: what both runtimes share ----
FROM ${PYTHON_IMAGE} AS base
ENV PATH=/opt/tokendance/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    TOKENDANCE_HOST=0.0.0.0 \
    TOKENDANCE_PORT=8000 \
    TOKENDANCE_DATA_DIR=/var/lib/tokendance \
    TOKENDANCE_LOG_FORMAT=json
# A user of its own (not root), whose home is the data directory: the sandbox's work
# directories and LibreOffice's profiles go there. Blobs go to S3 in compose.yaml.
RUN groupadd --system --gid 10001 tokendance \
    && useradd --system --uid 10001 --gid tokendance --create-home \
        --home-dir /var/lib/tokendance --shell /usr/sbin/nologin tokendance
WORKDIR /app
EXPOSE 8000
# /readiness: 200 when Postgres and NATS answer and the read models keep up. Only the
# HTTP roles answer it: compose.yaml turns it off for worker, relay and projections.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/app/deploy/healthcheck.py", "/readiness"]
# Every role in one process, on the Postgres and NATS that TOKENDANCE_DATABASE_URL and
# TOKENDANCE_NATS_URL name (the image has no embedded servers); compose.yaml runs the
# roles apart.
CMD ["tokendance", "serve"]

# ---- slim: no sandbox, no LibreOffice ----
# code_execute answers "bubblewrap is not installed"; slide previews come without
# thumbnails and PDF export answers 501. Everything else works.
FROM base AS slim
COPY --from=build /opt/tokendance /opt/tokendance
COPY --from=build /app /app
COPY --from=web /src/web/dist /app/web/dist
USER tokendance

# ---- full (the default target): with the code sandbox and PDF export ----
# bubblewrap runs code_execute (sandbox/bubblewrap.py finds `bwrap` on PATH, and
# /usr/bin/socat for a run's network allowlist; prlimit and setpriv come with
# util-linux); LibreOffice Impress's `soffice` makes PDFs and thumbnails
# (adapters/slides/office.py); the fonts are those decks fall back to. In a container,
# bubblewrap needs user namespaces: see docs/deployment.md (compose.yaml's workers
# have the security options it needs).
FROM base AS full
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        bubblewrap socat libreoffice-impress fonts-dejavu-core fonts-liberation \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/tokendance /opt/tokendance
COPY --from=build /app /app
COPY --from=web /src/web/dist /app/web/dist
USER tokendance
