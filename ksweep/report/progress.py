"""Live progress of a sweep: a rich bar on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..result import Result
from ..status import Status


def _best_text(best: Result | None, metric: str) -> str:
    if best is None:
        return "best: -"
    params = " ".join(f"{k}={v}" for k, v in best.params.items())
    return f"best {metric}={best.metrics.get(metric):.4g} ({params})"


class PlainLog:
    """One line per result, for logs and pipes."""

    def __init__(self, metric: str, stream=None):
        self.metric = metric
        self.stream = stream or sys.stderr
        self.done = 0
        self.total = 0

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def target_started(self, variant, shape, valid, total):
        self.total += valid
        self._print(f"[ksweep] variant {variant} · shape {shape}: {valid} valid of {total} configs")

    def build_started(self, job):
        pass

    def result(self, result: Result, best):
        self.done += 1
        value = result.metrics.get(self.metric)
        what = f"{self.metric}={value:.4g}" if result.status is Status.OK and value is not None else result.message
        params = " ".join(f"{k}={v}" for k, v in result.params.items())
        self._print(f"[ksweep] {self.done}/{self.total} {result.status.value:<17} {params}  {what}"[:300])

    def finished(self, summary):
        self._print(f"[ksweep] done: {summary.evaluated} evaluated, {summary.resumed} resumed, "
                    f"{dict(sorted(summary.counts.items()))}, {summary.wall_seconds:.1f} s")


class RichProgress:
    """A live status block: progress, counts per status, builds in flight, best so far."""

    def __init__(self, metric: str, console: Console | None = None):
        self.metric = metric
        self.console = console or Console(stderr=True)
        self.counts: dict[str, int] = {}
        self.total = 0
        self.done = 0
        self.building = 0
        self.best: Result | None = None
        self.target = ""
        self.started = time.monotonic()
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
        self.live.start()

    def _render(self) -> Text:
        width = 30
        frac = self.done / self.total if self.total else 0.0
        bar = "█" * int(frac * width) + "░" * (width - int(frac * width))
        counts = "  ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        elapsed = time.monotonic() - self.started
        return Text.from_markup(
            f"[bold]{self.target}[/bold]\n{bar} {self.done}/{self.total}  {elapsed:.0f} s  "
            f"builds in flight {self.building}\n{counts}\n{_best_text(self.best, self.metric)}"
        )

    def target_started(self, variant, shape, valid, total):
        self.total += valid
        self.target = f"variant {variant} · shape {shape}"
        self.live.update(self._render())

    def build_started(self, job):
        self.building += 1
        self.live.update(self._render())

    def result(self, result: Result, best):
        self.done += 1
        if result.build_seconds is not None or result.status.build_failure:
            self.building = max(0, self.building - 1)
        self.counts[result.status.value] = self.counts.get(result.status.value, 0) + 1
        if best is not None:
            self.best = best
        self.live.update(self._render())

    def finished(self, summary):
        self.live.update(self._render())
        self.live.stop()


def make_observer(metric: str, quiet: bool = False):
    from ..sweep.driver import NullObserver

    if quiet:
        return NullObserver()
    if sys.stderr.isatty():
        return RichProgress(metric)
    return PlainLog(metric)
