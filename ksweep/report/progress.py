"""Live progress of a sweep: a rich bar on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..result import Result
from ..status import Status


def eta_text(started: float, fresh: int, done: int, total: int) -> str:
    """Time left at the pace of this run's own evaluations (resumed ones cost nothing)."""
    left = total - done
    if left <= 0:
        return "ETA 0 s"
    if fresh < 2:
        return "ETA -"
    seconds = (time.monotonic() - started) / fresh * left
    return f"ETA {seconds / 60:.0f} min" if seconds >= 120 else f"ETA {seconds:.0f} s"


def best_text(best: Result | None, metric: str) -> str:
    if best is None:
        return "best: -"
    params = " ".join(f"{k}={v}" for k, v in best.params.items())
    return f"best {metric}={_number(best.metrics.get(metric))} ({params})"


def _number(value) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


class PlainLog:
    """One line per result, for logs and pipes."""

    def __init__(self, metric: str, stream=None):
        self.metric = metric
        self.stream = stream or sys.stderr
        self.done = 0
        self.fresh = 0
        self.total = 0
        self.started = time.monotonic()

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")  # one write: Ctrl-C cannot fall between a line and its end
        self.stream.flush()

    def target_started(self, variant, shape, valid, total, planned=None):
        planned = valid if planned is None else planned
        self.total += planned
        budget = f", {planned} to evaluate" if planned != valid else ""
        self._print(f"[ksweep] variant {variant} · shape {shape}: {valid} valid of {total} configs{budget}")

    def warm_started(self, variant, shape, sources):
        self._print(f"[ksweep] warm start from {warm_text(sources)}")

    def warm_dropped(self, variant, shape, why):
        self._print(f"[ksweep] variant {variant} · shape {shape}: warm start dropped: {why}")

    def build_started(self, job):
        pass

    def dead_knob(self, variant, shape, line):
        self._print(f"[ksweep] variant {variant} · shape {shape}: {line}")

    def result(self, result: Result, best, resumed: bool = False):
        self.done += 1
        self.fresh += not resumed
        self.total = max(self.total, self.done)  # a result beyond the plan (the reference config) grows it
        value = result.metrics.get(self.metric)
        what = (f"{self.metric}={_number(value)}" if result.status is Status.OK and value is not None
                else result.message)
        params = " ".join(f"{k}={v}" for k, v in result.params.items())
        how = "resumed " if resumed else ""
        eta = eta_text(self.started, self.fresh, self.done, self.total)
        self._print(f"[ksweep] {self.done}/{self.total} {eta} {how}{result.status.value:<17} {params}  {what}"[:300])

    def finished(self, summary):
        if summary.failed or summary.interrupted:
            return  # the error, or the interruption's own line, says what happened
        counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
        self._print(f"[ksweep] done: {summary.evaluated} evaluated, {summary.resumed} resumed"
                    f"{' (' + counts + ')' if counts else ''}, {summary.wall_seconds:.1f} s")


class RichProgress:
    """A live status block: progress, counts per status, builds in flight, best so far."""

    def __init__(self, metric: str, console: Console | None = None):
        self.metric = metric
        self.console = console or Console(stderr=True)
        self.counts: dict[str, int] = {}
        self.total = 0
        self.done = 0
        self.fresh = 0
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
        text = Text()
        text.append(self.target, style="bold")
        text.append(f"\n{bar} {self.done}/{self.total}  {elapsed:.0f} s  "
                    f"{eta_text(self.started, self.fresh, self.done, self.total)}  builds in flight {self.building}"
                    f"\n{counts}\n{best_text(self.best, self.metric)}")
        return text

    def target_started(self, variant, shape, valid, total, planned=None):
        self.total += valid if planned is None else planned
        self.target = f"variant {variant} · shape {shape}"
        self.live.update(self._render())

    def warm_started(self, variant, shape, sources):
        self.target = f"variant {variant} · shape {shape} · warm start from {warm_text(sources)}"
        self.live.update(self._render())

    def warm_dropped(self, variant, shape, why):
        self.live.console.print(f"[ksweep] variant {variant} · shape {shape}: warm start dropped: {why}")

    def build_started(self, job):
        self.building += 1
        self.live.update(self._render())

    def dead_knob(self, variant, shape, line):
        self.live.console.print(f"variant {variant} · shape {shape}: {line}", markup=False, soft_wrap=True)

    def result(self, result: Result, best, resumed: bool = False):
        self.done += 1
        self.fresh += not resumed
        self.total = max(self.total, self.done)
        if not resumed and (result.build_seconds is not None or result.status.build_failure):
            self.building = max(0, self.building - 1)
        self.counts[result.status.value] = self.counts.get(result.status.value, 0) + 1
        if best is not None:
            self.best = best
        self.live.update(self._render())

    def finished(self, summary):
        self.live.update(self._render())
        self.live.stop()


def summary_line(summary) -> str:
    """One line on a finished run: counts, wall time, build CPU, and the run side (GPU figures
    only where runs had GPUs, none when nothing was evaluated)."""
    runs = ""
    if summary.evaluated:
        runs = (f"GPU {summary.gpu_seconds:.1f} s, GPU idle {100 * summary.gpu_idle_share:.0f}%, "
                if summary.has_gpu else f"runs {summary.gpu_seconds:.1f} s, ")
    confirm = ""
    if getattr(summary, "confirm_runs", 0):
        confirm = (f"; {summary.confirm_runs} confirmation runs in {summary.confirm_seconds:.1f} s "
                   f"({100 * summary.confirm_seconds / summary.wall_seconds:.0f}% of the wall time)"
                   if summary.wall_seconds > 0 else "")
    hardening = getattr(summary, "harden_seconds", 0.0)
    if hardening and summary.wall_seconds > 0:
        confirm += f"; hardening {hardening:.1f} s ({100 * hardening / summary.wall_seconds:.0f}% of the wall time)"
    clocks = getattr(summary, "clocks", None)
    if clocks:
        confirm += f"; {clocks}"
    spilled = getattr(summary, "counts", {}).get("SPILLS", 0)
    if spilled:
        confirm += f"; {spilled_line(spilled)}"
    for strategy, metric in getattr(summary, "searched_by", {}).items():
        confirm += (f"; {strategy} searched by {metric} alone (the first objective): the Pareto front is over "
                    f"the configs it evaluated")
    shared = getattr(summary, "shared", 0)
    if shared:
        confirm += (f"; {shared} config{'s' if shared != 1 else ''} not run: {'their builds' if shared != 1 else 'its build'} "
                    f"made a program another config's run measured")
    dead = list(dict.fromkeys(k.name for _, _, k in getattr(summary, "dead_knobs", ())))
    if dead:
        confirm += f"; change{'s' if len(dead) == 1 else ''} no program: {', '.join(dead)}"
    return (f"{summary.evaluated} evaluated, {summary.resumed} resumed from the store; "
            f"wall {summary.wall_seconds:.1f} s, build CPU {summary.build_cpu_seconds:.1f} s, "
            f"{runs}{summary.configs_per_minute:.1f} configs/min{confirm}")


def spilled_line(n: int) -> str:
    """'12 configs not run because their kernels spill registers ([build] allow_spills = false;
    true runs them)': the run's summary and ``ksweep plan`` say it alike."""
    return (f"{n} config{'s' if n != 1 else ''} not run because {'their kernels spill' if n != 1 else 'its kernel spills'} "
            f"registers ([build] allow_spills = false; true runs them)")


def make_observer(metric: str, quiet: bool = False):
    from ..observer import NullObserver

    if quiet:
        return NullObserver()
    if sys.stderr.isatty():
        return RichProgress(metric)
    return PlainLog(metric)


def warm_text(sources) -> str:
    """'old.db:base/fc1@H100, this run: base/patch_embed@H100' (at most 4, then a count)."""
    shown = ", ".join(sources[:4])
    return shown + (f" and {len(sources) - 4} more" if len(sources) > 4 else "")
