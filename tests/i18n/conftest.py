"""Tests of the French pages leave no language behind them.

LocaleMiddleware activates the request's language in the thread and leaves it active after the
response; a later test that renders without a request (an email, a task) would find French.
"""

from __future__ import annotations

import pytest
from django.utils import translation


@pytest.fixture(autouse=True)
def _no_language_left_active():
    yield
    translation.deactivate()
