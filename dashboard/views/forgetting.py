"""Forget the last hour, a period or a topic; delete all; the deletion receipt; export."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from uuid import uuid4

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_safe

from dashboard.forms import DeleteAllForm, ForgetForm
from memoryhub.embeddings import embedder_for_workspace
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
# The topic being previewed waits in the session, sealed, under a random token: the preview
# itself is a GET (reload and Back work) whose URL names the token, never the topic.
TOPIC_SESSION_KEY = "dashboard.forget_topic"
TOPIC_TABLE = "forget_topic"
TOPIC_PREVIEW_PARAMETER = "shown"


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
        # "Items" are memories, as the preview counts them; messages, versions and the like
        # that went with them are counted apart, so the two pages agree.
        "memory_count": len(receipt.memory_ids),
        "deleted_at": receipt.deleted_at.isoformat(),
        "named_count": len(named),
        "named": base64.b64encode(sealed).decode() if named else None,
    }


def _gone_message(receipt: DeletionReceipt, *, is_forget: bool) -> str:
    """ "Forgotten: 2 items gone for good, and 3 records that went with them." (or "Deleted")."""
    items = len(receipt.memory_ids)
    others = receipt.total - items
    if is_forget:
        gone = ngettext(
            "Forgotten: {count} item gone for good", "Forgotten: {count} items gone for good", items
        )
    else:
        gone = ngettext(
            "Deleted: {count} item gone for good", "Deleted: {count} items gone for good", items
        )
    also = ngettext(
        ", and {count} record that went with them",
        ", and {count} records that went with them",
        others,
    )
    return gone.format(count=items) + (also.format(count=others) if others else "") + "."


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
        embedder_for_workspace(request.user.workspace),
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
        form.add_error(None, error.in_words())
        return None, None
    request.session.pop(TOPIC_SESSION_KEY, None)  # Forgotten: the topic is not kept either.
    named = [item for item in preview.items if item.id in set(receipt.memory_ids)]
    _keep_receipt(request, receipt, what=form.describe(), mode_name=mode.display_name, items=named)
    messages.success(request, _gone_message(receipt, is_forget=True))
    return preview, redirect("dashboard:receipt")


def _keep_topic(request: AuthedRequest, mode: Mode, topic: str) -> HttpResponse:
    """Hold the topic to preview in the session and go to its preview (post, redirect, get)."""
    token = secrets.token_urlsafe(16)
    sealed = cipher_for(request.user).encrypt(topic, table=TOPIC_TABLE, row_id=token, field="topic")
    request.session[TOPIC_SESSION_KEY] = {"id": token, "sealed": base64.b64encode(sealed).decode()}
    query = urlencode({"what": ForgetForm.TOPIC, TOPIC_PREVIEW_PARAMETER: token})
    return redirect(f"{reverse('dashboard:forget', args=[mode.slug])}?{query}")


def _held_topic(request: AuthedRequest) -> str | None:
    """The topic the URL's token names, if this session still holds it."""
    held: dict[str, str] | None = request.session.get(TOPIC_SESSION_KEY)
    token = request.GET.get(TOPIC_PREVIEW_PARAMETER)
    if not held or not token or not secrets.compare_digest(held["id"], token):
        return None
    sealed = base64.b64decode(held["sealed"])
    return cipher_for(request.user).decrypt(sealed, table=TOPIC_TABLE, row_id=token, field="topic")


@require_http_methods(["GET", "POST"])
@login_required
def forget_page(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """Show what the last hour, a period or a topic holds in this mode; forget it when confirmed."""
    mode = mode_or_404(request.user, mode_slug)
    what = (request.POST or request.GET).get("what", ForgetForm.LAST_HOUR)
    # What the person wants gone ("divorce") stays out of the URL (browser history, proxy
    # logs, the Referer of the next page): the topic form posts, and its preview is a GET
    # that names a token of the session instead.
    query = {"what": what, **request.GET.dict()}
    query.pop("topic", None)
    topic = _held_topic(request) if what == ForgetForm.TOPIC else None
    if topic is not None:
        query["topic"] = topic
    confirmed = request.method == "POST" and PREVIEW_FIELD not in request.POST
    if request.method == "POST":
        form = ForgetForm(request.POST)
        if not confirmed and form.is_valid() and form.cleaned_data["what"] == ForgetForm.TOPIC:
            return _keep_topic(request, mode, form.cleaned_data["topic"])
    else:  # Opening the page previews the last hour; a chosen period or topic, once given.
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
            "other_count": data["total"] - data.get("memory_count", data["total"]),
            "memory_count": data.get("memory_count", data["total"]),
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
        actor, embedder = actor_of(request), embedder_for_workspace(request.user.workspace)
        if form.is_everything:
            result = forget_all_modes(user=request.user, actor=actor, embedder=embedder)
            what, mode_name = _("everything"), _("every mode")
        else:
            result = forget_mode(user=request.user, mode=mode, actor=actor, embedder=embedder)
            what, mode_name = _("everything"), mode.display_name
        _keep_receipt(request, result, what=what, mode_name=mode_name)
        messages.success(request, _gone_message(result, is_forget=False))
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
