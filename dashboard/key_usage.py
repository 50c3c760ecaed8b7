"""What a person pastes into their own assistant to use a personal key: URLs and configuration."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass

from django.conf import settings

# Shown in place of the key when the page no longer holds it in clear.
KEY_PLACEHOLDER = "mh_your_key"


@dataclass(frozen=True)
class KeyUsage:
    api_url: str
    docs_url: str
    mcp_url: str
    curl: str
    mcp_stdio: str
    mcp_http: str


def key_usage(*, site_url: str, key: str | None) -> KeyUsage:
    """The base URL, a curl call and MCP client configuration (stdio and HTTP) for the key."""
    site_url = site_url.rstrip("/")
    key = key or KEY_PLACEHOLDER
    api_url = f"{site_url}/api/v1"
    mcp_url = f"{site_url}/mcp"
    curl = f"curl -H {shlex.quote(f'Authorization: Bearer {key}')} {api_url}/users/me"
    # Desktop MCP clients start the server themselves: this works on the machine that runs
    # MemoryHub; elsewhere, the HTTP configuration below does.
    stdio = {
        "mcpServers": {
            "memoryhub": {
                "command": sys.executable,
                "args": [str(settings.BASE_DIR / "manage.py"), "mcp_server", "--key", key],
            }
        }
    }
    http = {
        "mcpServers": {
            "memoryhub": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": f"Bearer {key}"},
            }
        }
    }
    return KeyUsage(
        api_url=api_url,
        docs_url=f"{api_url}/docs",
        mcp_url=mcp_url,
        curl=curl,
        mcp_stdio=json.dumps(stdio, indent=2),
        mcp_http=json.dumps(http, indent=2),
    )
