"""Run the MCP server over stdio for one bearer key: `manage.py mcp_server --key mh_…`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memoryhub.api.auth import authenticate_key
from memoryhub.errors import MemoryHubError
from memoryhub.mcp.server import Caller, build_server


class Command(BaseCommand):
    help = "Serve the MemoryHub MCP tools over stdio, acting with the given API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--key", required=True, help="An agent key or a personal access key.")

    def handle(self, *args: Any, **options: Any) -> None:
        raw_key: str = options["key"]
        try:
            authenticate_key(raw_key)
        except MemoryHubError as exc:
            raise CommandError(str(exc)) from None
        finally:
            connection.close()

        def caller(_: object) -> Caller:
            # Checked on every call, so a key revoked while the server runs stops working.
            return Caller(api_key=authenticate_key(raw_key))

        # stdout carries the protocol: nothing else may be written to it from here on.
        build_server(caller).run("stdio")
