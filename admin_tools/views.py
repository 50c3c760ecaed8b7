"""Staff-only views: memory health KPIs and the read-only access audit with CSV export."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from accounts.roles import require_staff
from memoryhub.audit.actions import AuditAction
from memoryhub.http import AuthedRequest, staff_actor
from memoryhub.models import ActorType, Channel
from memoryhub.queries.audit_log import audit_csv_lines, audit_entries
from memoryhub.queries.health import memory_health

from .forms import AuditFilterForm

PAGE_SIZE = 50


@require_safe
@require_staff
def health(request: AuthedRequest) -> HttpResponse:
    """Memory health: volume, growth, superseded and contradicted facts, dormancy, rejections."""
    report = memory_health(actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN))
    return render(request, "admin_tools/health.html", {"report": report})


@require_safe
@require_staff
def audit_log(request: AuthedRequest) -> HttpResponse:
    """The access audit, filtered and paginated; the fragment alone for htmx."""
    # Always bound: every field is optional, so the bare page is a valid, empty filter.
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return render(request, "admin_tools/audit_log.html", {"form": form}, status=422)
    rows = audit_entries(
        form.to_filter(), actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN)
    )
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {"form": form, "page": page, "query": query.urlencode()}
    template = "admin_tools/_audit_rows.html" if request.htmx else "admin_tools/audit_log.html"
    return render(request, template, context)


@require_safe
@require_staff  # type: ignore[arg-type]  # Typed for HttpResponse; a stream passes through as is.
def audit_export(request: AuthedRequest) -> HttpResponseBase:
    """The filtered audit as a CSV download."""
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponse(_("Invalid filter."), status=422, content_type="text/plain")
    rows = audit_entries(
        form.to_filter(),
        actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
        action=AuditAction.AUDIT_EXPORT,
    )
    response = StreamingHttpResponse(
        audit_csv_lines(rows.iterator(chunk_size=2000)), content_type="text/csv"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
    return response
