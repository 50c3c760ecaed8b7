"""The OpenID Connect provider's adapter: MemoryHub's scopes (one per mode) and its one resource.

allauth.idp.oidc is the OAuth 2.1 authorization server of the MCP endpoint; a person grants a
client the modes it may use by ticking their scopes on the consent page.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlsplit

from allauth.idp.oidc.adapter import DefaultOIDCAdapter
from django.core.exceptions import ValidationError
from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy

from memoryhub.mcp.oauth import MCP_PATH, MODE_SCOPE_PREFIX, SCOPES_SUPPORTED
from memoryhub.models import DEFAULT_MODE_NAMES


class OIDCAdapter(DefaultOIDCAdapter):  # type: ignore[misc]  # mypy sees allauth.idp as Any.
    # Lazy: the consent page shows each scope in the language of its request.
    scope_display: ClassVar[dict[str, str | Promise]] = {
        **DefaultOIDCAdapter.scope_display,
        **{
            scope: format_lazy(
                gettext_lazy("Read and write your memory in the {mode} mode"),
                # Every scope is a default mode's: its default name, in the page's language.
                mode=gettext_lazy(DEFAULT_MODE_NAMES[scope.removeprefix(MODE_SCOPE_PREFIX)]),
            )
            for scope in SCOPES_SUPPORTED
        },
    }

    def validate_resource_uris(self, *, uris: list[str], **kwargs: Any) -> None:
        # Tokens are only ever for this hub's MCP endpoint (RFC 8707 resource indicators).
        for uri in uris:
            if urlsplit(uri).path.rstrip("/") != MCP_PATH:
                raise ValidationError(f"unknown resource: {uri}")

    def populate_server_metadata(self, data: dict[str, str | list[str]]) -> None:
        # OAuth 2.1: the authorization code flow with PKCE (S256), no implicit flows.
        data["code_challenge_methods_supported"] = ["S256"]
        data["response_types_supported"] = ["code"]
        data["scopes_supported"] = [*data.get("scopes_supported", []), *SCOPES_SUPPORTED]
