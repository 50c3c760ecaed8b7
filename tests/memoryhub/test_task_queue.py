"""memoryhub/task_queue.py: services publish tasks by name, also where tasks.py is not loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memoryhub.task_queue import EXTRACT_SESSION, RECORD_ANSWER_IN_GRAPH, enqueue

ROOT = Path(__file__).resolve().parents[2]

# A web process: Django set up, memoryhub.tasks never imported by anything.
FRESH_PROCESS = f"""
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
import django
django.setup()
from celery import current_app
from memoryhub.task_queue import enqueue
before = "memoryhub.tasks" in sys.modules
queued = enqueue("memoryhub.no_such_task")
print(json.dumps({{
    "before": before,
    "queued": queued,
    "registered": [n in current_app.tasks for n in ({EXTRACT_SESSION!r}, {RECORD_ANSWER_IN_GRAPH!r})],
}}))
"""


def test_a_process_that_never_loaded_the_tasks_still_finds_them_by_name():
    result = subprocess.run(  # noqa: S603  # Our own interpreter and a fixed script.
        [sys.executable, "-c", FRESH_PROCESS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"before": False, "queued": False, "registered": [True, True]}


def test_an_unknown_task_name_queues_nothing_and_says_so(caplog):
    assert enqueue("memoryhub.no_such_task", "x") is False
    assert "no task is registered as 'memoryhub.no_such_task'" in caplog.text
