"""Forget the last hour, a period or a topic; delete all; the deletion receipt; export."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any
from uuid import uuid4

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_safe

from dashboard.forms import DeleteAllForm, ForgetForm
from memoryhub.embeddings import default_embedder
from memoryhub.errors import MemoryHubError
from memoryhub.http import AuthedRequest, StreamedDownload
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import MemoryItem
from memoryhub.models import Mode
from memoryhub.queries.export import stream_user_data
from memoryhub.queries.forget_preview import ForgetPreview, preview_forget
from memoryhub.services.curation import forget_all_modes, forget_mode
from memoryhub.services.forget import DeletionReceipt, forget

from .scoping import actor_of, mode_or_404

RECEIPT_SESSION_KEY = "dashboard.last_receipt"
# The forgotten items' text rides to the receipt page encrypted under the user's key and is
# dropped from the session once shown: the receipt names them, and nothing keeps them after.
RECEIPT_TABLE = "forget_receipt"
# A POST carrying this field only previews (the topic form); the confirmation forms leave it out.
PREVIEW_FIELD = "preview"


def _keep_receipt(
    request: AuthedRequest,
    receipt: DeletionReceipt,
    *,
    what: str,
    mode_name: str,
    items: list[MemoryItem] | None = None,
) -> None:
    # The receipt page is a GET after the POST (reload-safe); the session carries it there.
    receipt_id = str(uuid4())
    named = [{"kind": item.kind, "content": item.content} for item in items or []]
    cipher = cipher_for(request.user)
    sealed = cipher.encrypt_json(named, table=RECEIPT_TABLE, row_id=receipt_id, field="items")
    # "everything about “divorce”" names the forgotten topic: sealed too, never in clear.
    sealed_what = cipher.encrypt(what, table=RECEIPT_TABLE, row_id=receipt_id, field="what")
    request.session[RECEIPT_SESSION_KEY] = {
        "id": receipt_id,
        "sealed_what": base64.b64encode(sealed_what).decode(),
        "mode": mode_name,
        "counts": dict(sorted(receipt.counts.items())),
        "total": receipt.total,
        "deleted_at": receipt.deleted_at.isoformat(),
        "named_count": len(named),
        "named": base64.b64encode(sealed).decode() if named else None,
    }


def _take_named_items(request: AuthedRequest, data: dict[str, Any]) -> list[dict[str, str]]:
    """The forgotten items' text, once: it leaves the session as it is shown."""
    if not data.get("named"):
        return []
    named: list[dict[str, str]] = cipher_for(request.user).decrypt_json(
        base64.b64decode(data["named"]), table=RECEIPT_TABLE, row_id=data["id"], field="items"
    )
    request.session[RECEIPT_SESSION_KEY] = {**data, "named": None}
    return named


def _open_what(request: AuthedRequest, data: dict[str, Any]) -> str:
    """What the receipt says was forgotten; a receipt kept before sealing holds it as it is."""
    if "sealed_what" not in data:
        return str(data.get("what", ""))
    return cipher_for(request.user).decrypt(
        base64.b64decode(data["sealed_what"]), table=RECEIPT_TABLE, row_id=data["id"], field="what"
    )


def _preview_and_forget(
    request: AuthedRequest, mode: Mode, form: ForgetForm, *, confirmed: bool
) -> tuple[ForgetPreview | None, HttpResponse | None]:
    """Preview the selection; once confirmed, forget it too and go to the receipt."""
    selector, actor, embedder = (
        form.selector(now=timezone.now()),
        actor_of(request),
        default_embedder(),
    )
    try:
        preview = preview_forget(
            user=request.user, mode=mode, selector=selector, actor=actor, embedder=embedder
        )
        if not confirmed:
            return preview, None
        receipt = forget(
            user=request.user, mode=mode, selector=selector, actor=actor, embedder=embedder
        )
    except MemoryHubError as error:
        form.add_error(None, str(error))
        return None, None
    named = [item for item in preview.items if item.id in set(receipt.memory_ids)]
    _keep_receipt(request, receipt, what=form.describe(), mode_name=mode.name, items=named)
    messages.success(request, f"Forgotten: {receipt.total} item(s) are gone for good.")
    return preview, redirect("dashboard:receipt")


@require_http_methods(["GET", "POST"])
@login_required
def forget_page(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """Show what the last hour, a period or a topic holds in this mode; forget it when confirmed."""
    mode = mode_or_404(request.user, mode_slug)
    what = (request.POST or request.GET).get("what", ForgetForm.LAST_HOUR)
    # A topic is previewed by POST, so that what the person wants gone ("divorce") stays out of
    # the URL: browser history, proxy logs, the Referer of the next page.
    query = {"what": what, **request.GET.dict()}
    query.pop("topic", None)
    confirmed = request.method == "POST" and PREVIEW_FIELD not in request.POST
    if request.method == "POST":
        form = ForgetForm(request.POST)
    else:  # Opening the page previews the last hour; a chosen period, once given.
        form = ForgetForm(query if ForgetForm.is_asked(query) else None)
    preview = None
    if form.is_bound and form.is_valid():
        preview, done = _preview_and_forget(request, mode, form, confirmed=confirmed)
        if done is not None:
            return done
    status = 422 if form.is_bound and form.errors else 200
    context = {"mode": mode, "form": form, "what": what, "preview": preview}
    return render(request, "dashboard/forget.html", context, status=status)


@require_safe
@login_required
def receipt(request: AuthedRequest) -> HttpResponse:
    """The deletion receipt of the last forget: the items by name, how many of each kind, when."""
    data: dict[str, Any] | None = request.session.get(RECEIPT_SESSION_KEY)
    named = _take_named_items(request, data) if data is not None else []
    if data is not None:
        data = {
            **data,
            "what": _open_what(request, data),
            "deleted_at": datetime.fromisoformat(data["deleted_at"]),
        }
    response = render(request, "dashboard/receipt.html", {"receipt": data, "named": named})
    response["Cache-Control"] = "no-store"  # It may name forgotten items: keep no copy.
    return response


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


@require_safe
@login_required
def export(request: AuthedRequest) -> StreamedDownload:
    """Download everything of the user, decrypted, as one JSON file."""
    parts = stream_user_data(user=request.user, actor=actor_of(request))
    # Streamed: a user with 100,000 memories must not cost the worker their whole file.
    response = StreamedDownload(request, parts, content_type="application/json; charset=utf-8")
    filename = f"memoryhub-export-{timezone.now():%Y%m%d-%H%M%S}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # The file holds the user's decrypted memory: no shared cache may keep it.
    response["Cache-Control"] = "no-store"
    return response
