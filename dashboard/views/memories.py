"""The main page and everything done to one item: edit, delete, confirm, reject, done, copy."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django_htmx.http import reswap, trigger_client_event

from dashboard.forms import (
    AgentFilterForm,
    CopyForm,
    EpisodeFilterForm,
    MemoryEditForm,
    ModeForm,
    ResolveForm,
)
from memoryhub.embeddings import embedder_for_workspace
from memoryhub.errors import ConflictError, InvalidInputError, MemoryHubError, QuotaExceededError
from memoryhub.http import AuthedRequest, domain_errors_as_http
from memoryhub.memory_rows import get_memory_row
from memoryhub.models import Confidence, MemorySource, MemoryStatus, Mode
from memoryhub.paging import page_number
from memoryhub.queries.memories import list_versions
from memoryhub.queries.overview import (
    SECTIONS,
    SECTIONS_BY_SLUG,
    EpisodeFilter,
    explain_memory,
    get_item,
    get_overview,
    list_mode_agents,
    list_temporary_sessions,
)
from memoryhub.services.confidence import LIVE_STATUSES, confirm_memory
from memoryhub.services.curation import (
    copy_to_mode,
    mark_open_item_done,
    reject_candidate,
    resolve_contradiction,
)
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.memories import edit_memory
from memoryhub.services.users import create_mode

from .rendering import (
    back_to_list,
    is_list_page,
    page_or_fragment,
    render_fragment,
    shown_section,
)
from .scoping import actor_of, mode_or_404

DEFAULT_SECTION = SECTIONS_BY_SLUG["everything"]
OPEN_ITEMS = "open-items"
# Errors that refuse an action with a message; "not found" is left to become a 404.
# A quota too: an edit that makes a memory longer can pass the byte quota (not a 500).
REFUSALS = (InvalidInputError, ConflictError, QuotaExceededError)


@require_safe
def landing(request: HttpRequest) -> HttpResponse:
    return render(request, "landing.html")


def _episode_filter(form: EpisodeFilterForm | None) -> EpisodeFilter | None:
    if form is None or not form.is_valid():
        return None
    since, until = form.period()
    return EpisodeFilter(
        episode_type=form.cleaned_data["type"],
        topic=form.cleaned_data["topic"],
        since=since,
        until=until,
    )


def _card_context(
    request: AuthedRequest, mode: Mode, *, modes: list[Mode] | None = None, **extra: Any
) -> dict[str, Any]:
    """What a memory card needs besides the item: its mode, and the modes it can be copied to."""
    modes = modes if modes is not None else list(Mode.objects.filter(user=request.user))
    other_modes = [other for other in modes if other.pk != mode.pk]
    return {"mode": mode, "modes": modes, "other_modes": other_modes, **extra}


@require_safe
@login_required
def memory_list(request: AuthedRequest) -> HttpResponse:
    """What agents remember in one mode: a section, a page at a time, of one agent or all."""
    mode = mode_or_404(request.user, request.GET.get("mode", "personal"))
    section = SECTIONS_BY_SLUG.get(request.GET.get("section", ""), DEFAULT_SECTION)
    filters = EpisodeFilterForm(request.GET) if section.slug == "episodes" else None
    agent_form = AgentFilterForm(request.GET)
    agent_id = agent_form.cleaned_data["agent"] if agent_form.is_valid() else None
    overview = get_overview(
        user=request.user,
        mode=mode,
        actor=actor_of(request),
        section=section,
        page=page_number(request),
        episode_filter=_episode_filter(filters),
        agent_id=agent_id,
    )
    page_query = request.GET.copy()
    page_query.pop("page", None)
    page_query.setdefault("mode", mode.slug)
    context = _card_context(
        request,
        mode,
        page_query=page_query.urlencode(),
        overview=overview,
        section=section,
        sections=SECTIONS,
        filters=filters,
        mode_form=ModeForm(),
        agents=list_mode_agents(user=request.user, mode=mode),
        agent_id=agent_id,
        temporary_sessions=list_temporary_sessions(user=request.user, mode=mode),
    )
    return page_or_fragment(
        request, "dashboard/memory_list.html", "dashboard/_memory_page.html", context
    )


@require_safe
@login_required
@domain_errors_as_http
def memory_detail(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """One item: its card for htmx; the page adds why it is remembered and its history."""
    mode = mode_or_404(request.user, mode_slug)
    actor = actor_of(request)
    if request.htmx:
        item = get_item(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
        return render_fragment(
            request, "dashboard/_memory.html", _card_context(request, mode, item=item)
        )
    provenance = explain_memory(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
    versions = list_versions(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
    context = _card_context(
        request, mode, item=provenance.item, provenance=provenance, versions=versions
    )
    return render(request, "dashboard/memory_detail.html", context)


@require_safe
@login_required
@domain_errors_as_http
def memory_why(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """ "Why do you remember this?": provenance, confidence in words, last use, history."""
    if not request.htmx:
        return redirect("dashboard:memory_detail", mode_slug=mode_slug, memory_id=memory_id)
    mode = mode_or_404(request.user, mode_slug)
    actor = actor_of(request)
    provenance = explain_memory(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
    versions = list_versions(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
    context = {"mode": mode, "provenance": provenance, "versions": versions}
    return render_fragment(request, "dashboard/_why.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@domain_errors_as_http
def memory_edit(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """Edit an item inline; the previous version is kept in its history."""
    mode = mode_or_404(request.user, mode_slug)
    actor = actor_of(request)
    item = get_item(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
    initial = {"content": item.content, "importance": item.importance}
    form = MemoryEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        content = form.cleaned_data["content"]
        is_rewritten = content != item.content
        try:
            edit_memory(
                user=request.user,
                mode=mode,
                memory_id=memory_id,
                actor=actor,
                embedder=embedder_for_workspace(request.user.workspace),
                content=content if is_rewritten else None,
                importance=form.cleaned_data["importance"],
                # New words typed here are the user's own: no longer "from an agent".
                source=MemorySource.USER if is_rewritten else None,
            )
            if is_rewritten and item.status in LIVE_STATUSES:
                # ... and confirmed by the one person who knows ("Is this right?" is answered).
                # One action, one version: the edit above kept the previous words.
                confirm_memory(
                    user=request.user,
                    mode=mode,
                    memory_id=memory_id,
                    actor=actor,
                    keeps_version=False,
                )
        except REFUSALS as error:
            form.add_error("content", error.in_words())
        else:
            messages.success(
                request, _("Saved. The previous version is kept in the item's history.")
            )
            if not request.htmx:
                return back_to_list(request, mode, anchor=f"memory-{memory_id}")
            item = get_item(user=request.user, mode=mode, memory_id=memory_id, actor=actor)
            context = _card_context(request, mode, item=item)
            response = render_fragment(request, "dashboard/_memory.html", context, mode=mode)
            if is_rewritten and item.status in LIVE_STATUSES:
                # Its "Is this right?" box, if shown, is answered too (app.js removes it).
                trigger_client_event(response, "mh-answered", {"id": f"candidate-{memory_id}"})
            return response
    status = 422 if request.method == "POST" else 200
    context = _card_context(request, mode, item=item, form=form)
    return page_or_fragment(
        request, "dashboard/memory_edit.html", "dashboard/_memory_form.html", context, status=status
    )


def _refused(request: AuthedRequest, mode: Mode, error: MemoryHubError) -> HttpResponse:
    """A refused action: say why, and leave the page as it was."""
    messages.error(request, error.in_words())
    if request.htmx:
        # 422 is the one error status htmx is told to accept (app.js): the message swaps in.
        return reswap(render_fragment(request, "", {}, status=422), "none")
    return back_to_list(request, mode)


def _done(
    request: AuthedRequest,
    mode: Mode,
    memory_id: UUID,
    message: str,
    *,
    is_gone: bool = False,
    was_candidate: bool = False,
) -> HttpResponse:
    """After an action on one item: what happened, next to it (htmx), or back to the list."""
    messages.success(request, message)
    if not request.htmx:
        return back_to_list(request, mode, anchor="" if is_gone else f"memory-{memory_id}")
    card = f"memory-{memory_id}"
    target = request.htmx.target or card
    twin = _twin(request, mode, memory_id, target, is_gone=is_gone, was_candidate=was_candidate)
    if is_gone or target != card:
        # The item left this region (deleted, or answered in "Is this right?"): say what
        # happened in its place, where the person is looking.
        context = _card_context(request, mode, target=target, message=message, **twin)
        return render_fragment(request, "dashboard/_feedback.html", context, mode=mode)
    item = get_item(user=request.user, mode=mode, memory_id=memory_id, actor=actor_of(request))
    context = _card_context(request, mode, item=item, feedback=message, **twin)
    return render_fragment(request, "dashboard/_memory.html", context, mode=mode)


def _twin(
    request: AuthedRequest,
    mode: Mode,
    memory_id: UUID,
    target: str,
    *,
    is_gone: bool,
    was_candidate: bool,
) -> dict[str, Any]:
    """The item's other box on the list page ("Is this right?" and the list), kept in step."""
    if not (was_candidate and is_list_page(request)):
        return {}
    twin = f"candidate-{memory_id}" if target == f"memory-{memory_id}" else f"memory-{memory_id}"
    if is_gone or twin.startswith("candidate-"):
        return {"twin_gone": twin}  # Deleted, or answered: no longer a question.
    item = get_item(user=request.user, mode=mode, memory_id=memory_id, actor=actor_of(request))
    return {"twin_item": item}


@require_http_methods(["GET", "POST"])
@login_required
@domain_errors_as_http
def memory_delete(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """Delete one item for good, with whatever was derived only from it (GET: confirm first).

    With JavaScript the card asks no question: it offers Undo for a few seconds (app.js).
    """
    mode = mode_or_404(request.user, mode_slug)
    if request.method == "GET":
        item = get_item(user=request.user, mode=mode, memory_id=memory_id, actor=actor_of(request))
        context = _card_context(request, mode, item=item)
        return render(request, "dashboard/memory_delete.html", context)
    row = get_memory_row(user=request.user, mode=mode, memory_id=memory_id)
    was_candidate = row.confidence == Confidence.CANDIDATE or row.status == MemoryStatus.CANDIDATE
    receipt = forget(
        user=request.user,
        mode=mode,
        selector=ForgetSelector(memory_ids=(memory_id,)),
        actor=actor_of(request),
        embedder=embedder_for_workspace(request.user.workspace),
    )
    if memory_id not in receipt.memory_ids:
        raise Http404("no such item")
    derived = len(receipt.memory_ids) - 1
    message = _("Deleted. It will not be used again.")
    if derived:
        also = ngettext(
            "{count} item derived from it went too.",
            "{count} items derived from it went too.",
            derived,
        )
        message = f"{message} {also.format(count=derived)}"
    return _done(request, mode, memory_id, message, is_gone=True, was_candidate=was_candidate)


@require_POST
@login_required
@domain_errors_as_http
def memory_confirm(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """ "Is this right?" — yes: the item becomes confirmed."""
    mode = mode_or_404(request.user, mode_slug)
    try:
        confirm_memory(user=request.user, mode=mode, memory_id=memory_id, actor=actor_of(request))
    except REFUSALS as error:
        return _refused(request, mode, error)
    message = _("Thanks: marked as confirmed. Agents can use it now.")
    return _done(request, mode, memory_id, message, was_candidate=True)


@require_POST
@login_required
@domain_errors_as_http
def memory_reject(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """ "Is this right?" — no: the candidate is deleted."""
    mode = mode_or_404(request.user, mode_slug)
    try:
        reject_candidate(user=request.user, mode=mode, memory_id=memory_id, actor=actor_of(request))
    except REFUSALS as error:
        return _refused(request, mode, error)
    message = _("Thanks: it is deleted and will not be used.")
    return _done(request, mode, memory_id, message, is_gone=True, was_candidate=True)


@require_POST
@login_required
@domain_errors_as_http
def memory_done(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """Mark an open item done."""
    mode = mode_or_404(request.user, mode_slug)
    try:
        mark_open_item_done(
            user=request.user,
            mode=mode,
            memory_id=memory_id,
            actor=actor_of(request),
            embedder=embedder_for_workspace(request.user.workspace),
        )
    except REFUSALS as error:
        return _refused(request, mode, error)
    # Done items leave "Open items" (its count drops): the card goes too, not only the count.
    leaves_page = shown_section(request) == OPEN_ITEMS
    return _done(request, mode, memory_id, _("Marked as done."), is_gone=leaves_page)


@require_POST
@login_required
@domain_errors_as_http
def memory_copy(request: AuthedRequest, mode_slug: str, memory_id: UUID) -> HttpResponse:
    """Copy an item to another of the user's modes (the only way anything crosses modes)."""
    mode = mode_or_404(request.user, mode_slug)
    get_memory_row(user=request.user, mode=mode, memory_id=memory_id)  # 404 before anything else.
    form = CopyForm(request.POST, user=request.user, mode=mode)
    if not form.is_valid():
        return _refused(request, mode, InvalidInputError(_("Choose one of your other modes.")))
    target: Mode = form.cleaned_data["target"]
    copy_to_mode(
        user=request.user,
        mode=mode,
        memory_id=memory_id,
        target_mode=target,
        actor=actor_of(request),
        embedder=embedder_for_workspace(request.user.workspace),
    )
    message = _("Copied to the “{name}” mode.").format(name=target.display_name)
    return _done(request, mode, memory_id, message)


@require_POST
@login_required
@domain_errors_as_http
def contradiction_resolve(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """Keep one of two contradicting items; the other is superseded (or deleted, if a guess)."""
    mode = mode_or_404(request.user, mode_slug)
    form = ResolveForm(request.POST)
    if not form.is_valid():
        raise Http404("no such items")
    try:
        resolve_contradiction(
            user=request.user,
            mode=mode,
            keep_id=form.cleaned_data["keep"],
            drop_id=form.cleaned_data["drop"],
            actor=actor_of(request),
        )
    except REFUSALS as error:
        return _refused(request, mode, error)
    message = _("Resolved: MemoryHub now uses the one you kept.")
    messages.success(request, message)
    if request.htmx:
        context = {"target": request.htmx.target or "contradiction", "message": message}
        return render_fragment(request, "dashboard/_feedback.html", context, mode=mode)
    return back_to_list(request, mode)


@require_POST
@login_required
def mode_create(request: AuthedRequest) -> HttpResponse:
    """Add a custom mode (personal and work exist already)."""
    form = ModeForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Give the new mode a name."))
        return redirect("dashboard:memory_list")
    try:
        mode = create_mode(user=request.user, name=form.cleaned_data["name"])
    except MemoryHubError as error:
        messages.error(request, error.in_words())
        return redirect("dashboard:memory_list")
    messages.success(
        request,
        _("The “{name}” mode is ready. Nothing crosses between modes.").format(
            name=mode.display_name
        ),
    )
    return redirect(f"{reverse('dashboard:memory_list')}?mode={mode.slug}")
