"""What every dashboard view needs: the acting user and their mode or 404.

Domain errors as HTTP and the redirect after a post are shared with the other HTML views
(memoryhub/http.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpResponse

from memoryhub.actors import Actor
from memoryhub.errors import NotFoundError
from memoryhub.http import AuthedRequest, client_ip
from memoryhub.models import Mode, User
from memoryhub.services.users import ensure_mode

View = Callable[..., HttpResponse]


def actor_of(request: AuthedRequest) -> Actor:
    """The signed-in user, acting through the dashboard (for the audit log)."""
    return Actor.for_user(request.user.pk, client_ip=client_ip(request))


def mode_or_404(user: User, slug: str) -> Mode:
    """The user's mode with this slug; another user's mode does not exist for them."""
    try:
        return ensure_mode(user=user, slug=slug)
    except NotFoundError:
        raise Http404("no such mode") from None
