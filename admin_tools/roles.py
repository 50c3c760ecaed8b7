"""Staff page to grant and revoke the reviewer and admin roles."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts.role_grants import Role, find_account, grant_role, revoke_role, role_holders
from accounts.roles import REVIEWERS_GROUP, require_staff
from memoryhub.errors import ConflictError, NotFoundError
from memoryhub.http import AuthedRequest, redirect_after_post, staff_actor
from memoryhub.models import ActorType, Channel

from .forms import RoleForm


def _page(request: AuthedRequest, form: RoleForm, *, status: int = 200) -> HttpResponse:
    holders = [
        {
            "account": account,
            "is_reviewer": any(g.name == REVIEWERS_GROUP for g in account.groups.all()),
        }
        for account in role_holders()
    ]
    return render(
        request, "admin_tools/roles.html", {"form": form, "holders": holders}, status=status
    )


@require_http_methods(["GET", "POST"])
@require_staff
def roles(request: AuthedRequest) -> HttpResponse:
    """Who holds a role; the form grants or revokes one."""
    if request.method == "GET":
        return _page(request, RoleForm())
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=422)
    data = form.cleaned_data
    actor = staff_actor(request, ActorType.ADMIN, Channel.ADMIN)
    role, workspace = Role(data["role"]), data["workspace"]
    try:
        account = find_account(data["email"])
        change = revoke_role if data["action"] == "revoke" else grant_role
        change(account=account, role=role, workspace=workspace, actor=actor)
    except (NotFoundError, ConflictError) as error:
        form.add_error(None, str(error))
        return _page(request, form, status=422)
    if data["action"] == "revoke":
        text = _("{email} is no longer {role} of {workspace}.")
    else:
        text = _("{email} is now {role} of {workspace}.")
    role_name = str(role.label).lower()
    messages.success(
        request, text.format(email=account.email, role=role_name, workspace=workspace.slug)
    )
    return redirect_after_post(request, reverse("admin_tools:roles"))
