"""manage.py runstack: migrate, load demo data, then run web server, worker and beat together.

Ctrl-C stops everything it started, the embedded PostgreSQL included.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from memoryhub.embedded_db import stop_embedded_postgres


class Command(BaseCommand):
    help = "Run MemoryHub for development: web server, Celery worker and beat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--no-demo", action="store_true", help="skip loading demo data")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        if not options["no_demo"]:
            call_command("load_demo")
        python = sys.executable
        commands = {
            "web": [
                python,
                "-m",
                "uvicorn",
                "memoryhub.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(options["port"]),
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "memoryhub",
                "worker",
                "-l",
                "info",
                "-c",
                "1",
            ],
            "beat": [python, "-m", "celery", "-A", "memoryhub", "beat", "-l", "info"],
        }
        processes = {name: subprocess.Popen(argv) for name, argv in commands.items()}  # noqa: S603
        self.stdout.write(
            f"MemoryHub runs on http://127.0.0.1:{options['port']}/ (Ctrl-C stops it)"
        )
        stopping = False

        def stop(signum: int, frame: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for name, process in processes.items():
                    if process.poll() is not None:
                        self.stderr.write(
                            f"{name} exited with status {process.returncode}; stopping."
                        )
                        stopping = True
                time.sleep(0.5)
        finally:
            for process in processes.values():
                if process.poll() is None:
                    process.terminate()
            for process in processes.values():
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
            if settings.USES_EMBEDDED_DATABASE:
                stop_embedded_postgres(settings.DATA_DIR / "postgres")
                self.stdout.write("Embedded PostgreSQL stopped.")
