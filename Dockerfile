# syntax=docker/dockerfile:1.7
#
# One image for every kgrag service; the command picks the service:
#   python -m kgrag_query_api | kgrag_connector_gateway | kgrag_chunk_indexer
#   python -m kgrag_deletion_worker | kgrag_acl_propagator | kgrag_graph_writer | kgrag_extractor
#   python -m kgrag_entity_resolver | kgrag_community_builder
#   python -m kgrag_runtime.admin init | rebuild --projection opensearch|qdrant|neo4j|all
#
# Build:  docker build -t kgrag:local .
# Runs as uid/gid 10001, works with a read-only root filesystem: it writes only to /tmp and /data.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG UV_VERSION=0.13.9

# ---------------------------------------------------------------------------------------------------
# manifests: only pyproject.toml files and uv.lock, so the dependency layer below is rebuilt only
# when dependencies change (the COPY --from of this stage is cached by content).
# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN find . -type f ! -name pyproject.toml ! -name uv.lock -delete \
    && find . -type l -delete \
    && find . -depth -type d -empty -delete

# ---------------------------------------------------------------------------------------------------
# build: the virtual environment at /app/.venv from uv.lock (frozen, no dev group)
# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ARG UV_VERSION
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3 \
    UV_PROJECT_ENVIRONMENT=/app/.venv \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
WORKDIR /app

# 1) third-party dependencies only (cached unless a pyproject.toml or uv.lock changes)
COPY --from=manifests /src/ /app/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --all-packages --no-dev --no-install-workspace

# 2) the workspace itself. schemas/ is needed at run time: the adapters reach
#    schemas/postgres/migrations and schemas/qdrant through symlinks inside their packages.
COPY pyproject.toml uv.lock ./
COPY schemas/ schemas/
COPY libs/ libs/
COPY services/ services/
# The learned question router trains from this set at first use (KGRAG_ROUTER=learned).
COPY corpora/router/ corpora/router/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --all-packages --no-dev \
    && python -m compileall -q libs services \
    && /app/.venv/bin/python -c "import kgrag_core, kgrag_adapters, kgrag_runtime"

# ---------------------------------------------------------------------------------------------------
# runtime
# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="kgrag" \
      org.opencontainers.image.description="kgrag services: knowledge-graph + RAG hybrid search"

RUN groupadd --system --gid 10001 kgrag \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
               --shell /usr/sbin/nologin kgrag \
    && mkdir -p /data \
    && chown 10001:10001 /data \
    && chmod 0750 /data

# Owned by root and not writable by the service user: the code cannot be changed at run time.
COPY --from=build --chown=0:0 /app /app

ENV PATH=/app/.venv/bin:$PATH \
    VIRTUAL_ENV=/app/.venv \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    KGRAG_RUNTIME=distributed \
    KGRAG_DATA_DIR=/data \
    KGRAG_HOST=0.0.0.0 \
    KGRAG_OPS_HOST=0.0.0.0

WORKDIR /app
USER 10001:10001
VOLUME ["/data"]
# query-api 8000, connector-gateway 8080, the workers' ops port (health + metrics) 9100.
# KGRAG_HOST / KGRAG_OPS_HOST default to 127.0.0.1 in the code: the image binds all interfaces.
EXPOSE 8000 8080 9100

# The orchestrator (compose healthcheck, Kubernetes probes) checks /healthz and /readyz per service.
CMD ["python", "-m", "kgrag_query_api"]
