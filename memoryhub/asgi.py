"""ASGI entry point: the MCP server at /mcp, Django for everything else."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django_application = get_asgi_application()

# Imported after Django is set up: the MCP tools use the models.
from memoryhub.mcp.http import build_mcp_app, with_mcp  # noqa: E402

application = with_mcp(django_application, build_mcp_app())
