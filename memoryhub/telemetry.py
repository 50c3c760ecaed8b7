"""OpenTelemetry traces: off unless configured; the one module that imports opentelemetry.

With OTEL_EXPORTER_OTLP_ENDPOINT set (or MEMORYHUB_OTEL_ENABLED=true) each process exports its
spans over OTLP/HTTP: Django requests, Celery tasks (their trace continues the request that
queued them: the Celery instrumentation carries the context in the message headers), psycopg
queries, and our own spans around recall, context assembly, extraction, embedding and the audit
append. Those follow the GenAI semantic conventions where they fit (`gen_ai.operation.name`,
`gen_ai.request.model`, `gen_ai.request.top_k`, `gen_ai.usage.*`; memory operations named as
the proposed memory conventions name them: `search_memory`, `update_memory`).

Privacy invariant: a span carries ids, counts, sizes and timings, never memory text, queries,
messages, names or emails. `traced` reads only the keyword arguments listed in ID_ARGUMENTS,
SIZE_ARGUMENTS and COUNT_ARGUMENTS, and of those it keeps the id or the length. Query strings
are cut from request URLs (an API call names its user by external id there).
tests/memoryhub/test_telemetry.py scans every attribute, event and name of a whole write and
read path for canaries.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sized
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

from django.conf import settings
from django.http import HttpRequest
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

P = ParamSpec("P")
R = TypeVar("R")

TRACER_NAME = "memoryhub"
# Keyword arguments whose primary key is a span attribute (model instances or ids).
ID_ARGUMENTS = {
    "user": "memoryhub.user.id",
    "mode": "memoryhub.mode.id",
    "agent": "gen_ai.agent.id",
    "session": "gen_ai.conversation.id",
    "session_id": "gen_ai.conversation.id",
    "subject_user_id": "memoryhub.user.id",
}
# Keyword arguments holding people's text: only their length in characters is kept.
SIZE_ARGUMENTS = {
    "query": "memoryhub.query.chars",
    "message": "memoryhub.message.chars",
    "content": "memoryhub.content.chars",
}
# Keyword arguments that are numbers or collections: the number, or how many.
COUNT_ARGUMENTS = {
    "k": "gen_ai.request.top_k",
    "budget_tokens": "memoryhub.budget_tokens",
    "object_ids": "memoryhub.object.count",
}
# Span attributes that may name an action from our own fixed catalogue (audit actions).
CATALOGUE_ARGUMENTS = {"action": "memoryhub.audit.action"}
# Never sent: health probes and the metrics scrape every second would drown the traces.
EXCLUDED_URLS = "healthz,readyz,metrics"
URL_ATTRIBUTES = ("http.url", "http.target", "url.full")

_state = {"is_enabled": False}


def is_enabled() -> bool:
    return _state["is_enabled"]


def configure() -> None:
    """Export this process's spans over OTLP when configured; otherwise do nothing at all."""
    if not settings.MEMORYHUB_OTEL_ENABLED or is_enabled():
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT…) itself; the
    # batch processor starts its thread again in a forked Celery child.
    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.OTEL_SERVICE_NAME})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument()


def instrument() -> None:
    """Turn on the Django, Celery and psycopg instrumentations and our own spans."""
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    # Inserts its middleware first in settings.MIDDLEWARE: this runs in AppConfig.ready, before
    # any handler loads the middleware.
    DjangoInstrumentor().instrument(
        excluded_urls=EXCLUDED_URLS, request_hook=_drop_query_string, is_sql_commentor_enabled=False
    )
    CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]  # Untyped upstream.
    # Statements carry placeholders, never parameter values (capture_parameters stays off).
    PsycopgInstrumentor().instrument(enable_commenter=False, skip_dep_check=True)
    _state["is_enabled"] = True


def uninstrument() -> None:
    """Undo `instrument` (tests)."""
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().uninstrument()
    CeleryInstrumentor().uninstrument()  # type: ignore[no-untyped-call]  # Untyped upstream.
    PsycopgInstrumentor().uninstrument()
    _state["is_enabled"] = False


def _drop_query_string(span: Span, request: HttpRequest) -> None:
    # An API call names its user (external id) and mode in the query string.
    if not span.is_recording():
        return
    # The raw Host header, not get_host(): a host Django refuses would raise here, in the
    # first middleware, instead of getting its 400 further down.
    host = request.META.get("HTTP_HOST") or request.META.get("SERVER_NAME", "")
    url = f"{request.scheme}://{host}{request.path}"
    span.set_attribute("http.url", url)
    span.set_attribute("http.target", request.path)
    span.set_attribute("url.full", url)
    span.set_attribute("url.query", "")


def _primary_key(value: object) -> str | None:
    """A model's primary key, an int or a UUID; None for anything else (a slug is a name)."""
    pk = getattr(value, "pk", value)
    if isinstance(pk, UUID | int) and not isinstance(pk, bool):
        return str(pk)
    if isinstance(pk, str):
        try:
            return str(UUID(pk))
        except ValueError:
            return None
    return None


def argument_attributes(arguments: Mapping[str, object]) -> dict[str, str | int]:
    """The span attributes of a call: ids, lengths and counts of the listed arguments only."""
    attributes: dict[str, str | int] = {}
    for name, value in arguments.items():
        if name in ID_ARGUMENTS:
            pk = _primary_key(value)
            if pk is not None:
                attributes[ID_ARGUMENTS[name]] = pk
        elif name in SIZE_ARGUMENTS and isinstance(value, str):
            attributes[SIZE_ARGUMENTS[name]] = len(value)
        elif name in COUNT_ARGUMENTS:
            if isinstance(value, int):
                attributes[COUNT_ARGUMENTS[name]] = value
            elif isinstance(value, Sized):
                attributes[COUNT_ARGUMENTS[name]] = len(value)
        elif name in CATALOGUE_ARGUMENTS and isinstance(value, str):
            attributes[CATALOGUE_ARGUMENTS[name]] = value
    return attributes


def traced(
    operation: str,
    *,
    span_name: str | None = None,
    result_attributes: Callable[[Any], Mapping[str, str | int | bool]] | None = None,
    static: Mapping[str, str | int] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the function in a span named after `operation`, when tracing is on.

    Attributes: `gen_ai.operation.name`, `static`, what `argument_attributes` keeps of the
    keyword arguments, and `result_attributes(result)` (by default, how many items a list
    result holds). Costs one flag check when tracing is off.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if not is_enabled():
                return function(*args, **kwargs)
            attributes: dict[str, str | int] = {
                "gen_ai.operation.name": operation,
                **(static or {}),
            }
            attributes.update(argument_attributes(kwargs))
            with span(span_name or operation, attributes) as current:
                result = function(*args, **kwargs)
                if current.is_recording():
                    current.set_attributes(dict(_describe(result, result_attributes)))
                return result

        return wrapper

    return decorate


def _describe(
    result: object, result_attributes: Callable[[Any], Mapping[str, str | int | bool]] | None
) -> Mapping[str, str | int | bool]:
    if result_attributes is not None:
        return result_attributes(result)
    if isinstance(result, list | tuple):
        return {"memoryhub.result.count": len(result)}
    return {}


@contextmanager
def span(name: str, attributes: Mapping[str, str | int | bool]) -> Iterator[Span]:
    """A span of our own (internal); an exception is recorded by its class name only."""
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name,
        kind=SpanKind.INTERNAL,
        attributes=dict(attributes),
        record_exception=False,  # An exception's message could quote a user's text.
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as error:
            current.set_attribute("error.type", type(error).__name__)
            current.set_status(Status(StatusCode.ERROR))
            raise


def embedding_attributes(model: str, dimensions: int) -> dict[str, str | int]:
    """The GenAI attributes of an embeddings call to a model in this process."""
    return {
        "gen_ai.request.model": model,
        "gen_ai.provider.name": "memoryhub.local",
        "gen_ai.embeddings.dimension.count": dimensions,
    }


def record_embedding_input(*, texts: int, tokens: int | None = None) -> None:
    """Add how many texts (and tokens) the current embeddings span embeds."""
    if not is_enabled():
        return
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attribute("memoryhub.input.count", texts)
        if tokens is not None:
            current.set_attribute("gen_ai.usage.input_tokens", tokens)


def extraction_result_attributes(run: Any) -> dict[str, str | int | bool]:
    """What an extraction run did: its id, extractor, items and tokens (never the items)."""
    if run is None:
        return {"memoryhub.extraction.skipped": True}
    return {
        "memoryhub.extraction.run.id": str(run.pk),
        "gen_ai.provider.name": str(run.extractor),
        "memoryhub.extraction.items_written": int(run.items_written),
        "memoryhub.extraction.items_rejected": int(run.items_rejected),
        "gen_ai.usage.input_tokens": int(run.input_tokens),
        "gen_ai.usage.output_tokens": int(run.output_tokens),
    }


def context_result_attributes(bundle: Any) -> dict[str, str | int | bool]:
    """The size of an assembled context: blocks, dropped entries and tokens (never the text)."""
    return {
        "memoryhub.context.blocks": len(bundle.blocks),
        "memoryhub.context.dropped": len(bundle.dropped),
        "memoryhub.context.tokens": int(bundle.total_tokens),
        "memoryhub.context.over_budget": bool(bundle.is_over_budget),
    }


def audit_result_attributes(entry: Any) -> dict[str, str | int | bool]:
    return {"memoryhub.audit.entry.id": int(entry.pk)}
