"""``ksweep insights DB``: what a results database, or a recorded dataset (a Kernel Tuner
cache or T4 results file, read as ``ksweep replay`` reads it), says beyond its best
config, per shape × variant: its failures as constraints, its knobs' importance, the
winner's risk (``insights/``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import DatasetError, KsweepError
from ..insights import Insight, analyse, from_dataset, from_standing, headlines as pick_headlines
from ..insights.table import pooled_noise
from ..job import config_id
from ..status import Status
from ..store import standings as standings_of
from ..store.sqlite import Store
from ..verify.confirm import counted_runs
from ..warm.sources import is_database
from .report import check_names


@dataclass(frozen=True)
class Insights:
    source: str  # the database or dataset read
    kind: str  # "database" or "recording"
    found: tuple[Insight, ...]  # one per shape × variant
    variants: tuple[str, ...] = ()  # every variant of the source, for constraints that apply to some
    shapes: dict | None = None  # variant -> every shape of it in the source

    def to_json(self) -> dict:
        return {"source": self.source, "kind": self.kind, "targets": [i.to_json() for i in self.found],
                "headlines": self.headlines()}

    def headlines(self) -> list[str]:
        return pick_headlines(self.found, command=f"ksweep insights {self.source}")


def insights(path: str, *, shape: str | None = None, variant: str | None = None,
             rules: bool = True) -> Insights:
    """Read ``path`` (a database, else a recorded dataset) and analyse each of its shape ×
    variant pairs (those ``shape`` and ``variant`` name)."""
    where = Path(path)
    if not where.exists():
        raise KsweepError(f"{path}: no such results database or recorded dataset")
    if where.is_dir():
        raise KsweepError(f"{path} is a directory: give a results database or a recorded dataset")
    if is_database(where):
        return _of_database(path, shape, variant, rules)
    from ..replay import load_dataset

    try:
        dataset = load_dataset(where)
    except DatasetError as exc:
        raise KsweepError(f"{exc} (insights reads a ksweep database or a recorded dataset)") from None
    if shape not in (None, dataset.name) or variant not in (None, ""):
        raise KsweepError(f"{path}: a recorded dataset has one shape ({dataset.name}) and no variant")
    return Insights(path, "recording", (analyse(from_dataset(dataset), find_rules=rules),))


def _of_database(path: str, shape: str | None, variant: str | None, rules: bool) -> Insights:
    with Store(path, create=False) as store, store.snapshot():
        check_names(store, shape, variant)
        found = standings_of.read(store, variant, shape)
        measurements = store.measurements(variant, shape)
        orders = store.param_orders()
        every = store.results()
    runs = counted_runs(found.results, measurements)
    # the spread of one measurement, pooled over every confirmed config of the database: the
    # noise of a shape measured once each, when another shape was confirmed
    per_config: dict[tuple, list[float]] = {}
    for group, ms in runs.items():
        for m, _ in ms:
            if m.status is Status.OK and m.value is not None:
                per_config.setdefault((group, config_id(m.params)), []).append(m.value)
    noise = pooled_noise(per_config.values())
    out = []
    for key in sorted(found, key=lambda k: (k[0], k[1])):
        standing = found[key]
        if not any(r.status is not Status.PRUNED for r in standing.results):
            continue
        table = from_standing(standing, runs.get(key, ()), knobs=orders.get(key), noise=noise)
        out.append(analyse(table, find_rules=rules))
    if not out:
        raise KsweepError(f"{path}: no evaluated config to learn from" + (
            f" for {'/'.join(x for x in (shape, variant) if x)}" if shape or variant else ""))
    variants = tuple(dict.fromkeys(r.variant for r in every))
    shapes = {v: tuple(dict.fromkeys(r.shape for r in every if r.variant == v)) for v in variants}
    return Insights(path, "database", tuple(out), variants, shapes)


def headlines(db: str | Path, command: str | None = None) -> list[str]:
    """The one or two lines ``ksweep run`` ends with (``insights.summary.headlines``); none
    for a database with nothing evaluated."""
    try:
        done = insights(str(db))
    except KsweepError:
        return []
    return pick_headlines(done.found, command=command or f"ksweep insights {db}")


def constraints(done: Insights, names: Sequence[str] = ()) -> list[dict]:
    """The suggested ``[[constraints]]``: one per term of each rule, merged across the shape ×
    variant pairs that found the same one (restricted by ``shapes``/``variants`` to those
    when others did not), each named ``insight_<status>_<n>`` (a name not in ``names``)."""
    from ..insights.rules import negate, reason

    found: dict[tuple[str, str], dict] = {}
    for i in done.found:
        for r in i.rules:
            for t in r.terms:
                entry = found.setdefault((r.status, t.text), {"targets": [], "failed": 0, "matched": 0, "ok": 0})
                entry["targets"].append((i.table.variant, i.table.shape))
                entry["failed"] += t.failed
                entry["matched"] += t.matched
                entry["ok"] += t.ok
    taken = set(names)
    counter: dict[str, int] = {}
    every = {(i.table.variant, i.table.shape) for i in done.found} if done.kind == "recording" else {
        (v, s) for v, shapes in (done.shapes or {}).items() for s in shapes}
    out = []
    for (status, text), e in found.items():
        blocks = [{}] if set(e["targets"]) >= every else _restrictions(e["targets"], done)
        for restriction in blocks:
            n = counter.get(status, 0) + 1
            while f"insight_{status.lower()}_{n}" in taken:
                n += 1
            counter[status] = n
            name = f"insight_{status.lower()}_{n}"
            taken.add(name)
            out.append({"name": name, "expr": negate(text),
                        "reason": reason(status, text, e["failed"], e["matched"], e["ok"]), **restriction})
    return out


def _restrictions(targets: list[tuple[str, str]], done: Insights) -> list[dict]:
    """``shapes``/``variants`` keys that apply a constraint to exactly ``targets``: one block
    per variant (no ``variants`` key when the database has one), naming its shapes unless
    it is all of them."""
    out = []
    for v in dict.fromkeys(v for v, _ in targets):
        shapes = [s for w, s in targets if w == v]
        block: dict = {}
        if len(done.variants) > 1:
            block["variants"] = [v]
        if set(shapes) != set((done.shapes or {}).get(v, ())):
            block["shapes"] = shapes
        out.append(block)
    return out
