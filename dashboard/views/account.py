"""The user's controls: pause, retention, agents, personal keys, access log, account deletion."""

from __future__ import annotations

from uuid import UUID

from allauth.account.decorators import reauthentication_required
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.forms import DeleteAccountForm
from dashboard.forms import (
    AccessFilterForm,
    MemoryOffForm,
    PauseForm,
    PersonalKeyForm,
    RetentionForm,
)
from dashboard.key_usage import key_usage
from memoryhub.errors import MemoryHubError
from memoryhub.http import AuthedRequest
from memoryhub.models import Agent, AgentPermission, ApiKey, Mode
from memoryhub.paging import page_number
from memoryhub.queries.access_log import list_access_entries
from memoryhub.queries.connections import list_connected_agents, list_personal_keys
from memoryhub.services.agents import create_personal_key, revoke_key
from memoryhub.services.forget import delete_account
from memoryhub.services.preferences import (
    block_agent,
    set_agent_permission,
    set_memory_paused,
    set_mode_memory_off,
    set_retention,
    unblock_agent,
)
from memoryhub.usage import usage_lines

from .rendering import list_url
from .scoping import actor_of, mode_or_404

# Where a key just made waits, in the person's own session, for the page that shows it once.
NEW_KEY_SESSION = "new_personal_key"


@require_safe
@login_required
def settings_page(request: AuthedRequest) -> HttpResponse:
    """Pause memory, memory off per mode, usage, retention, and links to every other control."""
    retention = RetentionForm(initial={"retention_days": request.user.retention_days or ""})
    modes = Mode.objects.filter(user=request.user)
    context = {"retention_form": retention, "modes": modes, "usage": usage_lines(request.user)}
    return render(request, "dashboard/settings.html", context)


@require_POST
@login_required
def pause(request: AuthedRequest) -> HttpResponse:
    """Pause or resume memory: while paused, agents cannot write anything."""
    form = PauseForm(request.POST)
    is_paused = form.is_valid() and form.cleaned_data["is_paused"]
    set_memory_paused(user=request.user, is_paused=is_paused, actor=actor_of(request))
    if is_paused:
        messages.success(request, _("Memory is paused: agents cannot remember anything new."))
    else:
        messages.success(request, _("Memory is on again: agents can remember new things."))
    return redirect("dashboard:settings")


@require_POST
@login_required
def mode_memory(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """Turn memory off or on in one mode: while off, agents neither use nor save anything there."""
    mode = mode_or_404(request.user, mode_slug)
    form = MemoryOffForm(request.POST)
    is_off = form.is_valid() and form.cleaned_data["is_off"]
    set_mode_memory_off(user=request.user, mode=mode, is_off=is_off, actor=actor_of(request))
    if is_off:
        messages.success(
            request,
            _(
                "Memory is off in the “{name}” mode: agents get nothing of it and save nothing."
            ).format(name=mode.display_name),
        )
    else:
        messages.success(
            request, _("Memory is on again in the “{name}” mode.").format(name=mode.display_name)
        )
    if request.POST.get("next") == "list":
        return redirect(list_url(mode))
    return redirect("dashboard:settings")


@require_POST
@login_required
def retention(request: AuthedRequest) -> HttpResponse:
    """Set how long memories are kept before they are deleted automatically."""
    form = RetentionForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose one of the offered retention periods."))
        return redirect("dashboard:settings")
    try:
        set_retention(
            user=request.user,
            retention_days=form.cleaned_data["retention_days"],
            actor=actor_of(request),
        )
    except MemoryHubError as error:
        messages.error(request, error.in_words())
        return redirect("dashboard:settings")
    messages.success(request, _("Retention saved: older memories are deleted automatically."))
    return redirect("dashboard:settings")


@require_safe
@login_required
def agents(request: AuthedRequest) -> HttpResponse:
    """The agents that can reach the user's memory, each with a block button."""
    connected = list_connected_agents(user=request.user)
    return render(request, "dashboard/agents.html", {"agents": connected})


def _agent_or_404(request: AuthedRequest, agent_id: UUID) -> Agent:
    agent = Agent.objects.filter(pk=agent_id, workspace_id=request.user.workspace_id).first()
    if agent is None:
        raise Http404("no such agent")
    return agent


@require_POST
@login_required
def agent_block(request: AuthedRequest, agent_id: UUID) -> HttpResponse:
    """Block an agent: it can no longer read or write anything of this user."""
    agent = _agent_or_404(request, agent_id)
    block_agent(user=request.user, agent=agent, actor=actor_of(request))
    messages.success(
        request, _("“{name}” is blocked: it cannot reach your memory.").format(name=agent.name)
    )
    return redirect("dashboard:agents")


@require_POST
@login_required
def agent_unblock(request: AuthedRequest, agent_id: UUID) -> HttpResponse:
    """Lift a block."""
    agent = _agent_or_404(request, agent_id)
    unblock_agent(user=request.user, agent=agent, actor=actor_of(request))
    messages.success(request, _("“{name}” can reach your memory again.").format(name=agent.name))
    return redirect("dashboard:agents")


@require_POST
@login_required
def agent_export(request: AuthedRequest, agent_id: UUID) -> HttpResponse:
    """Let an agent export all the user's data through the API, or stop it (`allow` on/off)."""
    return _set_agent_permission(
        request,
        agent_id,
        AgentPermission.EXPORT,
        allowed=_("“{name}” may now export all your data."),
        stopped=_("“{name}” can no longer export your data."),
    )


@require_POST
@login_required
def agent_import(request: AuthedRequest, agent_id: UUID) -> HttpResponse:
    """Let an agent upload files to import into the user's memory, or stop it (`allow` on/off).

    What it imports still waits for the user's review.
    """
    return _set_agent_permission(
        request,
        agent_id,
        AgentPermission.IMPORT,
        allowed=_("“{name}” may now import files for you; you review what they bring."),
        stopped=_("“{name}” can no longer import files for you."),
    )


def _set_agent_permission(
    request: AuthedRequest,
    agent_id: UUID,
    permission: AgentPermission,
    *,
    allowed: str,
    stopped: str,
) -> HttpResponse:
    agent = _agent_or_404(request, agent_id)
    is_allowed = request.POST.get("allow") == "on"
    set_agent_permission(
        user=request.user,
        agent=agent,
        permission=permission,
        is_allowed=is_allowed,
        actor=actor_of(request),
    )
    messages.success(request, (allowed if is_allowed else stopped).format(name=agent.name))
    return redirect("dashboard:agents")


@require_http_methods(["GET", "POST"])
@login_required
# Minting a key asks for the password again, however long ago the user signed in: a key
# outlives the session, so a borrowed or stolen session must not be able to make one.
@reauthentication_required(allow_get=True)  # type: ignore[untyped-decorator]  # allauth is untyped.
@sensitive_variables("issued")  # A new key, in clear.
def keys(request: AuthedRequest) -> HttpResponse:
    """Personal access keys for the user's own assistants; a new key is shown once."""
    form = PersonalKeyForm(request.POST or None, user=request.user)
    if request.method == "POST":
        if not form.is_valid():
            return _keys_page(request, form, new_key=None, status=422)
        issued = create_personal_key(
            user=request.user, name=form.cleaned_data["name"], mode=form.cleaned_data["mode"]
        )
        # Post, redirect, get: reloading the page must not make a second key. The key waits in
        # the session for the one page that shows it.
        request.session[NEW_KEY_SESSION] = issued.raw_key
        messages.success(request, _("Key created. Copy it now: it is shown only once."))
        return redirect("dashboard:keys")
    return _keys_page(request, form, new_key=request.session.pop(NEW_KEY_SESSION, None))


@sensitive_variables("new_key", "context")  # A new key, in clear.
def _keys_page(
    request: AuthedRequest, form: PersonalKeyForm, *, new_key: str | None, status: int = 200
) -> HttpResponse:
    context = {
        "form": form,
        "keys": list_personal_keys(user=request.user),
        "new_key": new_key,
        "usage": key_usage(site_url=request.build_absolute_uri("/"), key=new_key),
    }
    response = render(request, "dashboard/keys.html", context, status=status)
    response["Cache-Control"] = "no-store"  # The page may hold a new key in clear.
    return response


@require_POST
@login_required
def key_revoke(request: AuthedRequest, key_id: int) -> HttpResponse:
    """Revoke one of the user's personal keys (another user's key is not found)."""
    api_key = ApiKey.objects.filter(pk=key_id, user=request.user).first()
    if api_key is None:
        raise Http404("no such key")
    revoke_key(api_key=api_key)
    messages.success(
        request,
        _("The key {prefix}… is revoked and no longer works.").format(prefix=api_key.prefix),
    )
    return redirect("dashboard:keys")


@require_safe
@login_required
def access_log(request: AuthedRequest) -> HttpResponse:
    """Who accessed the user's memory (others by default, also the user if asked), newest first."""
    form = AccessFilterForm(request.GET)
    include_mine = form.is_valid() and form.cleaned_data["mine"]
    entries = list_access_entries(
        user=request.user,
        actor=actor_of(request),
        page=page_number(request),
        include_mine=include_mine,
    )
    context = {"form": form, "entries": entries, "include_mine": include_mine}
    return render(request, "dashboard/access_log.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def account_delete(request: AuthedRequest) -> HttpResponse:
    """Erase the account and everything of it, after the password is typed again."""
    form = DeleteAccountForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        delete_account(user=request.user, actor=actor_of(request))
        logout(request)
        messages.success(
            request, _("Your account and everything MemoryHub knew about you are erased.")
        )
        return redirect("landing")
    status = 422 if request.method == "POST" else 200
    return render(request, "dashboard/account_delete.html", {"form": form}, status=status)
