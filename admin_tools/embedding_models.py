"""Staff-only page of the embedding model of each workspace: the choice and what is left."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST, require_safe

from accounts.roles import require_staff
from memoryhub.embeddings import MODELS, workspace_model
from memoryhub.http import AuthedRequest, redirect_after_post, staff_actor
from memoryhub.models import ActorType, Channel, Workspace
from memoryhub.services.reembed import choose_embedding_model, only, remaining_rows


class EmbeddingModelForm(forms.Form):
    model = forms.ChoiceField(
        choices=[("", gettext_lazy("Deployment default")), *((m, m) for m in MODELS)],
        required=False,
        label=gettext_lazy("Embedding model"),
    )


@dataclass(frozen=True)
class WorkspaceModel:
    workspace: Workspace
    model: str
    # Stored vectors of another model: found by words only until `reembed --workspace`.
    left: int
    form: EmbeddingModelForm


@require_safe
@require_staff
def embedding_models(request: AuthedRequest) -> HttpResponse:
    """Every workspace with its model, a form to change it and the vectors left to re-embed."""
    rows = []
    for workspace in Workspace.objects.order_by("slug"):
        model = workspace_model(workspace)
        rows.append(
            WorkspaceModel(
                workspace=workspace,
                model=model,
                left=sum(remaining_rows(model, workspaces=only(workspace)).values()),
                form=EmbeddingModelForm(initial={"model": workspace.embedding_model}),
            )
        )
    context = {"rows": rows, "default_model": settings.MEMORYHUB_EMBEDDING_MODEL}
    return render(request, "admin_tools/embedding_models.html", context)


@require_POST
@require_staff
def embedding_model_set(request: AuthedRequest, slug: str) -> HttpResponse:
    """Choose a workspace's model; its stored vectors wait for `manage.py reembed --workspace`."""
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise Http404("no such workspace")
    form = EmbeddingModelForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose one of the listed models."))
        return redirect_after_post(request, reverse("admin_tools:embedding_models"))
    choose_embedding_model(
        workspace=workspace,
        model=form.cleaned_data["model"],
        actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
    )
    messages.success(
        request,
        _(
            "“{slug}” now embeds with {model}. Run manage.py reembed --workspace {slug} so that "
            "its searches find its stored memories by meaning again."
        ).format(slug=workspace.slug, model=workspace_model(workspace)),
    )
    return redirect_after_post(request, reverse("admin_tools:embedding_models"))
