"""Staff-only page of the logins linked to agent-created users, and undoing a wrong link."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.roles import require_staff
from memoryhub.errors import ConflictError, GoneError
from memoryhub.http import AuthedRequest, domain_errors_as_http, redirect_after_post, staff_actor
from memoryhub.models import ActorType, Channel
from memoryhub.queries.user_links import linked_logins
from memoryhub.services.user_links import undo_user_link

PAGE_SIZE = 50


@require_safe
@require_staff
def link_list(request: AuthedRequest) -> HttpResponse:
    """The used links of the admin's workspace, newest first, each with an undo button."""
    links = linked_logins(
        admin=request.user, actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN)
    )
    page = Paginator(links, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "admin_tools/user_links.html", {"page": page})


@require_POST
@require_staff
@domain_errors_as_http
def link_undo(request: AuthedRequest, link_id: int) -> HttpResponse:
    """Detach the login a link gave its user; a link of another workspace is a 404."""
    try:
        link = undo_user_link(
            link_id=link_id,
            admin=request.user,
            actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN),
        )
    except (GoneError, ConflictError) as error:
        messages.info(request, capfirst(f"{error.in_words()}."))
    else:
        messages.success(
            request,
            _(
                "Undone: the login left user {user}, which keeps its memory and can be linked again."
            ).format(user=link.user.external_id or link.user_id),
        )
    return redirect_after_post(request, reverse("admin_tools:link_list"))
