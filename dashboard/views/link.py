"""Following an agent's one-time link: the signed-in person's login takes over the agent's user."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from memoryhub.errors import MemoryHubError
from memoryhub.http import AuthedRequest, client_ip
from memoryhub.services.user_links import link_user, preview_user_link

# The user signed in is erased by the link; the session goes on as the linked user.
BACKEND = "django.contrib.auth.backends.ModelBackend"


@login_required
@require_http_methods(["GET", "POST"])
def user_link(request: AuthedRequest, token: str) -> HttpResponse:
    """Show what the link does (GET, so a link preview changes nothing); link on POST."""
    try:
        if request.method == "POST":
            user = link_user(token=token, account=request.user, client_ip=client_ip(request))
            login(request, user, backend=BACKEND)
            messages.success(
                request,
                _(
                    "Done: you now sign in to this memory with your login. We sent a note of it "
                    "to your email address."
                ),
            )
            return redirect("dashboard:memory_list")
        preview = preview_user_link(token=token, account=request.user)
    except MemoryHubError as error:
        context = {"error": error.in_words(), "code": error.code, "status": error.status}
        return render(request, "dashboard/link.html", context, status=error.status)
    return render(request, "dashboard/link.html", {"preview": preview, "token": token})
