"""Geometry of the threshold chart: threshold and approval rate per window, and queue size.

The page draws it as inline SVG from these numbers (no chart library, no JavaScript).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.translation import gettext as _

from .models import ThresholdChange

WIDTH = 640
HEIGHT = 240
LEFT = 44  # Room for the 0–100 % axis.
RIGHT = 48  # Room for the queue-size axis.
TOP = 12
BOTTOM = 28


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    label: str


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class ThresholdChart:
    """Coordinates in the SVG's own units (viewBox 0 0 width height)."""

    width: int
    height: int
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    threshold_points: str
    approval_points: str
    threshold_dots: tuple[Dot, ...]
    approval_dots: tuple[Dot, ...]
    queue_bars: tuple[Bar, ...]
    rate_ticks: tuple[Tick, ...]
    queue_ticks: tuple[Tick, ...]
    first_label: str
    last_label: str

    @property
    def is_empty(self) -> bool:
        return not self.threshold_dots

    @property
    def is_single(self) -> bool:
        """One closed window: two lone dots say nothing; the page says its figures instead."""
        return len(self.threshold_dots) == 1


def _points(dots: Sequence[Dot]) -> str:
    return " ".join(f"{dot.x:.1f},{dot.y:.1f}" for dot in dots)


def build_chart(windows: Sequence[ThresholdChange]) -> ThresholdChart:
    """Lay out one point per closed window, oldest on the left; rates share a 0–1 axis."""
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    count = len(windows)
    step = plot_width / max(count - 1, 1)
    max_queue = max((w.queue_size for w in windows), default=0) or 1

    def x_of(index: int) -> float:
        return LEFT + (index * step if count > 1 else plot_width / 2)

    def y_of(rate: float) -> float:
        return TOP + (1.0 - min(1.0, max(0.0, rate))) * plot_height

    threshold = tuple(
        Dot(x_of(i), y_of(w.threshold), _("threshold {value}").format(value=f"{w.threshold:.2f}"))
        for i, w in enumerate(windows)
    )
    approval = tuple(
        Dot(
            x_of(i),
            y_of(w.approval_rate),
            _("approval rate {value}").format(value=f"{w.approval_rate:.0%}"),
        )
        for i, w in enumerate(windows)
    )
    bar_width = max(2.0, min(24.0, step * 0.5))
    bars = tuple(
        Bar(
            x=x_of(i) - bar_width / 2,
            y=TOP + plot_height * (1 - w.queue_size / max_queue),
            width=bar_width,
            height=plot_height * w.queue_size / max_queue,
            label=_("{count} waiting").format(count=w.queue_size),
        )
        for i, w in enumerate(windows)
    )
    return ThresholdChart(
        width=WIDTH,
        height=HEIGHT,
        plot_left=LEFT,
        plot_right=WIDTH - RIGHT,
        plot_top=TOP,
        plot_bottom=HEIGHT - BOTTOM,
        threshold_points=_points(threshold),
        approval_points=_points(approval),
        threshold_dots=threshold,
        approval_dots=approval,
        queue_bars=bars,
        rate_ticks=tuple(Tick(y_of(v), f"{v:.0%}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)),
        queue_ticks=(Tick(y_of(0.0), "0"), Tick(y_of(1.0), str(max_queue))),
        first_label=f"{windows[0].created_at:%d %b %Y}" if windows else "",
        last_label=f"{windows[-1].created_at:%d %b %Y}" if windows else "",
    )
