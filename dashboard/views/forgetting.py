"""Forget the last hour, a period or a topic; delete all; the deletion receipt; export."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.forms import DeleteAllForm, ForgetForm
from memoryhub.embeddings import default_embedder
from memoryhub.errors import MemoryHubError
from memoryhub.http import AuthedRequest
from memoryhub.queries.export import export_user_data
from memoryhub.services.curation import forget_all_modes, forget_mode
from memoryhub.services.forget import DeletionReceipt, forget

from .scoping import actor_of, mode_or_404

RECEIPT_SESSION_KEY = "dashboard.last_receipt"


def _keep_receipt(
    request: AuthedRequest, receipt: DeletionReceipt, *, what: str, mode_name: str
) -> None:
    # The receipt page is a GET after the POST (reload-safe); the session carries it there.
    request.session[RECEIPT_SESSION_KEY] = {
        "what": what,
        "mode": mode_name,
        "counts": dict(sorted(receipt.counts.items())),
        "total": receipt.total,
        "deleted_at": receipt.deleted_at.isoformat(),
    }


@require_http_methods(["GET", "POST"])
@login_required
def forget_page(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """Confirm, then forget the last hour, a period or a topic in this mode."""
    mode = mode_or_404(request.user, mode_slug)
    form = ForgetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            receipt = forget(
                user=request.user,
                mode=mode,
                selector=form.selector(now=timezone.now()),
                actor=actor_of(request),
                embedder=default_embedder(),
            )
        except MemoryHubError as error:
            form.add_error(None, str(error))
        else:
            _keep_receipt(request, receipt, what=form.describe(), mode_name=mode.name)
            messages.success(request, f"Forgotten: {receipt.total} item(s) are gone for good.")
            return redirect("dashboard:receipt")
    status = 422 if request.method == "POST" else 200
    context = {"mode": mode, "form": form, "what": request.GET.get("what", ForgetForm.LAST_HOUR)}
    return render(request, "dashboard/forget.html", context, status=status)


@require_GET
@login_required
def receipt(request: AuthedRequest) -> HttpResponse:
    """The deletion receipt of the last forget: how many items of each kind went, and when."""
    data: dict[str, Any] | None = request.session.get(RECEIPT_SESSION_KEY)
    if data is not None:
        data = {**data, "deleted_at": datetime.fromisoformat(data["deleted_at"])}
    return render(request, "dashboard/receipt.html", {"receipt": data})


@require_http_methods(["GET", "POST"])
@login_required
def delete_all(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """Delete everything of this mode, or of every mode, after a typed confirmation."""
    mode = mode_or_404(request.user, mode_slug)
    form = DeleteAllForm(request.POST or None, mode=mode, initial={"scope": mode.slug})
    if request.method == "POST" and form.is_valid():
        actor, embedder = actor_of(request), default_embedder()
        if form.is_everything:
            result = forget_all_modes(user=request.user, actor=actor, embedder=embedder)
            what, mode_name = "everything", "every mode"
        else:
            result = forget_mode(user=request.user, mode=mode, actor=actor, embedder=embedder)
            what, mode_name = "everything", mode.name
        _keep_receipt(request, result, what=what, mode_name=mode_name)
        messages.success(request, f"Deleted: {result.total} item(s) are gone for good.")
        return redirect("dashboard:receipt")
    status = 422 if request.method == "POST" else 200
    return render(request, "dashboard/delete_all.html", {"mode": mode, "form": form}, status=status)


@require_GET
@login_required
def export(request: AuthedRequest) -> HttpResponse:
    """Download everything of the user, decrypted, as one JSON file."""
    document = export_user_data(user=request.user, actor=actor_of(request))
    body = json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    filename = f"memoryhub-export-{timezone.now():%Y%m%d-%H%M%S}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # The file holds the user's decrypted memory: no shared cache may keep it.
    response["Cache-Control"] = "no-store"
    return response
