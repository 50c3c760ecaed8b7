"""Django settings for MemoryHub: one module, configured only through environment variables."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

# Lets annotations like admin.ModelAdmin[Memory] run at run time, not only under mypy.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str | None = None) -> str | None:
    """Return the variable's value, or `default` when it is unset or empty."""
    value = os.environ.get(name, "")
    return value if value != "" else default


def env_bool(name: str, default: bool) -> bool:
    """Parse a boolean variable; anything but the usual spellings is a configuration error."""
    value = os.environ.get(name, "").strip().lower()
    if value == "":
        return default
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    """Parse an integer variable of at least `minimum`, failing loudly on anything else.

    No setting here means anything below zero: a negative retention or timeout is a typo.
    """
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


# Off unless asked for: a deployment that forgets it must not serve debug pages. `make` turns it
# on for development (Makefile), and the test suite too (pyproject's pytest `env`).
DEBUG = env_bool("DEBUG", default=False)
PORT = env_int("PORT", 8000, minimum=1)  # make run serves here
# Web worker processes of `runstack --production` (uvicorn --workers).
WEB_CONCURRENCY = env_int("WEB_CONCURRENCY", 2, minimum=1)
# How long (microseconds) a web worker's thread may hold the GIL while another waits for it
# (sys.setswitchinterval; Python's default is 5,000). A search waits for the GIL after each of
# its ~20 database round trips while a long request computes: 1,000 cut that wait by a fifth
# to a third in the hostile bench (docs/hostile-input.md).
MEMORYHUB_WEB_GIL_SWITCH_MICROSECONDS = env_int(
    "MEMORYHUB_WEB_GIL_SWITCH_MICROSECONDS", 1000, minimum=100
)

# Local state of the embedded defaults (database files, generated keys, broker folders).
DATA_DIR = Path(env_str("MEMORYHUB_DATA_DIR", str(BASE_DIR / ".data")) or "")


def _local_secret(filename: str, generate: str | Callable[[], str]) -> str:
    """Read a development secret from DATA_DIR, creating it on first use (never committed).

    The secret is written to a private temporary file (0600 from its first byte, whatever the
    umask) and linked into place, which fails if the name exists: a reader never sees a partial
    file, and of two processes starting at once the second keeps the first one's secret.
    """
    path = DATA_DIR / filename
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=DATA_DIR, prefix=f".{filename}.")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(generate() if callable(generate) else generate)
                file.flush()
                os.fsync(file.fileno())
            with contextlib.suppress(FileExistsError):  # Another process was first: use theirs.
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    return path.read_text().strip()


def _required_secret(name: str, filename: str, generate: str | Callable[[], str]) -> str:
    value = env_str(name)
    if value is not None:
        return value
    if not DEBUG:
        raise ImproperlyConfigured(
            f"{name} must be set when DEBUG is off (for development, set DEBUG=true)"
        )
    return _local_secret(filename, generate)


SECRET_KEY = _required_secret("SECRET_KEY", "secret-key", secrets.token_urlsafe(50))

# Master keys wrap the per-user data keys: "id:base64key,id:base64key", newest first.
MEMORYHUB_MASTER_KEYS = _required_secret(
    "MEMORYHUB_MASTER_KEYS",
    "master-keys",
    f"k{secrets.token_hex(4)}:{base64.b64encode(secrets.token_bytes(32)).decode()}",
)

# The audit chain's HMAC key and the pseudonym key for audit subjects. With DEBUG off it must be
# set, and differ from SECRET_KEY: rotating SECRET_KEY (after a leak, say) would otherwise break
# every chain and change every pseudonym. In development it defaults to SECRET_KEY.
MEMORYHUB_AUDIT_KEY = env_str("MEMORYHUB_AUDIT_KEY", SECRET_KEY if DEBUG else None) or ""
if not DEBUG and MEMORYHUB_AUDIT_KEY in ("", SECRET_KEY):
    raise ImproperlyConfigured(
        "MEMORYHUB_AUDIT_KEY must be set when DEBUG is off, to a value other than SECRET_KEY"
    )

ALLOWED_HOSTS = [
    h.strip() for h in (env_str("ALLOWED_HOSTS", "127.0.0.1,localhost") or "").split(",")
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in (env_str("CSRF_TRUSTED_ORIGINS", "") or "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "ninja",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    # The OAuth 2.1 / OpenID Connect authorization server for the MCP endpoint (mcp/oauth.py).
    "allauth.idp.oidc",
    "memoryhub",
    # Subscribes the webhooks to the change announcements at start-up (no models of its own).
    "memoryhub.webhooks.apps.WebhooksConfig",
    "accounts",
    "dashboard",
    "review",
]

MIDDLEWARE = [
    # /healthz and /readyz, before the host check and the HTTPS redirect (memoryhub/probes.py).
    "memoryhub.probes.OperationsEndpointsMiddleware",
    # Counts and times every other request, the 503s and 500s below it included.
    "memoryhub.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "memoryhub.unavailable.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "accounts.middleware.AdminRequiresMfaMiddleware",
    "accounts.middleware.NeverCacheSignedInPagesMiddleware",
    "memoryhub.api.request_slots.ReleaseRequestSlotMiddleware",
    "memoryhub.api.rate_limit_headers.RateLimitHeadersMiddleware",
]

if not DEBUG:
    # The collected static files, served by the app itself (offline, no CDN; a proxy in front
    # caches them). With DEBUG on, staticfiles serves them from the source folders instead.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "whitenoise.middleware.WhiteNoiseMiddleware",
    )

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"
ASGI_APPLICATION = "memoryhub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


# Each process (web worker, Celery worker, beat) keeps its own psycopg pool of at most
# DATABASE_POOL_MAX_SIZE server connections, whatever the load: under ASGI every request runs its
# sync code on a thread of its own, and persistent per-thread connections (CONN_MAX_AGE) were
# left open by threads that had ended. A request that finds the pool exhausted waits at most
# DATABASE_POOL_TIMEOUT_SECONDS, then gets 503 with Retry-After (memoryhub/unavailable.py).
# Connections beyond the minimum close after DATABASE_POOL_MAX_IDLE_SECONDS unused (the pool
# closes one per such period). DATABASE_POOL_MAX_SIZE=0 turns pooling off.
DATABASE_POOL_MAX_SIZE = env_int("DATABASE_POOL_MAX_SIZE", 10)
_pool_timeout = float(env_int("DATABASE_POOL_TIMEOUT_SECONDS", 5))
DATABASE_POOL_OPTIONS: dict[str, float] = (
    {
        "min_size": min(env_int("DATABASE_POOL_MIN_SIZE", 1), DATABASE_POOL_MAX_SIZE),
        "max_size": DATABASE_POOL_MAX_SIZE,
        "timeout": _pool_timeout,
        "max_idle": float(env_int("DATABASE_POOL_MAX_IDLE_SECONDS", 10)),
        # The pool retries a failed connection in the background after 1, 2, 4, 8 … seconds,
        # for 5 minutes by default: after a minute's outage its next try could come a minute
        # after the database is back, and every request meanwhile answers 503. A try that
        # fails for as long as a request waits is dropped; the next request starts a new one.
        "reconnect_timeout": _pool_timeout,
    }
    if DATABASE_POOL_MAX_SIZE > 0
    else {}
)
# What a 503 (database unavailable or pool exhausted) asks the client to wait.
MEMORYHUB_RETRY_AFTER_SECONDS = env_int("MEMORYHUB_RETRY_AFTER_SECONDS", 2)


def database_settings(url: str | None) -> dict[str, object]:
    """Build the default database from DATABASE_URL, or start the embedded PostgreSQL."""
    if url is None:
        from memoryhub.embedded_db import ensure_embedded_postgres

        url = ensure_embedded_postgres(DATA_DIR / "postgres")
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(
            "DATABASE_URL must be a postgresql:// URL (MemoryHub needs pgvector)"
        )
    query = parse_qs(parsed.query)
    host = query.get("host", [parsed.hostname or ""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": 0 if DATABASE_POOL_OPTIONS else env_int("DATABASE_CONN_MAX_AGE", 0),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            # An unreachable host (not a refused port) would otherwise hold the connecting
            # thread for the operating system's TCP timeout, minutes.
            "connect_timeout": env_int("DATABASE_CONNECT_TIMEOUT_SECONDS", 5),
            **({"pool": dict(DATABASE_POOL_OPTIONS)} if DATABASE_POOL_OPTIONS else {}),
        },
        "TEST": {"NAME": env_str("DATABASE_TEST_NAME", None)},
    }


USES_EMBEDDED_DATABASE = env_str("DATABASE_URL") is None
DATABASES = {"default": database_settings(env_str("DATABASE_URL"))}

# Read replicas: hot standbys of the primary (PostgreSQL streaming replication). Only the reads
# that memoryhub/replicas.py routes go there; everything else, writes included, stays on
# "default". A replica that does not answer within this many seconds is skipped for a while.
REPLICA_CONNECT_TIMEOUT_SECONDS = 2
# A replica further behind the primary than this serves nobody until it catches up.
DATABASE_REPLICA_MAX_LAG_SECONDS = env_int("DATABASE_REPLICA_MAX_LAG_SECONDS", 30)


def replica_databases(urls: str | None) -> dict[str, dict[str, object]]:
    """Build "replica_0", "replica_1"… from comma-separated postgresql:// URLs."""
    replicas: dict[str, dict[str, object]] = {}
    for number, url in enumerate(u.strip() for u in (urls or "").split(",") if u.strip()):
        if urlparse(url).scheme not in {"postgres", "postgresql"}:
            raise ImproperlyConfigured("DATABASE_REPLICA_URLS must hold postgresql:// URLs")
        entry = database_settings(url)
        built = entry.get("OPTIONS")
        options = dict(built) if isinstance(built, dict) else {}
        pool = options.get("pool")
        if isinstance(pool, dict):
            # Waiting for a pooled connection is bounded too: a busy replica hands reads back.
            wait = min(float(pool.get("timeout", 30)), REPLICA_CONNECT_TIMEOUT_SECONDS)
            options["pool"] = {**pool, "timeout": float(wait)}
        options["connect_timeout"] = REPLICA_CONNECT_TIMEOUT_SECONDS
        entry["OPTIONS"] = options
        # The test suite runs without replicas: a configured one just mirrors the test database.
        entry["TEST"] = {"MIRROR": "default"}
        replicas[f"replica_{number}"] = entry
    return replicas


DATABASES.update(replica_databases(env_str("DATABASE_REPLICA_URLS")))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "memoryhub.User"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]

# English and French: LocaleMiddleware follows the language chosen in the header or account
# settings (a cookie), else the browser's Accept-Language. The French catalogue lives in parts
# under locale/fr/LC_MESSAGES/parts and is compiled by `manage.py compile_catalogue` (make setup).
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "Français")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Each language's DATE_FORMAT and DATETIME_FORMAT, which the templates name (docs/i18n.md).
FORMAT_MODULE_PATH = ["memoryhub.formats"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/dashboard/"
LOGOUT_REDIRECT_URL = "/"

# django-allauth: email is the login; verification is mandatory outside development.
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = env_str(
    "ACCOUNT_EMAIL_VERIFICATION", "optional" if DEBUG else "mandatory"
)
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
# Emails say who sends them, not the host they were asked from ("[127.0.0.1:8000] …").
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[MemoryHub] "
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "MemoryHub"
# TOTP secrets and recovery seeds are stored sealed under a master key (accounts/adapter.py).
MFA_ADAPTER = "accounts.adapter.MFAAdapter"


def _rsa_private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


# MemoryHub is the OAuth 2.1 authorization server of its own MCP endpoint: a person signs in on
# the login page (with their second factor) and consents to a client and the modes it may use.
# The key signs ID tokens (access tokens are opaque, looked up by hash): an RSA private key in
# PEM. Unset with DEBUG off, OAuth sign-in is off and MCP takes agent and personal keys only.
IDP_OIDC_PRIVATE_KEY = env_str("MEMORYHUB_OIDC_PRIVATE_KEY") or (
    _local_secret("oidc-private-key", _rsa_private_key) if DEBUG else ""
)
MEMORYHUB_MCP_OAUTH = bool(IDP_OIDC_PRIVATE_KEY)
if MEMORYHUB_MCP_OAUTH and "PRIVATE KEY-----" not in IDP_OIDC_PRIVATE_KEY:
    raise ImproperlyConfigured("MEMORYHUB_OIDC_PRIVATE_KEY must be a PEM private key")
IDP_OIDC_ADAPTER = "accounts.oidc.OIDCAdapter"
# MCP clients register themselves (RFC 7591), as the MCP authorization spec expects; the
# registration endpoint is rate limited per IP by allauth.
IDP_OIDC_DCR_ENABLED = True
IDP_OIDC_DCR_REQUIRES_INITIAL_ACCESS_TOKEN = False

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "memoryhub@localhost")

# Celery: a broker server in production; with none configured, a folder-based transport so the
# embedded set-up needs no broker installed.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL == "filesystem://":
    _queue_dir = DATA_DIR / "celery-queue"
    _queue_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        # The exchange table; kombu's default is ./control, a folder in whatever the cwd is.
        "control_folder": str(DATA_DIR / "celery-control"),
    }
elif (CELERY_BROKER_URL or "").startswith(("redis://", "rediss://")):
    # With acks_late, a task whose worker died is redelivered once this many seconds have
    # passed since delivery; keep it above the longest task time limit or a slow task runs twice.
    _visibility_timeout = env_int("CELERY_VISIBILITY_TIMEOUT_SECONDS", 3600)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": _visibility_timeout,
        # Sweep for abandoned messages every few seconds, not kombu's default 100.
        "unacked_restore_interval": min(10, _visibility_timeout),
        "unacked_restore_throttle": 1,
        # A broker that accepts the connection but never answers would hold a publish (and
        # the request ending a session) forever: redis-py waits without limit by default.
        "socket_connect_timeout": 1,
        "socket_timeout": 2,
    }
# Publishing gives up quickly when the broker is down: a request ending a session answers
# within a couple of seconds, and the session stays queued for the stranded-extraction sweep. One retry
# reconnects a pooled connection the broker dropped (a restart, say).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 2, minimum=1)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "end-idle-sessions": {"task": "memoryhub.end_idle_sessions", "schedule": 60.0},
    "requeue-failed-extractions": {
        "task": "memoryhub.requeue_failed_extractions",
        "schedule": 900.0,
    },
    "requeue-stranded-extractions": {
        "task": "memoryhub.requeue_stranded_extractions",
        "schedule": 60.0,
    },
    "requeue-stranded-imports": {"task": "memoryhub.requeue_stranded_imports", "schedule": 300.0},
    "expire-working-memory": {"task": "memoryhub.expire_working_memory", "schedule": 3600.0},
    "sweep-idempotency-keys": {"task": "memoryhub.sweep_idempotency_keys", "schedule": 3600.0},
    # Past rate-limit windows of every key owner and client IP (memoryhub/services/ratelimit.py).
    "sweep-rate-limit-windows": {"task": "memoryhub.sweep_rate_limit_windows", "schedule": 300.0},
    "sweep-expired-cache-entries": {
        "task": "memoryhub.sweep_expired_cache_entries",
        "schedule": 300.0,
    },
    # Maintenance (memoryhub/services/decay.py, retention.py, consolidate.py, compaction.py).
    "decay-memories": {"task": "memoryhub.decay_memories", "schedule": 86400.0},
    "apply-retention": {"task": "memoryhub.apply_retention", "schedule": 86400.0},
    "compact-threads": {"task": "memoryhub.compact_threads", "schedule": 3600.0},
    "consolidate-memories": {"task": "memoryhub.consolidate_memories", "schedule": 7 * 86400.0},
    # Workspace knowledge graph (memoryhub/graph/, issue 9).
    "graph-decay-edges": {"task": "memoryhub.graph_decay_edges", "schedule": 86400.0},
    "graph-purge-transient": {"task": "memoryhub.graph_purge_transient", "schedule": 86400.0},
    # Keeps memoryhub_audit_chain_intact fresh for the alerts (docs/operations.md).
    "verify-audit-chains": {"task": "memoryhub.verify_audit_chains", "schedule": 86400.0},
    # Heavy users' own vector indexes (services/nearest_index.py, docs/retrieval.md).
    "index-heavy-users": {"task": "memoryhub.index_heavy_users", "schedule": 86400.0},
    # Webhook deliveries whose retry is due (memoryhub/webhooks/, issue 31).
    "send-due-webhooks": {"task": "memoryhub.send_due_webhooks", "schedule": 30.0},
    # What waits for review, to the reviewers who asked for it (review/notices.py); each gets
    # at most one a day, so an hourly run only catches a missed one.
    "send-review-digests": {"task": "review.send_review_digests", "schedule": 3600.0},
}

# Webhooks (memoryhub/webhooks/): retries back off exponentially from the base, up to the cap;
# a delivery is dead after the maximum attempts; an endpoint's circuit opens after that many
# consecutive failures and lets one attempt through (half-open) after the cool-down.
MEMORYHUB_WEBHOOK_MAX_ATTEMPTS = env_int("MEMORYHUB_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1)
MEMORYHUB_WEBHOOK_BACKOFF_SECONDS = env_int("MEMORYHUB_WEBHOOK_BACKOFF_SECONDS", 30, minimum=1)
MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS = env_int("MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS", 21600)
MEMORYHUB_WEBHOOK_CIRCUIT_FAILURES = env_int("MEMORYHUB_WEBHOOK_CIRCUIT_FAILURES", 5, minimum=1)
MEMORYHUB_WEBHOOK_CIRCUIT_COOLDOWN_SECONDS = env_int(
    "MEMORYHUB_WEBHOOK_CIRCUIT_COOLDOWN_SECONDS", 300
)
MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS = env_int("MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# Endpoint URLs must resolve to public addresses (no SSRF into the server's network), checked on
# creation and on every send; allow private ones only for a receiver on the same host/network.
MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = env_bool(
    "MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS", default=False
)
# Plain http endpoints (https otherwise); on in DEBUG.
MEMORYHUB_WEBHOOK_ALLOW_HTTP = env_bool("MEMORYHUB_WEBHOOK_ALLOW_HTTP", default=DEBUG)
# After a secret rotation the old secret keeps signing (a second signature) this long.
MEMORYHUB_WEBHOOK_SECRET_GRACE_HOURS = env_int("MEMORYHUB_WEBHOOK_SECRET_GRACE_HOURS", 24)

# Embeddings and extraction.
MEMORYHUB_EMBEDDING_DIMENSIONS = 384
# The model that embeds memories, messages, knowledge and candidates (memoryhub/embeddings.py,
# MODELS). Changing it on a deployment with data needs `manage.py reembed` (docs/retrieval.md).
MEMORYHUB_EMBEDDING_MODEL = (
    env_str("MEMORYHUB_EMBEDDING_MODEL", "all-MiniLM-L6-v2") or "all-MiniLM-L6-v2"
)
_EMBEDDING_MODELS = ("all-MiniLM-L6-v2", "multilingual-e5-small-q4", "use-multilingual-v3-384")
if MEMORYHUB_EMBEDDING_MODEL not in _EMBEDDING_MODELS:
    raise ImproperlyConfigured(
        f"MEMORYHUB_EMBEDDING_MODEL must be one of {', '.join(_EMBEDDING_MODELS)}"
    )
# A user with this many active memories in a mode is searched through their own vector index
# (`manage.py index_heavy_users` builds it): the nearest MEMORYHUB_NEAREST_CANDIDATES memories,
# ranked exactly; a smaller user, or a search narrowed by kind, period or topic, scans every
# candidate exactly (docs/retrieval.md, "Heavy users"). 0 keeps every search exact.
MEMORYHUB_NEAREST_FROM = env_int("MEMORYHUB_NEAREST_FROM", 20_000, minimum=0)
MEMORYHUB_NEAREST_CANDIDATES = env_int("MEMORYHUB_NEAREST_CANDIDATES", 400, minimum=10)
# ...and, besides those, every memory holding a query word that at most this many of the user's
# memories hold, and as many nearest among those holding a more frequent one (0: every memory
# holding a query word, however many).
MEMORYHUB_NEAREST_WORD_CAP = env_int("MEMORYHUB_NEAREST_WORD_CAP", 2000, minimum=0)
# Torch threads of the embedding model; 0 keeps torch's default (one per core).
MEMORYHUB_EMBEDDING_THREADS = env_int("MEMORYHUB_EMBEDDING_THREADS", 1, minimum=1)
# "onnx" (default: ONNX Runtime, graph exported under DATA_DIR/models) or "torch"; same vectors.
MEMORYHUB_EMBEDDING_RUNTIME = env_str("MEMORYHUB_EMBEDDING_RUNTIME", "onnx") or "onnx"
if MEMORYHUB_EMBEDDING_RUNTIME not in ("onnx", "torch"):
    raise ImproperlyConfigured("MEMORYHUB_EMBEDDING_RUNTIME must be onnx or torch")
# ONNX Runtime threads for a batch of texts; 0 means one per core (a single text uses one).
MEMORYHUB_EMBEDDING_BATCH_THREADS = env_int("MEMORYHUB_EMBEDDING_BATCH_THREADS", 0)
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL")
# Where people reach this server, for links in emails sent outside a request (review digests).
MEMORYHUB_SITE_URL = (env_str("MEMORYHUB_SITE_URL") or "http://localhost:8000").rstrip("/")
MEMORYHUB_EXTRACTION_MODEL = env_str("MEMORYHUB_EXTRACTION_MODEL", "claude-haiku-4-5") or ""
MEMORYHUB_LLM_TIMEOUT_SECONDS = env_int("MEMORYHUB_LLM_TIMEOUT_SECONDS", 60)
MEMORYHUB_LLM_MAX_RETRIES = env_int("MEMORYHUB_LLM_MAX_RETRIES", 3)
# An extraction that failed for good (its task's own retries spent) is queued again by a sweep
# once it has rested this long, twice as long before each further try, at most this many times.
MEMORYHUB_EXTRACTION_REQUEUE_AFTER_MINUTES = env_int(
    "MEMORYHUB_EXTRACTION_REQUEUE_AFTER_MINUTES", 60
)
MEMORYHUB_EXTRACTION_MAX_REQUEUES = env_int("MEMORYHUB_EXTRACTION_MAX_REQUEUES", 3)
# A session still queued this long after it ended, with no extraction running, lost its task
# (the broker was down when it ended, or dropped the message): a sweep publishes it again.
MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES = env_int(
    "MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES", 5
)

# Limits of the agent API.
MEMORYHUB_MAX_CONTENT_BYTES = env_int("MEMORYHUB_MAX_CONTENT_BYTES", 32 * 1024)
# All the texts of one POST /memories/batch together: bounds how long one request takes.
MEMORYHUB_MAX_BATCH_CONTENT_BYTES = env_int("MEMORYHUB_MAX_BATCH_CONTENT_BYTES", 128 * 1024)
MEMORYHUB_MAX_WORKING_MEMORY_BYTES = env_int("MEMORYHUB_MAX_WORKING_MEMORY_BYTES", 64 * 1024)
MEMORYHUB_RATE_LIMIT_PER_MINUTE = env_int("MEMORYHUB_RATE_LIMIT_PER_MINUTE", 600)
# Requests with an unknown or revoked key, per client IP and minute, before they get 429.
MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = env_int("MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE", 30)
# The largest request body, in bytes: 413 above it (API, MCP and pages; memoryhub/body_limit.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORYHUB_MAX_REQUEST_BYTES", 2_621_440)
# An import file (POST /api/v1/imports, the dashboard's import page) may be larger than any
# other body, up to this many bytes; only those two routes accept it (memoryhub/body_limit.py).
MEMORYHUB_MAX_IMPORT_BYTES = env_int("MEMORYHUB_MAX_IMPORT_BYTES", 100 * 1024 * 1024)
# Where an uploaded import file waits, sealed, for its task; deleted when the import ends.
MEMORYHUB_IMPORT_DIR = env_str("MEMORYHUB_IMPORT_DIR", str(DATA_DIR / "imports")) or ""
MEMORYHUB_SESSION_IDLE_MINUTES = env_int("MEMORYHUB_SESSION_IDLE_MINUTES", 30)
# A retry with the same idempotency key replays the first write for this long; an hourly sweep
# deletes older records (a hash of the key and the ids it wrote), so the table stays bounded.
MEMORYHUB_IDEMPOTENCY_KEEP_HOURS = env_int("MEMORYHUB_IDEMPOTENCY_KEEP_HOURS", 24)
MEMORYHUB_WORKING_MEMORY_TTL_DAYS = env_int("MEMORYHUB_WORKING_MEMORY_TTL_DAYS", 30)

# Quotas (memoryhub/services/quotas.py; 0 turns one off): 429 `quota_exceeded` past them.
# Stored bytes: the ciphertext of memories (content, payload) and journal notes (models/usage.py).
MEMORYHUB_QUOTA_MEMORIES_PER_USER = env_int("MEMORYHUB_QUOTA_MEMORIES_PER_USER", 250_000)
MEMORYHUB_QUOTA_BYTES_PER_USER = env_int("MEMORYHUB_QUOTA_BYTES_PER_USER", 1024**3)
MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE = env_int(
    "MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE", 10_000_000
)
MEMORYHUB_QUOTA_BYTES_PER_WORKSPACE = env_int("MEMORYHUB_QUOTA_BYTES_PER_WORKSPACE", 40 * 1024**3)
MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY = env_int("MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY", 5000)
MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY = env_int(
    "MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY", 2000
)
# API and MCP requests one key owner may have running at once, over every web worker (429
# `too_many_concurrent_requests` above); a slot left by a killed worker expires after the lease.
MEMORYHUB_MAX_CONCURRENT_REQUESTS = env_int("MEMORYHUB_MAX_CONCURRENT_REQUESTS", 32)
MEMORYHUB_REQUEST_SLOT_LEASE_SECONDS = env_int(
    "MEMORYHUB_REQUEST_SLOT_LEASE_SECONDS", 300, minimum=1
)
# A forget by query of more memories than this runs as a task; the query is embedded in
# batches of this size.
MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE = env_int("MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE", 500)
MEMORYHUB_FORGET_EMBED_BATCH = env_int("MEMORYHUB_FORGET_EMBED_BATCH", 256, minimum=1)

# Maintenance: decay halves a normal memory's priority every half-life since its last use (low
# importance twice as fast, high four times slower, critical never) and marks it dormant after
# the dormant age (scaled alike). Threads longer than the compaction threshold are summarised,
# keeping the most recent messages as they are.
MEMORYHUB_DECAY_HALF_LIFE_DAYS = env_int("MEMORYHUB_DECAY_HALF_LIFE_DAYS", 90, minimum=1)
MEMORYHUB_DORMANT_AFTER_DAYS = env_int("MEMORYHUB_DORMANT_AFTER_DAYS", 365)
MEMORYHUB_COMPACT_AFTER_MESSAGES = env_int("MEMORYHUB_COMPACT_AFTER_MESSAGES", 60)
MEMORYHUB_COMPACT_KEEP_RECENT = env_int("MEMORYHUB_COMPACT_KEEP_RECENT", 20)
MEMORYHUB_CONSOLIDATE_AFTER_DAYS = env_int("MEMORYHUB_CONSOLIDATE_AFTER_DAYS", 7)

# Workspace knowledge graph: edge weights halve every half-life of age; queries, responses and
# tool calls older than the transient limit are purged (items and documents stay).
MEMORYHUB_GRAPH_HALF_LIFE_DAYS = env_int("MEMORYHUB_GRAPH_HALF_LIFE_DAYS", 30, minimum=1)
MEMORYHUB_GRAPH_TRANSIENT_DAYS = env_int("MEMORYHUB_GRAPH_TRANSIENT_DAYS", 90)

# The cache. allauth keeps its failed-login budget and its "TOTP code already used" markers in
# it, so every web worker must share one. CACHE_URL: redis://… (Redis), db:// (a table in
# PostgreSQL, created by migration 0022) or locmem:// (this process only). Unset: the database
# with DEBUG off, this process's memory with DEBUG on (development runs one web process).
CACHE_TABLE = "memoryhub_cache"
PER_PROCESS_CACHE = "django.core.cache.backends.locmem.LocMemCache"


def cache_settings(url: str | None, *, debug: bool) -> dict[str, object]:
    """Build the default cache from CACHE_URL; runstack --production refuses a per-process one."""
    scheme = urlparse(url).scheme if url else ("locmem" if debug else "db")
    if scheme in {"redis", "rediss"}:
        # Redis down or silent: a login fails within seconds instead of hanging.
        timeouts = {"socket_connect_timeout": 1, "socket_timeout": 2}
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "OPTIONS": timeouts,
        }
    if scheme == "db":
        # Every write counts the rows and, past MAX_ENTRIES, deletes the expired ones first
        # and only then a third of the rest: set high, so no flood of login attempts evicts
        # a live TOTP marker or failure budget.
        return {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": CACHE_TABLE,
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    if scheme == "locmem":
        return {"BACKEND": PER_PROCESS_CACHE}
    raise ImproperlyConfigured("CACHE_URL must be a redis://, rediss://, db:// or locmem:// URL")


CACHES = {"default": cache_settings(env_str("CACHE_URL"), debug=DEBUG)}

# Prometheus metrics at /metrics (memoryhub/metrics.py), for a scraper sending this bearer token;
# unset, the endpoint answers 404. With several web workers, each writes its counters under
# PROMETHEUS_MULTIPROC_DIR (read by prometheus_client itself too), and a scrape adds them up.
MEMORYHUB_METRICS_TOKEN = env_str("MEMORYHUB_METRICS_TOKEN")
_metrics_dir = env_str("PROMETHEUS_MULTIPROC_DIR")
METRICS_MULTIPROCESS_DIR = Path(_metrics_dir) if _metrics_dir else None

# OpenTelemetry (memoryhub/telemetry.py): off unless an OTLP endpoint is set or it is turned on
# explicitly; the exporter reads the OTEL_EXPORTER_OTLP_* variables itself.
MEMORYHUB_OTEL_ENABLED = env_bool(
    "MEMORYHUB_OTEL_ENABLED", default=env_str("OTEL_EXPORTER_OTLP_ENDPOINT") is not None
)
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "memoryhub") or "memoryhub"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"embedded_postgres": {"level": "WARNING"}},
}

# HTTPS hardening (what `manage.py check --deploy` asks for): on by default with DEBUG off.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
# Trust X-Forwarded-Proto only behind a proxy that sets it and strips the client's own: anyone
# else could claim HTTPS with it.
if env_bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
