"""OAuth 2.1 for the MCP endpoint: MemoryHub is the resource server of its own authorization
server (allauth.idp.oidc, accounts/oidc.py).

An access token must name this endpoint as its resource (RFC 8707). Each grant (one sign-in and
consent, kept across refreshes) acts through a personal key of the person, created on first use:
it is audited, rate limited and revocable from the dashboard like any personal key, and a
revoked one ends the grant for good. The token's `mode:<slug>` scopes are the modes it may use.
"""

from __future__ import annotations

from dataclasses import dataclass

from allauth.idp.oidc.models import Token
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from memoryhub.errors import NotAuthenticatedError
from memoryhub.models import ApiKey
from memoryhub.services.agents import create_personal_key, key_owner
from memoryhub.services.ratelimit import check_rate_limit, count_invalid_key

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
MODE_SCOPE_PREFIX = "mode:"
# Every user has these modes; a client asks for the ones it needs, the person may untick some.
SCOPES_SUPPORTED = ("mode:personal", "mode:work")


@dataclass(frozen=True)
class OAuthAccess:
    """What an access token may do: act through the grant's personal key, in these modes."""

    api_key: ApiKey
    modes: frozenset[str]


def resource_url(origin: str) -> str:
    """The MCP endpoint as a resource identifier, from the scheme and host it was reached at."""
    return origin.rstrip("/") + MCP_PATH


def _grant_key_name(client_name: str, grant_id: str) -> str:
    return f"OAuth: {client_name[:40]} ({grant_id})"


def authenticate_access_token(
    raw_token: str, *, resource: str, client_ip: str | None
) -> OAuthAccess:
    """The access an OAuth access token gives at `resource`.

    Raises NotAuthenticatedError (unknown or expired token, another resource, a revoked grant)
    and RateLimitedError (the person's budget, or too many bad tokens from this IP).
    """
    token = Token.objects.lookup(Token.Type.ACCESS_TOKEN, raw_token)
    if token is None or token.user is None or token.client is None:
        count_invalid_key(client_ip)
        raise NotAuthenticatedError("missing, unknown, expired or revoked access token")
    # Security invariant: a token is only good at the resource it was issued for (audience).
    resources = [uri.rstrip("/") for uri in token.get_resources()]
    if resource.rstrip("/") not in resources:
        raise NotAuthenticatedError("this access token was not issued for this MCP endpoint")
    grant_id = token.get_grant_id() or f"token-{token.pk}"
    name = _grant_key_name(token.client.name or token.client.id, grant_id)
    api_key = (
        ApiKey.objects.filter(user=token.user, agent__isnull=True, name=name)
        .select_related("user", "mode")
        .first()
    )
    if api_key is None:
        # The raw key is never shown: the grant's tokens are the only way to act with it.
        api_key = create_personal_key(user=token.user, name=name).api_key
    elif api_key.revoked_at is not None:
        raise NotAuthenticatedError("this sign-in was revoked: sign in and consent again")
    check_rate_limit(key_owner(api_key))
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())
    modes = frozenset(
        scope.removeprefix(MODE_SCOPE_PREFIX)
        for scope in token.get_scopes()
        if scope.startswith(MODE_SCOPE_PREFIX)
    )
    return OAuthAccess(api_key=api_key, modes=modes)


@require_GET
def protected_resource_metadata(request: HttpRequest) -> JsonResponse:
    """RFC 9728 metadata: which authorization server issues tokens for the MCP endpoint."""
    origin = f"{request.scheme}://{request.get_host()}"
    return JsonResponse(
        {
            "resource": resource_url(origin),
            "authorization_servers": [origin],
            "scopes_supported": list(SCOPES_SUPPORTED),
            "bearer_methods_supported": ["header"],
            "resource_name": "MemoryHub",
        }
    )
