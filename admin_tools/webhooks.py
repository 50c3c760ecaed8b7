"""Staff-only pages of the workspace's webhooks: endpoints, secrets, the delivery log, replay."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.text import format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST, require_safe

from accounts.roles import require_staff
from memoryhub.errors import InvalidInputError
from memoryhub.http import AuthedRequest, domain_errors_as_http, redirect_after_post, staff_actor
from memoryhub.models import ActorType, Channel
from memoryhub.webhooks import events, queries, services

PAGE_SIZE = 50
# What each event says, for the form; its code stays beside it: the receiver matches on it.
EVENT_WORDS = {
    events.MEMORY_CREATED: _("a memory was created"),
    events.MEMORY_UPDATED: _("a memory was changed"),
    events.MEMORY_FORGOTTEN: _("memories were forgotten or deleted"),
    events.SESSION_EXTRACTED: _("memories were taken from a conversation"),
    events.CANDIDATE_WAITING: _("an item waits in the review queue"),
    events.REVIEW_DECIDED: _("a reviewer decided on an item of the review queue"),
    events.USER_DELETED: _("a user was deleted"),
}


class WebhookForm(forms.Form):
    url = forms.URLField(label=_("Url"), max_length=500, assume_scheme="https")
    event_types = forms.MultipleChoiceField(
        choices=[
            (event, format_lazy("{code} ({words})", code=event, words=EVENT_WORDS[event]))
            for event in events.EVENT_TYPES
        ],
        widget=forms.CheckboxSelectMultiple,
        label=_("Events"),
    )
    include_text = forms.BooleanField(
        required=False, label=_("Include memory text (off: ids, kinds and timestamps only)")
    )
    description = forms.CharField(label=_("Description"), required=False, max_length=200)


def _page(
    request: AuthedRequest, *, form: WebhookForm, shown: Any = None, status: int = 200
) -> HttpResponse:
    actor = staff_actor(request, ActorType.ADMIN, Channel.ADMIN)
    workspace = request.user.workspace
    endpoints = list(queries.endpoints_of(workspace=workspace, actor=actor))
    deliveries = queries.deliveries_of(
        workspace=workspace, actor=actor, status=request.GET.get("status") or None
    )
    page = Paginator(deliveries, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "endpoints": endpoints,
        "page": page,
        "shown": shown,
        "secret": services.current_secret(shown) if shown is not None else "",
    }
    return render(request, "admin_tools/webhooks.html", context, status=status)


@require_safe
@require_staff
def webhook_list(request: AuthedRequest) -> HttpResponse:
    """The workspace's endpoints, a form to add one, and the delivery log with replay."""
    return _page(request, form=WebhookForm())


@require_POST
@require_staff
def webhook_create(request: AuthedRequest) -> HttpResponse:
    """Add an endpoint; the page shows its secret this once."""
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=422)
    try:
        endpoint = services.create_endpoint(
            workspace=request.user.workspace,
            url=form.cleaned_data["url"],
            event_types=form.cleaned_data["event_types"],
            include_text=form.cleaned_data["include_text"],
            description=form.cleaned_data["description"],
            actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
        )
    except InvalidInputError as error:
        form.add_error(None, error.in_words())
        return _page(request, form=form, status=422)
    return _page(request, form=WebhookForm(), shown=endpoint)


@require_POST
@require_staff
@domain_errors_as_http
def webhook_rotate(request: AuthedRequest, endpoint_id: str) -> HttpResponse:
    """A new secret, shown this once; the old one keeps signing during the grace period."""
    endpoint = services.rotate_secret(
        workspace=request.user.workspace,
        endpoint_id=endpoint_id,
        actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
    )
    return _page(request, form=WebhookForm(), shown=endpoint)


@require_POST
@require_staff
@domain_errors_as_http
def webhook_toggle(request: AuthedRequest, endpoint_id: str) -> HttpResponse:
    """Disable an enabled endpoint, or enable a disabled one."""
    enabled = request.POST.get("enabled") == "1"
    services.set_enabled(
        workspace=request.user.workspace,
        endpoint_id=endpoint_id,
        enabled=enabled,
        actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
    )
    messages.success(
        request, gettext("Endpoint enabled.") if enabled else gettext("Endpoint disabled.")
    )
    return redirect_after_post(request, reverse("admin_tools:webhook_list"))


@require_POST
@require_staff
@domain_errors_as_http
def delivery_replay(request: AuthedRequest, delivery_id: int) -> HttpResponse:
    """Send a delivery again, with the same message id."""
    delivery = services.replay_delivery(
        workspace=request.user.workspace,
        delivery_id=delivery_id,
        actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
    )
    messages.success(request, gettext("Delivery {id} queued again.").format(id=delivery.message_id))
    return redirect_after_post(request, reverse("admin_tools:webhook_list"))
