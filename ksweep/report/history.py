"""The evolution of a kernel across source revisions (pure): seed 002's timeline.

Per shape × variant, one point per source revision in time order (a revision measured again
after another, an edit undone, is a point of its own):
the best result of that revision — the confirmed best (the median of its confirmation
runs and the order-statistic interval of that median, ``verify/medians.py``: an outlier
run moves it by one rank, and it never leaves the runs' range) where the confirmation ran,
else the best single value — and its change against the previous revision, as a speed-up
(``0.88×``: 12% slower). A change is *beyond noise* when both points have intervals and
they do not overlap; it is a *regression* when it is slower by more than ``tolerance`` and
not within noise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from ..job import config_id
from ..result import Measurement, Result
from ..verify.confirm import Interval, confirmed
from ..verify.medians import median_interval
from ..store.ranking import finite_value
from ..outputs import save_figure

BEFORE = "(before history)"  # the revision of results stored before schema 6


@dataclass(frozen=True)
class Point:
    revision: str
    first_seen: float | None
    value: float | None  # the best value of the revision (None: nothing valid)
    params: Mapping = field(default_factory=dict)
    interval: Interval | None = None  # of the confirmed best
    evaluated: int = 0  # the distinct configs evaluated on the revision
    speedup: float | None = None  # against the previous point with a value (>1: faster)
    beyond_noise: bool | None = None  # None: not known (no intervals)
    regression: bool = False
    confirmed: bool = False
    occurrence: int = 1  # 2: the revision measured again after another one (an edit undone)

    @property
    def label(self) -> str:
        """The revision, and for a revision measured again after another, which time."""
        if self.occurrence == 1:
            return self.revision
        return f"{self.revision} (again)" if self.occurrence == 2 else f"{self.revision} (again x{self.occurrence - 1})"

    def to_json(self) -> dict:
        iv = self.interval
        return {"revision": self.revision, "occurrence": self.occurrence, "first_seen": self.first_seen,
                "value": self.value,
                "params": dict(self.params), "confirmed": self.confirmed, "evaluated": self.evaluated,
                "ci95": None if iv is None else [iv.lo, iv.hi], "n": None if iv is None else iv.n,
                "speedup": self.speedup, "beyond_noise": self.beyond_noise, "regression": self.regression}


def timeline(history: Iterable[Result], measurements: Iterable[Measurement], metric: str, direction: str,
             tolerance: float = 0.02) -> dict[tuple[str, str], list[Point]]:
    """(variant, shape) -> its points in time order.

    A point is a run of consecutive results (in the order they finished) of one revision: a
    revision measured again after another one (an edit undone, then swept again) is a point
    of its own, so that the last point is what was measured last. Its ``occurrence`` counts
    the times the revision was measured, over every shape and variant (a shape swept on r1,
    then only another on r2, then the first on r1 again: "r1 (again)"), so that one label is
    one time on a shared axis. A point's best is of every result of its revision up to its
    end: those of an earlier time that were not measured again (a sweep that resumed them)
    stand, as they do in the report."""
    rows_all = sorted(history, key=lambda r: r.finished or 0.0)  # stable: rows of one time keep their order
    times: list[tuple[str, float]] = []  # every time a revision was measured: (revision, its start)
    for r in rows_all:
        rev = r.revision or BEFORE
        if not times or times[-1][0] != rev:
            times.append((rev, r.finished or 0.0))
    segments: dict[tuple[str, str], list[tuple[str, list[Result]]]] = {}
    for r in rows_all:
        runs = segments.setdefault((r.variant, r.shape), [])
        rev = r.revision or BEFORE
        if not runs or runs[-1][0] != rev:
            runs.append((rev, []))
        runs[-1][1].append(r)
    ms = list(measurements)
    # a confirmation run belongs to its config's revision (of its latest row measured before the
    # run: a header edit keeps the key, and an edit undone is the same revision again), at the
    # point of that revision current when the run was taken
    rows_of: dict[tuple, list[tuple[float, str]]] = {}
    for r in rows_all:
        rows_of.setdefault((r.variant, r.shape, config_id(r.params)), []).append((r.finished or 0.0, r.revision or BEFORE))

    def owner(m) -> int | None:
        seen = [(t, rev) for t, rev in rows_of.get((m.variant, m.shape, config_id(m.params)), ())
                if m.finished is None or t <= m.finished]
        if not seen:
            return None
        rev = max(seen)[1]
        runs = segments[(m.variant, m.shape)]
        return max(i for i, (r, rows) in enumerate(runs)
                   if r == rev and (m.finished is None or (rows[0].finished or 0.0) <= m.finished))
    owners = [owner(m) for m in ms]
    out = {}
    for group, runs in segments.items():
        points: list[Point] = []
        for i, (rev, rows) in enumerate(runs):
            own = [m for m, o in zip(ms, owners) if o == i and (m.variant, m.shape) == group]
            start = rows[0].finished or 0.0
            occurrence = sum(1 for r, t in times if r == rev and t <= start)  # 1 at least: its own time
            standing = [x for r, seg in runs[:i + 1] if r == rev for x in seg]  # in time order
            evaluated = len({config_id(x.params) for x in rows})  # distinct configs: one measured again counts once
            points.append(_point(group, rev, standing, own, metric, direction, rows[0].finished, evaluated,
                                 occurrence))
        out[group] = _changes(points, direction, tolerance)
    return out


def _point(group, rev, rows: Sequence[Result], ms, metric, direction, first_seen, evaluated: int,
           occurrence: int = 1) -> Point:
    # a config measured twice: its last result (one that failed since stands as failed)
    latest = {cid: r for cid, r in {config_id(r.params): r for r in rows}.items() if finite_value(r, metric) is not None}
    if not latest:
        return Point(rev, first_seen, None, evaluated=evaluated, occurrence=occurrence)
    conf = confirmed(list(latest.values()), [m for m in ms if (m.variant, m.shape) == group], direction).get(group)
    if conf is not None and conf.best is not None:
        v = conf.verdicts[conf.best]
        iv = median_interval(v.values) or v.interval
        return Point(rev, first_seen, iv.median, latest[conf.best].params, iv, evaluated,
                     confirmed=True, occurrence=occurrence)
    sign = 1 if direction == "min" else -1
    best = min(latest.values(), key=lambda r: sign * finite_value(r, metric))
    return Point(rev, first_seen, finite_value(best, metric), best.params, None, evaluated, occurrence=occurrence)


def _changes(points: list[Point], direction: str, tolerance: float) -> list[Point]:
    out: list[Point] = []
    prev: Point | None = None
    for p in points:
        if p.value is None or prev is None or not prev.value or not p.value:
            out.append(p)
            prev = p if p.value is not None else prev
            continue
        speed = prev.value / p.value if direction == "min" else p.value / prev.value
        beyond = None
        if p.interval is not None and prev.interval is not None and p.interval.n > 1 and prev.interval.n > 1:
            beyond = not p.interval.overlaps(prev.interval)
        regression = speed < 1 - tolerance and beyond is not False
        out.append(replace(p, speedup=speed, beyond_noise=beyond, regression=regression))
        prev = p
    return out


def _spread(p: Point) -> str:
    """'±0.42%' of a confirmed best's interval; 'n=1' with one run (no spread to show);
    'unconf.' when it was not confirmed."""
    iv = p.interval
    if iv is None:
        return "" if p.value is None else "unconf."
    return f"n={iv.n}" if iv.n < 2 else (iv.spread() or "-")


def render(lines_of: Mapping[tuple[str, str], list[Point]], metric: str) -> str:
    lines = []
    for (variant, shape), points in lines_of.items():
        lines.append(f"{shape} / {variant}")
        lines.append(f"  {'revision':<22} {'first measured':<16} {'best ' + metric:>12} {'ci95':>9} {'change':>8}  "
                     f"{'configs':>7}  config")
        for p in points:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(p.first_seen)) if p.first_seen else "-"
            value = f"{p.value:.4g}" if p.value is not None else "-"
            ci = _spread(p)
            change = "" if p.speedup is None else f"{p.speedup:.2f}x"
            note = ""
            if p.regression:
                note = "  REGRESSION" + (" (beyond noise)" if p.beyond_noise else " (noise unknown)")
            elif p.speedup is not None and p.beyond_noise is not None:  # faster, or slower within the tolerance
                note = "  beyond noise" if p.beyond_noise else "  within noise"
            cfg = " ".join(f"{k}={v}" for k, v in p.params.items())
            lines.append(f"  {p.label:<22} {when:<16} {value:>12} {ci:>9} {change:>8}  {p.evaluated:>7}  {cfg}{note}")
    return "\n".join(lines)


def revision_axis(lines_of: Mapping[tuple[str, str], list[Point]]) -> list[str]:
    """Every revision of the timelines once, in time order: the order of each shape × variant's
    own points is kept (a revision comes after every revision before it in any of them), and
    of the revisions that may come next, the one first measured earliest (then the one met
    first) goes first. Should two timelines order two revisions both ways, the one first
    measured earliest goes first."""
    orders = [list(dict.fromkeys(p.label for p in points)) for points in lines_of.values()]
    met: dict[str, int] = {}
    when: dict[str, float] = {}
    for points in lines_of.values():
        for p in points:
            met.setdefault(p.label, len(met))
            if p.first_seen is not None:
                when[p.label] = min(when.get(p.label, p.first_seen), p.first_seen)

    def key(rev: str):  # a revision of unknown time (results before the history) first
        return (rev in when, when.get(rev, 0.0), met[rev])

    axis: list[str] = []
    placed: set[str] = set()
    while len(axis) < len(met):
        heads = {o[0] for o in orders if o}
        free = [r for r in heads if not any(r in o[1:] for o in orders)]
        rev = min(free or heads, key=key)
        axis.append(rev)
        placed.add(rev)
        orders = [[r for r in o if r not in placed] for o in orders]
    return axis


def plot(lines_of: Mapping[tuple[str, str], list[Point]], metric: str, out, title: str = ""):
    from ..errors import require

    require("matplotlib", "plot", "ksweep history --plot")
    from matplotlib.figure import Figure  # no pyplot: the caller's backend (a notebook's) is left alone

    labels = revision_axis(lines_of)
    at = {rev: i for i, rev in enumerate(labels)}
    fig = Figure(figsize=(max(6.0, 1.2 * len(labels)), 4.2))
    ax = fig.subplots()
    for (variant, shape), points in lines_of.items():
        shown = [p for p in points if p.value is not None]
        ax.plot([at[p.label] for p in shown], [p.value for p in shown], marker="o",
                label=shape + (f" / {variant}" if variant != "base" else ""))
        for p in shown:
            i = at[p.label]
            if p.interval is not None and p.interval.n > 1:
                # the median's interval holds it; a point built elsewhere need not (matplotlib
                # refuses a negative bar), and no bar goes below zero
                ax.errorbar([i], [p.value], yerr=[[max(0.0, p.value - max(p.interval.lo, 0.0))],
                                                  [max(0.0, p.interval.hi - p.value)]],
                            fmt="none", ecolor="gray", capsize=3)
            if p.regression:
                ax.plot([i], [p.value], marker="v", color="red", markersize=11, linestyle="none")
            if p.speedup is not None:
                ax.annotate(f"{p.speedup:.2f}x", (i, p.value), textcoords="offset points", xytext=(0, 8),
                            ha="center", fontsize=8, color="red" if p.regression else "black")
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(f"best {metric}")
    ax.set_xlabel("source revision (time order)")
    ax.set_title(title or f"best {metric} per revision (red: regression)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
