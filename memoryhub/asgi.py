"""ASGI entry point: the MCP server at /mcp, Django for everything else."""

import os
import sys

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django_application = get_asgi_application()
# Each web worker imports this module: its request threads hand the GIL over this often.
sys.setswitchinterval(settings.MEMORYHUB_WEB_GIL_SWITCH_MICROSECONDS / 1_000_000)

# Imported after Django is set up: the MCP tools use the models.
from memoryhub.mcp.http import build_mcp_app, with_mcp  # noqa: E402

application = with_mcp(django_application, build_mcp_app())
