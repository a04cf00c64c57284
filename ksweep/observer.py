"""What a running sweep tells whoever watches it (a progress display, a test, a notebook).

The driver calls these methods from its main thread, in this order: for each shape ×
variant ``target_started`` (and, when its search is warm-started, the optional
``warm_started`` with the sources' labels, and ``warm_dropped`` if the search found them
misleading and went on cold), then ``result`` once per stored result that counts (resumed
ones first, flagged ``resumed``) with ``build_started`` as builds are submitted; at the
end ``finished`` with the run's summary (``summary.failed`` when an error stopped it,
``summary.interrupted`` on Ctrl-C). The optional ``dead_knob`` is told, with one line,
of each knob the builds show changes no program (``sweep/programs.py``). A neutral module: the sweep loop (sweep/) calls it and
the reporting layer (report/) implements it, neither importing the other.
"""

from __future__ import annotations

from typing import Any, Protocol


class Observer(Protocol):
    def target_started(self, variant: str, shape: str, valid: int, total: int, planned: int | None = None) -> None: ...
    def build_started(self, job: Any) -> None: ...
    def result(self, result: Any, best: Any | None, resumed: bool = False) -> None: ...
    def finished(self, summary: Any) -> None: ...


METHODS = ("target_started", "build_started", "result", "finished")  # the protocol's (warm_started: optional)


def lacking(observer) -> list[str]:
    """The protocol's methods ``observer`` does not have."""
    return [m for m in METHODS if not callable(getattr(observer, m, None))]


def warm_started(observer, variant: str, shape: str, sources: tuple[str, ...]) -> None:
    """Tell ``observer`` what the search of (variant, shape) starts from, when it has a
    ``warm_started`` method (optional: an observer written before it needs none)."""
    told = getattr(observer, "warm_started", None)
    if told is not None:
        told(variant, shape, sources)


def warm_dropped(observer, variant: str, shape: str, why: str) -> None:
    """Tell ``observer`` that the warm-started search of (variant, shape) dropped its sources
    (they misled it) and went on cold, when it has a ``warm_dropped`` method (optional)."""
    told = getattr(observer, "warm_dropped", None)
    if told is not None:
        told(variant, shape, why)


class NullObserver:
    """Watches nothing (``--quiet``)."""

    def target_started(self, *a, **k) -> None: ...
    def build_started(self, *a, **k) -> None: ...
    def result(self, *a, **k) -> None: ...
    def finished(self, *a, **k) -> None: ...
