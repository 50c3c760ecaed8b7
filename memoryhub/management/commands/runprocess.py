"""manage.py runprocess web|worker|beat: one process of the deployment, as runstack starts it.

A container runs one kind of process each (compose.yaml). This command replaces itself with
the very command line `runstack --production` starts for that kind (memoryhub/process_model.py),
so the two cannot drift apart. Migrations run once before, as their own step.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memoryhub.process_model import beat_command, empty_metrics_dir, web_command, worker_command


class Command(BaseCommand):
    help = "Replace this process with one process of the deployment: web, worker or beat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=["web", "worker", "beat"])
        parser.add_argument("--host", default="0.0.0.0", help="web: the address to listen on")  # noqa: S104
        parser.add_argument("--port", type=int, default=settings.PORT, help="web: the port")
        parser.add_argument(
            "--print", action="store_true", help="print the command line instead of running it"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        kind = options["kind"]
        if kind == "web":
            argv = web_command(
                host=options["host"],
                port=options["port"],
                workers=settings.WEB_CONCURRENCY,
                production=True,
            )
        elif kind == "worker":
            argv = worker_command(concurrency=settings.CELERY_WORKER_CONCURRENCY)
        else:
            argv = beat_command()
        if options["print"]:
            self.stdout.write(shlex.join(argv))
            return
        if kind == "web" and settings.METRICS_MULTIPROCESS_DIR is not None:
            empty_metrics_dir(settings.METRICS_MULTIPROCESS_DIR)
        self.stdout.flush()
        os.execv(argv[0], argv)  # noqa: S606  # Our own interpreter and arguments.
