"""Import a file into the user's memory, follow its progress, and review what it brought."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from dashboard.forms import ImportForm, ImportReviewForm
from memoryhub.errors import MemoryHubError
from memoryhub.http import AuthedRequest, domain_errors_as_http, redirect_after_post
from memoryhub.imports import queries as import_queries
from memoryhub.imports import review
from memoryhub.imports import services as imports
from memoryhub.models import ImportJob

from .scoping import actor_of


def _imports_page(request: AuthedRequest, form: ImportForm, *, status: int = 200) -> HttpResponse:
    context = {"form": form, "jobs": import_queries.recent_imports(user=request.user)}
    return render(request, "dashboard/imports.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: AuthedRequest) -> HttpResponse:
    """Upload a file to import (MemoryHub, Mem0, ChatGPT, Claude) and see past imports."""
    form = ImportForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method != "POST":
        return _imports_page(request, form)
    if not form.is_valid():
        return _imports_page(request, form, status=422)
    try:
        job = imports.start_import(
            user=request.user,
            mode=form.cleaned_data["mode"],
            actor=actor_of(request),
            agent=None,
            chunks=form.cleaned_data["file"].chunks(),
            file_format=form.cleaned_data["format"] or None,
            is_trusted=form.cleaned_data["trust"],
        )
    except MemoryHubError as error:
        # The message names the line or item at fault, never the file's text.
        form.add_error("file", error.in_words())
        return _imports_page(request, form, status=422)
    return redirect_after_post(request, reverse("dashboard:import_detail", args=[job.pk]))


def _detail_context(request: AuthedRequest, job: ImportJob) -> dict[str, object]:
    waiting = []
    if job.status == ImportJob.Status.DONE:
        waiting = import_queries.waiting_items(job=job, actor=actor_of(request))
    return {"job": job, "waiting": waiting, "is_running": job.status in ("queued", "running")}


@login_required
@require_safe
@domain_errors_as_http
def import_detail(request: AuthedRequest, import_id: UUID) -> HttpResponse:
    """One import: a progress bar while it runs (htmx polls the fragment), then its receipt."""
    job = imports.get_import(user=request.user, job_id=import_id)
    template = "dashboard/_import_progress.html" if request.htmx else "dashboard/import_detail.html"
    return render(request, template, _detail_context(request, job))


@login_required
@require_POST
@domain_errors_as_http
def import_review(request: AuthedRequest, import_id: UUID) -> HttpResponse:
    """Keep all, keep the selected, or discard the memories the import brought."""
    job = imports.get_import(user=request.user, job_id=import_id)
    waiting = [str(memory_id) for memory_id in review.imported_candidates(job=job)]
    form = ImportReviewForm(request.POST, waiting=waiting)
    if not form.is_valid():
        context = {**_detail_context(request, job), "review_form": form}
        return render(request, "dashboard/_import_progress.html", context, status=422)
    action, chosen = form.cleaned_data["action"], form.cleaned_data["memory_ids"]
    actor = actor_of(request)
    try:
        if action == "discard":
            count = review.discard_imported(job=job, actor=actor, memory_ids=chosen or None)
            messages.success(
                request,
                ngettext(
                    "Discarded {count} imported memory.",
                    "Discarded {count} imported memories.",
                    count,
                ).format(count=count),
            )
        else:
            selection = chosen if action == "keep_selected" else None
            count = review.keep_imported(job=job, actor=actor, memory_ids=selection)
            messages.success(
                request,
                ngettext(
                    "Kept {count} imported memory.", "Kept {count} imported memories.", count
                ).format(count=count),
            )
    except MemoryHubError as error:
        messages.error(request, error.in_words())
    return redirect_after_post(request, reverse("dashboard:import_detail", args=[job.pk]))
