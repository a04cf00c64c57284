"""``ksweep check``: did the current source regress? A gate a CI job runs on a GPU runner.

For each shape × variant of a spec: the baseline is the latest revision in the database's
history (``report/history.py``) and its best config; the current sources are built and
that config (and the default config) measured again, interleaved, ``repeats`` times more
(the confirmation: a median and a 95% interval). The shape regressed when the config is
slower than the baseline by more than ``tolerance`` and the two intervals do not overlap
(beyond noise; with no interval on one side, the tolerance alone decides), or when it no
longer builds or runs. Without ``update`` the measurements go to a copy of the database
and the history is left as it was; with it they are recorded, a revision of their own.
The library half of ``ksweep check`` (the application layer).
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import KsweepError
from ..job import config_id
from ..report.history import BEFORE, Point, timeline
from ..run.gpus import detect_gpus, select_gpus
from ..space.space import Space
from ..spec.model import Spec
from ..status import Status
from ..store import standings
from ..store.ranking import finite_value
from ..store.sqlite import Store
from ..strategies.listed import ListedStrategy
from ..sweep.driver import check_store_spec
from ..sweep.options import SweepOptions
from ..sweep.local import check_options
from ..verify.confirm import Confirmation, Interval, confirmed
from .sweep import run_sweep, write_csv
from .wiring import database


@dataclass(frozen=True)
class ShapeVerdict:
    variant: str
    shape: str
    verdict: str  # "ok", "faster", "inconclusive" (slower beyond the tolerance, within noise), "REGRESSED",
    # "FAILED", "no baseline"
    params: dict
    baseline: float | None = None
    baseline_revision: str | None = None
    baseline_interval: Interval | None = None
    now: float | None = None
    now_interval: Interval | None = None
    revision: str | None = None
    speedup: float | None = None
    beyond_noise: bool | None = None
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.verdict in ("REGRESSED", "FAILED")

    def line(self, metric: str) -> str:
        head = f"{self.shape}/{self.variant}: "
        if self.verdict == "no baseline":
            return head + f"no baseline: {self.message or 'not in the history (sweep it first)'}: not checked"
        if self.verdict == "FAILED":
            return head + f"FAILED: the best known config ({_cfg(self.params)}) {self.message}"
        noise = {True: "beyond noise", False: "within noise", None: "noise unknown"}[self.beyond_noise]
        line = (head + f"{self.verdict}: {metric} {self.baseline:.4g}{_pm(self.baseline_interval)} at "
                f"{self.baseline_revision} -> {self.now:.4g}{_pm(self.now_interval)} now ({self.revision}), "
                f"{self.speedup:.3f}x ({noise}); config {_cfg(self.params)}")
        if self.verdict == "inconclusive":
            line += ("\n  slower by more than the tolerance, but the 95% intervals overlap: too noisy to tell "
                     "(measure again with more --repeats; a wide baseline needs a sweep with more --confirm "
                     "rounds)")
        return line


def _pm(iv: Interval | None) -> str:
    """`` (±2.1%)``: the 95% interval's half-width relative to the median, when there is one."""
    spread = iv.spread(1) if iv is not None else None
    return f" ({spread})" if spread else ""


def _cfg(params) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _copy(db: Path, to: Path) -> None:
    src = sqlite3.connect(str(db))
    dst = sqlite3.connect(str(to))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def check(spec: Spec, *, db: str | Path | None = None, tolerance: float = 0.05, shapes: Sequence[str] = (),
          variants: Sequence[str] = (), repeats: int = 3, update: bool = False, gpus=None, jobs=None,
          observer=None) -> list[ShapeVerdict]:
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < float("inf"):
        raise KsweepError(f"tolerance {tolerance!r}: give a fraction, 0 or more (0.05: 5%)")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 0 <= repeats <= Confirmation.MAX_ROUNDS:
        raise KsweepError(f"repeats {repeats!r}: give a whole number from 0 to {Confirmation.MAX_ROUNDS}")
    # a shape or variant the spec lacks is refused (it would check nothing, and pass)
    check_options(spec, SweepOptions(shapes=tuple(shapes) or None, variants=tuple(variants) or None),
                  own_strategy=True)
    db_path = database(spec, db)
    if not db_path.exists():
        raise KsweepError(f"{db_path}: no results database: sweep the spec first (ksweep run), then check")
    with Store(db_path, create=False) as store:
        check_store_spec(store, spec)  # another spec's database has no baseline of this one: it would pass
        stored = store.objective() if store.get_meta("objective") is not None else spec.objective
        objective = {"metric": stored.metric, "direction": stored.direction}
        if (stored.metric, stored.direction) != (spec.objective.metric, spec.objective.direction):
            # the baseline's values and the runs' would be of two objectives
            raise KsweepError(f"{db_path}: its results were swept for {objective['metric']} "
                              f"({objective['direction']}), the spec's objective is {spec.objective.metric} "
                              f"({spec.objective.direction}): sweep the spec again (ksweep run), then check")
        models = _local_models(gpus)
        spaces = {(va.name, sh.name): Space.from_spec(spec, sh.name, va.name)
                  for sh in spec.shape_list() for va in spec.variant_list()
                  if (not shapes or sh.name in shapes) and (not variants or va.name in variants)}
        shipped = {key: _shipped(store, *key, objective["metric"], objective["direction"], space, models)
                   for key, space in spaces.items()}
        # the history's latest point stands in where no stored result does: read only then
        lines = timeline(store.history(), store.measurements(), objective["metric"], objective["direction"],
                         tolerance) if None in shipped.values() else {}
    metric, direction = objective["metric"], objective["direction"]
    verdicts: list[ShapeVerdict] = []
    targets = []
    for sh in spec.shape_list():
        if shapes and sh.name not in shapes:
            continue
        for va in spec.variant_list():
            if variants and va.name not in variants:
                continue
            points = [p for p in lines.get((va.name, sh.name), []) if p.value is not None]
            base = shipped.get((va.name, sh.name)) or (points[-1] if points else None)
            if base is None:  # never swept, or swept with no config that ran OK
                verdicts.append(ShapeVerdict(va.name, sh.name, "no baseline", {}, message=(
                    f"no config ran OK in its sweeps (ksweep report --shape {sh.name} says why)"
                    if lines.get((va.name, sh.name)) else "")))
                continue
            space = spaces[(va.name, sh.name)]
            if dict(base.params) not in space:  # the history's best, of a spec since changed: not measurable
                verdicts.append(ShapeVerdict(va.name, sh.name, "no baseline", dict(base.params), message=(
                    f"its best known config ({_cfg(base.params)}) is not in the spec's space (a parameter added "
                    f"or renamed, a value or config taken out since): sweep the spec again (ksweep run)")))
                continue
            default = {p.name: p.default for p in spec.effective_params(sh, va)}
            configs = [dict(base.params)] + ([default] if default != dict(base.params) and default in space else [])
            targets.append((va.name, sh.name, base, configs))
    if not targets:
        return verdicts
    with tempfile.TemporaryDirectory(prefix="ksweep-check-") as tmp:
        target = db_path
        if not update:
            target = Path(tmp) / db_path.name
            _copy(db_path, target)
        try:
            for va, sh, base, configs in targets:
                def listed(name, space, seed, max_evals, configs=configs):  # the driver's factory signature
                    return ListedStrategy(space, configs)

                # the shape's other configs are not measured: with --update their results stand
                options = SweepOptions(shapes=(sh,), variants=(va,), rerun="all", rerun_supersedes=False,
                                       record_pruned=False,
                                       max_evals=len(configs),
                                       confirm=Confirmation(k=len(configs), rounds=repeats, within=None, owed=False),
                                       warm_between_shapes=False)
                started = time.time()
                run_sweep(spec, db=target, options=options, gpus=gpus, jobs=jobs, observer=observer,
                          cache=db_path.resolve().parent / "cache", strategy_factory=listed)
                verdicts.append(_judge(target, va, sh, base, metric, direction, tolerance, started))
        finally:
            if update:  # its runs are recorded (those of an interrupted check too): the CSV follows, as run's does
                write_csv(db_path)
    return verdicts


def _local_models(gpus) -> set[str] | None:
    """The GPU models this check runs on ({"none"} without a GPU), None when not known."""
    names = {g.name for g in select_gpus(detect_gpus(), gpus)}
    return None if "unknown" in names else names


def _shipped(store: Store, variant: str, shape: str, metric: str, direction: str, space: Space,
             models: set[str] | None) -> Point | None:
    """The best of the stored results that stand, on the GPU model this check runs on and in
    the spec's space (what it can measure): the confirmed BEST with its median and interval,
    else the ranked best, as report and export choose; None when there is none. Results
    resumed from an earlier revision count, as they do there (the history's point of a
    revision holds only what was measured under it)."""
    # the store's best (confirmed among every config it measured: a BEST taken out of the space
    # leaves the ranked best of the configs in it, not the default, confirmed only as the
    # reference, as BEST) of the results on this GPU model and in the space
    found = standings.standing(store, variant, shape)
    best = found.best(within=lambda r: (models is None or r.gpu_name is None or r.gpu_name in models)
                      and dict(r.params) in space)
    if best is None:
        return None
    v = found.verdict(best)
    iv = v.interval if v is not None and v.interval.n else None
    return Point(best.revision or BEFORE, best.finished, iv.median if iv is not None else finite_value(best, metric),
                 dict(best.params), iv, confirmed=iv is not None)


def _judge(db: Path, variant: str, shape: str, base, metric: str, direction: str, tolerance: float,
           started: float) -> ShapeVerdict:
    cid = config_id(base.params)
    with Store(db, create=False) as store:
        rows = store.history(variant, shape)
        revision = rows[-1].revision if rows else None
        now_rows = [r for r in rows if r.revision == revision]
        latest = {config_id(r.params): r for r in now_rows}
        # the runs of this check only: rounds a sweep took under the same key are not "now"
        ms = [m for m in store.measurements(variant, shape) if m.finished is not None and m.finished >= started]
        conf = confirmed(list(latest.values()), ms, direction).get((variant, shape))
    mine = latest.get(cid)
    common = dict(variant=variant, shape=shape, params=dict(base.params), baseline=base.value,
                  baseline_revision=base.revision, baseline_interval=base.interval, revision=revision)
    if mine is None or mine.status is not Status.OK:
        what = "was not measured" if mine is None else f"is {mine.status.value} now: {mine.message}"
        return ShapeVerdict(verdict="FAILED", message=what, **common)
    v = conf.verdicts.get(cid) if conf is not None else None
    now_iv = v.interval if v is not None and v.interval.n else None
    now = now_iv.median if now_iv is not None else mine.value(metric)
    speed = base.value / now if direction == "min" else now / base.value
    beyond = None
    if now_iv is not None and base.interval is not None and now_iv.n > 1 and base.interval.n > 1:
        beyond = not now_iv.overlaps(base.interval)
    if speed < 1 - tolerance and beyond is not False:
        verdict = "REGRESSED"
    elif speed > 1 + tolerance and beyond is not False:
        verdict = "faster"
    elif speed < 1 - tolerance:  # slower than the tolerance, but the intervals cannot tell it from noise
        verdict = "inconclusive"
    else:
        verdict = "ok"
    return ShapeVerdict(verdict=verdict, now=now, now_interval=now_iv, speedup=speed, beyond_noise=beyond, **common)
