"""``ksweep check``: did the current source regress? A gate a CI job runs on a GPU runner.

For each shape × variant of a spec: the baseline is the config ``report`` and ``export``
show as best (else the latest revision in the history and its best) and the revision it
was measured on. The current sources are built and that config run once (a result, as a
sweep's: a config that no longer builds or runs is FAILED). Then the baseline revision is
checked out of git and built again, and both builds are measured in interleaved rounds
until their speed-up is told apart from the tolerance or ``budget`` seconds are spent
(``check_rounds.py``; the statistics are ``verify/medians.py``'s). Where the baseline cannot
be rebuilt (not a commit of the repository, it does not build), the current build is
compared with its stored figures, and the line says why. The verdict is ``REGRESSED``,
``ok``, ``faster``, ``inconclusive`` (the time was spent before the interval left the
tolerance's edge) or ``FAILED``. Without ``update`` the measurements go to a copy of the
database and the history is left as it was; with it they are recorded, a revision of their
own. The library half of ``ksweep check`` (the application layer).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import KsweepError
from ..job import config_id
from ..process import reap_session
from ..report.history import BEFORE, Point, timeline
from ..run.gpus import detect_gpus, select_gpus
from ..space.space import Space
from ..spec.model import Spec
from ..status import Status
from ..store import standings
from ..store.ranking import finite_value
from ..store.connection import read_only_uri
from ..store.sqlite import Store
from ..strategies.listed import ListedStrategy
from ..sweep.driver import check_store_spec
from ..sweep.jobs import JobFactory
from ..sweep.local import check_options, scratch_dir
from ..sweep.options import SweepOptions
from ..sweep.rounds import Contender
from ..verify import medians
from ..verify.confirm import Confirmation, Interval
from .check_rounds import Baselines, Rounds, measure
from .sweep import run_sweep, write_csv
from .wiring import check_sweep_folders, database, make_executor, mode_for

REPEATS = medians.FEWEST  # rounds at least, by default: the fewest whose median interval is at 95%
BUDGET = 30.0  # seconds of rounds of one shape × variant, by default, before it is called inconclusive


@dataclass(frozen=True)
class ShapeVerdict:
    variant: str
    shape: str
    verdict: str  # "ok", "faster", "inconclusive" (the rounds could not tell), "REGRESSED", "FAILED",
    # "no baseline"
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
    speedup_interval: Interval | None = None
    rounds: int = 0
    seconds: float = 0.0
    rebuilt: bool = False  # the baseline revision rebuilt and measured in the rounds (else its stored figures)
    stored: float | None = None  # the baseline's stored value
    note: str = ""  # why the stored figures were used

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
        iv = self.speedup_interval
        between = f" [{iv.lo:.3f}-{iv.hi:.3f}]" if iv is not None and iv.n > 1 else ""
        how = (f"{self.rounds} rounds with {self.baseline_revision} rebuilt" if self.rebuilt else
               f"{self.rounds} rounds against its stored figures" if self.rounds else "one run against its "
               "stored figures")
        line = (head + f"{self.verdict}: {metric} {self.baseline:.4g}{_pm(self.baseline_interval)} at "
                f"{self.baseline_revision} -> {self.now:.4g}{_pm(self.now_interval)} now ({self.revision}), "
                f"{self.speedup:.3f}x{between} ({noise}); config {_cfg(self.params)}; {how}, {self.seconds:.1f} s")
        if self.note:
            line += f"\n  the baseline was not rebuilt: {self.note}"
        if self.verdict == "inconclusive":
            if self.rebuilt:
                line += ("\n  inconclusive: the speed-up's interval still straddles the tolerance: give the check "
                         "more time (--budget), run it where nothing else runs on the GPU, or raise --tolerance "
                         "(--strict fails it)")
            else:
                line += ("\n  inconclusive: slower by more than the tolerance, or too noisy to tell, against a "
                         "stored baseline whose interval is this wide: commit the sources and sweep them, so that "
                         "check rebuilds the baseline and measures it beside the current build, or sweep with "
                         "more --confirm rounds (--strict fails it)")
        return line


def _pm(iv: Interval | None) -> str:
    """`` (±2.1%)``: the interval's half-width relative to the median, when there is one."""
    spread = iv.spread(1) if iv is not None else None
    return f" ({spread})" if spread else ""


def _cfg(params) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _copy(db: Path, to: Path) -> None:
    """A copy of the database for the check's runs (the original's folder may be read-only)."""
    src = sqlite3.connect(read_only_uri(db), uri=True)
    dst = sqlite3.connect(str(to))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def check(spec: Spec, *, db: str | Path | None = None, tolerance: float = 0.05, shapes: Sequence[str] = (),
          variants: Sequence[str] = (), repeats: int = REPEATS, budget: float = BUDGET, update: bool = False,
          gpus=None, jobs=None, observer=None) -> list[ShapeVerdict]:
    """``repeats``: rounds at least (0: the one run against the stored figures, no rounds);
    ``budget``: seconds of rounds of one shape × variant after which an undecided one is
    inconclusive."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < float("inf"):
        raise KsweepError(f"tolerance {tolerance!r}: give a fraction, 0 or more (0.05: 5%)")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 0 <= repeats <= Confirmation.MAX_ROUNDS:
        raise KsweepError(f"repeats {repeats!r}: give a whole number from 0 to {Confirmation.MAX_ROUNDS}")
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget < float("inf"):
        raise KsweepError(f"budget {budget!r}: give a number of seconds, 0 or more")
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
        gpus = _one_gpu(gpus)
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
            # with --update the default is measured too, as a sweep's confirmation measures it
            configs = [dict(base.params)] + ([default] if update and default != dict(base.params)
                                             and default in space else [])
            targets.append((va.name, sh.name, base, configs))
    if not targets:
        return verdicts
    cache = db_path.resolve().parent / "cache"
    with tempfile.TemporaryDirectory(prefix="ksweep-check-") as tmp, contextlib.ExitStack() as stack:
        if not update and not os.access(db_path.resolve().parent, os.W_OK | os.X_OK):
            cache = Path(tmp) / "cache"  # the database's folder is read-only: a build cache of the check's own
        check_sweep_folders(spec, db_path if update else Path(tmp) / db_path.name, cache)
        target = db_path
        if not update:
            target = Path(tmp) / db_path.name
            _copy(db_path, target)
        if update:  # its runs are recorded (those of an interrupted check too): the CSV follows, as run's does
            stack.callback(write_csv, db_path)
        stack.callback(reap_session)  # a daemon a run left behind: nothing of the check's runs now
        stack.callback(shutil.rmtree, scratch_dir(spec), True)
        executor = make_executor(spec, gpus, jobs, cache=cache)  # the current build's, for the whole check
        stack.push(lambda kind, exc, tb: executor.shutdown(cancel=kind is not None))
        baselines = Baselines(spec, stack, lambda other: make_executor(other, gpus, jobs, cache=cache))
        for va, sh, base, configs in targets:
            def listed(name, space, seed, max_evals, configs=configs):  # the driver's factory signature
                return ListedStrategy(space, configs)

            # the shape's other configs are not measured: with --update their results stand; the
            # check measures speed, it hardens nothing (ksweep harden does, after --update)
            options = SweepOptions(shapes=(sh,), variants=(va,), rerun="all", rerun_supersedes=False,
                                   record_pruned=False, max_evals=len(configs), confirm=None,
                                   warm_between_shapes=False, harden=False)
            run_sweep(spec, db=target, options=options, executor=executor, observer=observer, cache=cache,
                      strategy_factory=listed)
            verdicts.append(_judge(spec, target, va, sh, base, configs, spaces[(va, sh)], metric, direction,
                                   tolerance, repeats, budget, executor, baselines))
    return verdicts


def _one_gpu(gpus: list[int] | None) -> list[int] | None:
    """The GPU the check measures on, the first of ``gpus`` (of the host's, when None): both
    runs of a round on one board, whose clocks they share (None: a host without a GPU)."""
    first = select_gpus(detect_gpus(), gpus)[0]
    return None if first.index is None else [first.index]


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
    iv = medians.median_interval(v.values) if v is not None and v.values else None  # the median's, as history's
    return Point(best.revision or BEFORE, best.finished, iv.median if iv is not None else finite_value(best, metric),
                 dict(best.params), iv, confirmed=iv is not None)


def _judge(spec: Spec, db: Path, variant: str, shape: str, base: Point, configs: list[dict], space: Space,
           metric: str, direction: str, tolerance: float, repeats: int, budget: float, executor,
           baselines: Baselines) -> ShapeVerdict:
    cid = config_id(base.params)
    with Store(db, create=False) as store:
        rows = store.history(variant, shape)
    revision = rows[-1].revision if rows else None
    mine = {config_id(r.params): r for r in rows if r.revision == revision}.get(cid)
    stored = base.interval if base.interval is not None and base.interval.n else \
        Interval(base.value, base.value, base.value, 1)
    common = dict(variant=variant, shape=shape, params=dict(base.params), baseline=base.value,
                  baseline_revision=base.revision, baseline_interval=stored, revision=revision, stored=base.value)
    if mine is None or mine.status is not Status.OK:
        what = "was not measured" if mine is None else f"is {mine.status.value} now: {mine.message}"
        return ShapeVerdict(verdict="FAILED", message=what, **common)
    if repeats == 0:  # no rounds: the one run against the stored figures
        value = mine.value(metric)
        rounds = Rounds(now=[value], speedup=medians.unpaired(stored, Interval(value, value, value, 1), direction))
        rounds.verdict = medians.decide(rounds.speedup, tolerance)
    else:
        sh = next(s for s in spec.shape_list() if s.name == shape)
        va = next(v for v in spec.variant_list() if v.name == variant)
        factory = JobFactory(spec, sh, va, space, mode_for(spec))
        now, *extra = (Contender(spec, executor, factory.make(c)) for c in configs)
        rebuilt = baselines.contender(base.revision, shape, variant, space, dict(base.params))
        with Store(db, create=False) as store:
            rounds = measure(now, rebuilt if isinstance(rebuilt, Contender) else None, tuple(extra), stored,
                             store=store, direction=direction, tolerance=tolerance, repeats=repeats, budget=budget,
                             note="" if isinstance(rebuilt, Contender) else rebuilt)
    common.update(rounds=rounds.count if repeats else 0, seconds=rounds.seconds, note=rounds.note)
    if rounds.failed is not None:
        m = rounds.failed
        return ShapeVerdict(verdict="FAILED", message=f"is {m.status.value} now, in round {m.round + 1} of the "
                            f"check: {m.message}".rstrip(": "), **common)
    now_iv = medians.median_interval([v for v in rounds.now if v is not None])
    speed = rounds.speedup
    if rounds.base and medians.paired(rounds.base, rounds.now, direction) is not None:  # rebuilt, round by round
        base_iv = medians.median_interval([v for v in rounds.base if v is not None])
        common.update(baseline=base_iv.median, baseline_interval=base_iv, rebuilt=True)
        beyond = medians.beyond_noise(speed)
    else:
        beyond = not now_iv.overlaps(stored) if now_iv.n > 1 and stored.n > 1 else None
    return ShapeVerdict(verdict=rounds.verdict or "inconclusive", now=now_iv.median, now_interval=now_iv,
                        speedup=speed.median, speedup_interval=speed, beyond_noise=beyond, **common)
