"""Publish Celery tasks by their stable name: services enqueue here, never importing tasks.py.

memoryhub/tasks.py imports the services (a task is a thin adapter over one), so a service that
imported a task back would close an import circle. Celery's registry, keyed by each task's
explicit `name=`, is the one link between the two.
"""

from __future__ import annotations

import logging
from functools import cache

from celery import current_app

from memoryhub.celery import app

logger = logging.getLogger(__name__)

EXTRACT_SESSION = "memoryhub.extract_session"
RECORD_ANSWER_IN_GRAPH = "memoryhub.record_answer_in_graph"
RUN_FORGET_TASK = "memoryhub.run_forget_task"
RUN_IMPORT = "memoryhub.run_import"
SEND_WEBHOOK = "memoryhub.send_webhook"


@cache
def _register_tasks() -> None:
    # What a worker does at start: Celery's autodiscovery imports every installed app's
    # tasks.py. A web process has not, and the registry would not know the names yet.
    app.autodiscover_tasks(force=True)


def enqueue(task_name: str, *args: str) -> bool:
    """Publish the named task with these arguments; False (logged) when no task has that name.

    Broker errors propagate (kombu's OperationalError): the caller decides what an outage costs.
    Honours `task_always_eager` (tests), like calling `.delay` on the task itself.
    """
    _register_tasks()
    # The current app, like a shared task's `.delay`: tests swap it for one on a dead broker.
    task = current_app.tasks.get(task_name)
    if task is None:
        logger.warning("no task is registered as %r; nothing queued", task_name)
        return False
    task.delay(*args)
    return True
