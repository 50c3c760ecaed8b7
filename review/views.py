"""Reviewer pages: the queue, one candidate and its decisions, the knowledge base.

Every view is for reviewers of the request user's own workspace (`require_reviewer`: 403 for
anyone else, TOTP required); a candidate or document of another workspace is a 404.
"""

from __future__ import annotations

from urllib.parse import urlencode

from allauth.account.decorators import reauthentication_required
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.roles import require_reviewer
from memoryhub.actors import Actor
from memoryhub.embeddings import embedder_for_workspace
from memoryhub.errors import ConflictError, MemoryHubError
from memoryhub.http import AuthedRequest, domain_errors_as_http, redirect_after_post, staff_actor
from memoryhub.knowledge import documents as knowledge
from memoryhub.knowledge.queries import get_document, list_documents
from memoryhub.models import ActorType, Channel
from memoryhub.paging import page_number
from memoryhub.queries.connections import list_review_keys
from memoryhub.services.agents import create_review_key, revoke_review_key

from . import decisions
from .chart import build_chart
from .forms import (
    ApproveForm,
    DigestForm,
    DocumentEditForm,
    DocumentForm,
    QueueFilterForm,
    RejectForm,
    ReviewKeyForm,
    UserAnswerForm,
)
from .notices import set_review_digest
from .queries import (
    get_candidate,
    list_queue,
    queue_size,
    threshold_history,
)

PER_PAGE = 25


def _said(error: MemoryHubError) -> str:
    """A domain error in the reader's language.

    review/decisions.py marks its messages with gettext_noop: the API sends them in English,
    these pages translate them here. A message nobody marked reads as it was raised.
    """
    return error.in_words()


def _reviewer(request: AuthedRequest) -> Actor:
    """The signed-in reviewer, for the audit log."""
    return staff_actor(request, ActorType.REVIEWER, Channel.UI)


@require_safe
@require_reviewer
def queue(request: AuthedRequest) -> HttpResponse:
    """Pending candidates by priority, one per group of similar ones, with the threshold chart."""
    workspace = request.user.workspace
    form = QueueFilterForm(request.GET or None)
    page = page_number(request)
    candidates, total = list_queue(
        workspace=workspace,
        actor=_reviewer(request),
        filters=form.filters(),
        page=page,
        per_page=PER_PAGE,
    )
    context = {
        "form": form,
        "candidates": candidates,
        "page": page,
        "has_next": page * PER_PAGE < total,
        "total": total,
        "queue_size": queue_size(workspace=workspace),
        "threshold": workspace.review_threshold,
        "chart": build_chart(threshold_history(workspace=workspace)),
        # The filters again, for the page links (without the page number itself).
        "query": urlencode({k: v for k, v in form.cleaned_data.items() if v})
        if form.is_valid()
        else "",
    }
    template = "review/_queue.html" if request.htmx else "review/queue.html"
    return render(request, template, context)


def _detail(
    request: AuthedRequest,
    candidate_id: str,
    *,
    approve_form: ApproveForm | None = None,
    reject_form: RejectForm | None = None,
    user_answer_form: UserAnswerForm | None = None,
    status: int = 200,
) -> HttpResponse:
    detail = get_candidate(
        workspace=request.user.workspace, candidate_id=candidate_id, actor=_reviewer(request)
    )
    candidate = detail.candidate
    approve_form = approve_form or ApproveForm(
        initial={"question": candidate.question, "answer": candidate.answer}
    )
    context = {
        "detail": detail,
        "candidate": candidate,
        "approve_form": approve_form,
        "reject_form": reject_form or RejectForm(),
        "user_answer_form": user_answer_form or UserAnswerForm(),
        "threshold": request.user.workspace.review_threshold,
    }
    return render(request, "review/candidate_detail.html", context, status=status)


@require_safe
@require_reviewer
@domain_errors_as_http
def candidate_detail(request: AuthedRequest, candidate_id: str) -> HttpResponse:
    """One candidate: scrubbed question and answer, signals, context ids, similar ones."""
    return _detail(request, candidate_id)


@require_POST
@require_reviewer
@domain_errors_as_http
def candidate_approve(request: AuthedRequest, candidate_id: str) -> HttpResponse:
    """Publish the (possibly edited) candidate to the knowledge base."""
    form = ApproveForm(request.POST)
    if not form.is_valid():
        return _detail(request, candidate_id, approve_form=form, status=422)
    try:
        document = decisions.approve_candidate(
            workspace=request.user.workspace,
            candidate_id=candidate_id,
            reviewer=request.user,
            actor=_reviewer(request),
            embedder=embedder_for_workspace(request.user.workspace),
            question=form.cleaned_data["question"],
            answer=form.cleaned_data["answer"],
            apply_to_group=form.cleaned_data["apply_to_group"],
        )
    except ConflictError as error:
        messages.warning(request, _said(error))
        return redirect_after_post(request, reverse("review:queue"))
    except MemoryHubError as error:
        form.add_error(None, _said(error))
        return _detail(request, candidate_id, approve_form=form, status=422)
    messages.success(
        request, _("Published “{title}” to the knowledge base.").format(title=document.title)
    )
    return redirect_after_post(request, reverse("review:queue"))


@require_POST
@require_reviewer
@domain_errors_as_http
def candidate_reject(request: AuthedRequest, candidate_id: str) -> HttpResponse:
    """Reject the candidate with a reason."""
    form = RejectForm(request.POST)
    if not form.is_valid():
        return _detail(request, candidate_id, reject_form=form, status=422)
    try:
        decisions.reject_candidate(
            workspace=request.user.workspace,
            candidate_id=candidate_id,
            reviewer=request.user,
            actor=_reviewer(request),
            reason=form.cleaned_data["reason"],
            apply_to_group=form.cleaned_data["apply_to_group"],
        )
    except ConflictError as error:
        messages.warning(request, _said(error))
        return redirect_after_post(request, reverse("review:queue"))
    messages.success(request, _("Rejected."))
    return redirect_after_post(request, reverse("review:queue"))


@require_POST
@require_reviewer
@domain_errors_as_http
def candidate_skip(request: AuthedRequest, candidate_id: str) -> HttpResponse:
    """Put the candidate behind the others for now."""
    try:
        decisions.skip_candidate(
            workspace=request.user.workspace, candidate_id=candidate_id, actor=_reviewer(request)
        )
    except ConflictError as error:
        messages.warning(request, _said(error))
    return redirect_after_post(request, reverse("review:queue"))


@require_POST
@require_reviewer
@domain_errors_as_http
def candidate_answer_for_user(request: AuthedRequest, candidate_id: str) -> HttpResponse:
    """Answer a question about the user for them: it waits in their memory for them to confirm."""
    form = UserAnswerForm(request.POST)
    if not form.is_valid():
        return _detail(request, candidate_id, user_answer_form=form, status=422)
    try:
        decisions.answer_for_user(
            workspace=request.user.workspace,
            candidate_id=candidate_id,
            reviewer=request.user,
            actor=_reviewer(request),
            embedder=embedder_for_workspace(request.user.workspace),
            answer=form.cleaned_data["user_answer"],
        )
    except ConflictError as error:
        messages.warning(request, _said(error))
        return redirect_after_post(request, reverse("review:queue"))
    except MemoryHubError as error:
        messages.error(request, _said(error))  # Paused, memory off, a proposed fact: say why.
        return _detail(request, candidate_id, user_answer_form=form, status=422)
    messages.success(
        request, _("Answered for this user: they confirm it before any agent uses it.")
    )
    return redirect_after_post(request, reverse("review:queue"))


@require_POST
@require_reviewer
@domain_errors_as_http
def candidate_needs_user(request: AuthedRequest, candidate_id: str) -> HttpResponse:
    """Leave a question only the user can answer to them (an open item in their memory)."""
    try:
        decisions.mark_needs_user(
            workspace=request.user.workspace,
            candidate_id=candidate_id,
            reviewer=request.user,
            actor=_reviewer(request),
            embedder=embedder_for_workspace(request.user.workspace),
        )
    except ConflictError as error:
        messages.warning(request, _said(error))
        return redirect_after_post(request, reverse("review:queue"))
    except MemoryHubError as error:
        messages.error(request, _said(error))
        return _detail(request, candidate_id, status=422)
    messages.success(request, _("Left to the user: it is an open item in their memory now."))
    return redirect_after_post(request, reverse("review:queue"))


def _knowledge_page(
    request: AuthedRequest, form: DocumentForm | None = None, *, status: int = 200
) -> HttpResponse:
    documents = list_documents(workspace=request.user.workspace)
    context = {"documents": documents, "form": form or DocumentForm()}
    return render(request, "review/knowledge_list.html", context, status=status)


@require_safe
@require_reviewer
def knowledge_list(request: AuthedRequest) -> HttpResponse:
    """The workspace knowledge base, with a form to add a document."""
    return _knowledge_page(request)


@require_POST
@require_reviewer
def knowledge_add(request: AuthedRequest) -> HttpResponse:
    """Add a pasted or uploaded document; it is chunked, embedded and published at once."""
    form = DocumentForm(request.POST, request.FILES)
    if not form.is_valid():
        return _knowledge_page(request, form, status=422)
    try:
        document = knowledge.publish_document(
            workspace=request.user.workspace,
            title=form.cleaned_data["title"],
            body=form.cleaned_data["body"],
            source=form.cleaned_data["source"],
            embedder=embedder_for_workspace(request.user.workspace),
            created_by=request.user,
        )
    except MemoryHubError as error:
        form.add_error(None, _said(error))
        return _knowledge_page(request, form, status=422)
    messages.success(request, _("Published “{title}”.").format(title=document.title))
    return redirect_after_post(request, reverse("review:knowledge_list"))


@require_http_methods(["GET", "POST"])
@require_reviewer
@domain_errors_as_http
def document_edit(request: AuthedRequest, document_id: str) -> HttpResponse:
    """Edit a document's title and text; it is embedded again on save."""
    workspace = request.user.workspace
    document = get_document(workspace=workspace, document_id=document_id)
    form = DocumentEditForm(
        request.POST or None, initial={"title": document.title, "body": document.body}
    )
    if request.method == "POST" and form.is_valid():
        try:
            knowledge.edit_document(
                workspace=workspace,
                document_id=document.pk,
                title=form.cleaned_data["title"],
                body=form.cleaned_data["body"],
                embedder=embedder_for_workspace(request.user.workspace),
            )
        except MemoryHubError as error:
            form.add_error(None, _said(error))
        else:
            messages.success(request, _("Saved."))
            return redirect_after_post(request, reverse("review:knowledge_list"))
    status = 422 if request.method == "POST" else 200
    context = {"document": document, "form": form}
    return render(request, "review/document_edit.html", context, status=status)


@require_POST
@require_reviewer
@domain_errors_as_http
def document_publication(request: AuthedRequest, document_id: str) -> HttpResponse:
    """Publish or unpublish a document (`publish=1` or `publish=0`)."""
    is_published = request.POST.get("publish") == "1"
    document = knowledge.set_published(
        workspace=request.user.workspace, document_id=document_id, is_published=is_published
    )
    text = _("Published “{title}”.") if document.is_published else _("Unpublished “{title}”.")
    messages.success(request, text.format(title=document.title))
    return redirect_after_post(request, reverse("review:knowledge_list"))


# The reviewer's own settings: reviewer keys and the daily digest ------------------------------

NEW_REVIEW_KEY_SESSION = "new_review_key"


@require_http_methods(["GET", "POST"])
@require_reviewer
# As for personal keys: a key outlives the session, so minting one asks for the password again.
@reauthentication_required(allow_get=True)  # type: ignore[untyped-decorator]  # allauth is untyped.
@sensitive_variables("issued")  # A new key, in clear.
def reviewer_settings(request: AuthedRequest) -> HttpResponse:
    """Reviewer keys for the review API (a new one is shown once) and the daily digest."""
    form = ReviewKeyForm(request.POST or None)
    if request.method == "POST":
        if not form.is_valid():
            return _settings_page(request, form, new_key=None, status=422)
        issued = create_review_key(
            reviewer=request.user, name=form.cleaned_data["name"], actor=_reviewer(request)
        )
        # Post, redirect, get: a reload makes no second key; the key waits in the session.
        request.session[NEW_REVIEW_KEY_SESSION] = issued.raw_key
        messages.success(request, _("Reviewer key created. Copy it now: it is shown only once."))
        return redirect("review:settings")
    return _settings_page(request, form, new_key=request.session.pop(NEW_REVIEW_KEY_SESSION, None))


@sensitive_variables("new_key", "context")  # A new key, in clear.
def _settings_page(
    request: AuthedRequest, form: ReviewKeyForm, *, new_key: str | None, status: int = 200
) -> HttpResponse:
    context = {
        "form": form,
        "keys": list_review_keys(user=request.user),
        "new_key": new_key,
        "api_url": request.build_absolute_uri("/api/v1/"),
        "has_digest": request.user.has_review_digest,
    }
    response = render(request, "review/settings.html", context, status=status)
    response["Cache-Control"] = "no-store"  # The page may hold a new key in clear.
    return response


@require_POST
@require_reviewer
@domain_errors_as_http
def reviewer_key_revoke(request: AuthedRequest, key_id: int) -> HttpResponse:
    """Revoke one of the reviewer's keys (another's key is not found)."""
    api_key = revoke_review_key(reviewer=request.user, key_id=key_id, actor=_reviewer(request))
    messages.success(
        request, _("The reviewer key {prefix}… is revoked.").format(prefix=api_key.prefix)
    )
    return redirect("review:settings")


@require_POST
@require_reviewer
def reviewer_digest(request: AuthedRequest) -> HttpResponse:
    """Turn the daily email of what waits for review on (`is_on=1`) or off."""
    form = DigestForm(request.POST)
    is_on = form.is_valid() and form.cleaned_data["is_on"]
    set_review_digest(reviewer=request.user, is_on=is_on, actor=_reviewer(request))
    messages.success(request, _("Daily digest on.") if is_on else _("Daily digest off."))
    return redirect("review:settings")
