"""manage.py runstack: migrate, then run web server, Celery worker and beat together.

Development (the default): demo data, one web process, the broker from settings (a folder queue
unless CELERY_BROKER_URL is set). `--production`: the deployment's process model — DEBUG off,
WEB_CONCURRENCY web workers, a Celery worker on Redis or RabbitMQ, one beat, static files
collected — refusing a set-up that is not one (the console email backend and the embedded
database only when allowed explicitly). Ctrl-C stops everything it started, the embedded
PostgreSQL included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.embedded_db import stop_embedded_postgres
from memoryhub.process_model import (
    beat_command,
    empty_metrics_dir,
    wait_until_ready,
    web_command,
    worker_command,
)

CONSOLE_EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"


class Command(BaseCommand):
    help = "Run MemoryHub: web server, Celery worker and beat (--production: the deployment)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--no-demo", action="store_true", help="skip loading demo data")
        parser.add_argument(
            "--production",
            action="store_true",
            help="DEBUG off, WEB_CONCURRENCY workers, a Redis or RabbitMQ broker; no demo data",
        )
        # A deployment that only prints its emails, or keeps its data in a folder of this
        # checkout, is usually a mistake; these say it is meant (a trial, a single machine).
        parser.add_argument(
            "--allow-console-email",
            action="store_true",
            help="with --production: accept the console email backend (emails are only printed)",
        )
        parser.add_argument(
            "--allow-embedded-db",
            action="store_true",
            help="with --production: accept the embedded PostgreSQL (no DATABASE_URL)",
        )
        parser.add_argument(
            "--ready-timeout",
            type=float,
            default=120.0,
            help="with --production: stop everything unless /readyz answers 200 within this",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        production = options["production"]
        if production:
            self._check_production_settings(
                allow_console_email=options["allow_console_email"],
                allow_embedded_db=options["allow_embedded_db"],
            )
        call_command("migrate", interactive=False, verbosity=0)
        if production:
            call_command("collectstatic", interactive=False, verbosity=0)
        elif not options["no_demo"]:
            call_command("load_demo")
        commands = {
            "web": web_command(
                host=options["host"],
                port=options["port"],
                workers=settings.WEB_CONCURRENCY if production else 1,
                production=production,
            ),
            "worker": worker_command(
                concurrency=settings.CELERY_WORKER_CONCURRENCY if production else 1
            ),
            "beat": beat_command(),
        }
        environment = {**os.environ}
        if production:
            metrics_dir = empty_metrics_dir(
                settings.METRICS_MULTIPROCESS_DIR or settings.DATA_DIR / "metrics"
            )
            environment["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        processes = {
            name: subprocess.Popen(argv, env=environment)  # noqa: S603  # Our own command lines.
            for name, argv in commands.items()
        }
        try:
            if production:
                self._wait_until_ready(
                    options["host"], options["port"], options["ready_timeout"], processes["web"]
                )
            self.stdout.write(
                f"MemoryHub runs on http://{options['host']}:{options['port']}/ (Ctrl-C stops it)"
            )
            self._supervise(processes)
        finally:
            self._stop(processes)

    def _check_production_settings(
        self, *, allow_console_email: bool, allow_embedded_db: bool
    ) -> None:
        problems = []
        if settings.DEBUG:
            problems.append("DEBUG must be off (DEBUG=false)")
        if not (settings.CELERY_BROKER_URL or "").startswith(("redis://", "rediss://", "amqp://")):
            problems.append("CELERY_BROKER_URL must name a Redis or RabbitMQ broker")
        if settings.WEB_CONCURRENCY > 1 and settings.CACHES["default"]["BACKEND"] == (
            settings.PER_PROCESS_CACHE
        ):
            # Each worker would keep its own failed-login budget and its own used TOTP codes.
            problems.append(
                f"CACHE_URL must name a cache all {settings.WEB_CONCURRENCY} web workers share "
                "(redis:// or db://), not locmem://, or set WEB_CONCURRENCY=1"
            )
        if settings.EMAIL_BACKEND == CONSOLE_EMAIL_BACKEND and not allow_console_email:
            problems.append(
                "EMAIL_BACKEND is the console backend, which only prints emails (set "
                "EMAIL_BACKEND, or pass --allow-console-email)"
            )
        if settings.USES_EMBEDDED_DATABASE and not allow_embedded_db:
            problems.append(
                "DATABASE_URL is unset, so the data would live in the embedded PostgreSQL "
                "under MEMORYHUB_DATA_DIR (set DATABASE_URL, or pass --allow-embedded-db)"
            )
        if problems:
            raise CommandError("not a production set-up: " + "; ".join(problems))

    def _wait_until_ready(
        self, host: str, port: int, timeout: float, web: subprocess.Popen[bytes]
    ) -> None:
        # The same readiness an orchestrator polls: database, broker, embedding model loaded.
        probe_host = "127.0.0.1" if host in ("0.0.0.0", "") else host  # noqa: S104
        is_ready, body = wait_until_ready(
            host=probe_host, port=port, timeout=timeout, is_alive=lambda: web.poll() is None
        )
        if web.poll() is not None:
            raise CommandError(f"the web server exited with status {web.returncode}")
        if not is_ready:
            raise CommandError(f"the web server was not ready within {timeout:g} s: {body}")
        self.stdout.write(f"Ready: {body.get('checks')}")

    def _supervise(self, processes: dict[str, subprocess.Popen[bytes]]) -> None:
        stopping = False

        def stop(signum: int, frame: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping:
            for name, process in processes.items():
                if process.poll() is not None:
                    self.stderr.write(f"{name} exited with status {process.returncode}; stopping.")
                    stopping = True
            time.sleep(0.5)

    def _stop(self, processes: dict[str, subprocess.Popen[bytes]]) -> None:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=25)
            except subprocess.TimeoutExpired:
                process.kill()
        if settings.USES_EMBEDDED_DATABASE:
            stop_embedded_postgres(settings.DATA_DIR / "postgres")
            self.stdout.write("Embedded PostgreSQL stopped.")
