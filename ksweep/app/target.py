"""What ``explain``, ``profile`` and ``compare`` share: the spec and its database (a spec
file, or a database naming its spec), a config resolved (``NAME=VALUE …``, a result id,
``best``, ``worst`` or ``default``), one config built through the build cache, and what the
confirmation runs say of it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from ..build.builder import BuildResult
from ..errors import KsweepError
from ..job import Job, config_id
from ..result import Result
from ..space.space import Space
from ..spec.load import load_spec
from ..spec.model import Spec
from ..spec.names import did_you_mean
from ..status import Stopped
from ..store import standings
from ..store.sqlite import Store
from ..sweep.jobs import JobFactory
from ..sweep.local import default_db_path, make_builder
from .selection import given_values, result_id
from .wiring import cache_folder, mode_for


@dataclass
class Target:
    spec: Spec
    db: Path | None  # the results database, when there is one

    def store(self) -> Store | None:
        return Store(self.db, create=False) if self.db is not None and self.db.exists() else None


def open_target(target: str, spec_path: str | None = None) -> Target:
    """A spec file (its default database, if it exists) or a database (the spec it was swept
    with, from its meta, or ``spec_path``)."""
    path = Path(target)
    if not path.exists():
        raise KsweepError(f"{target}: no such spec or results database")
    if path.suffix == ".toml":
        spec = load_spec(path)
        return Target(spec, default_db_path(spec))
    with Store(path, create=False) as store:
        recorded, name = store.get_meta("spec"), store.get_meta("spec_name")
    source = spec_path or recorded
    if not source:
        raise KsweepError(f"{target}: the database does not name its spec: give it with --spec SPEC.toml")
    if not Path(source).exists():
        raise KsweepError(f"--spec {source}: no such file" if spec_path else
                          f"{target}: its spec {source} no longer exists: give it with --spec SPEC.toml")
    spec = load_spec(source)
    if name is not None and name != spec.name:  # another spec's parameters would read its results
        raise KsweepError(
            f"{target} holds the results of spec '{name}', but {source} is spec '{spec.name}': "
            + ("give --spec the spec the database was swept with" + (f" (it names {recorded})" if recorded else "")
               if spec_path else "give the spec the database was swept with, with --spec SPEC.toml"))
    return Target(spec, path)


def pick(spec: Spec, shape: str | None, variant: str | None):
    shapes, variants = spec.shape_list(), spec.variant_list()
    return _named(shapes, shape, "shape"), _named(variants, variant, "variant")


def _named(items, name, what):
    if name is None:
        return items[0]
    for it in items:
        if it.name == name:
            return it
    close = did_you_mean(name, [i.name for i in items])
    raise KsweepError(f"no {what} named '{name}'" + (f" — did you mean '{close}'?" if close else
                      f" (there are: {', '.join(i.name for i in items)})"))


@dataclass(frozen=True)
class Chosen:
    shape: str
    variant: str
    params: dict
    defaulted: tuple[str, ...] = ()
    result: Result | None = None
    result_id: int | None = None
    superseded: bool = False  # its stored result was measured on another source or spec


def resolve_config(words: Sequence[str], spec: Spec, store: Store | None, shape: str | None,
                   variant: str | None, *, outside: bool = False) -> Chosen:
    """``NAME=VALUE …`` (the rest at their defaults), a result id (``12`` or ``#12``), ``best``
    (the confirmed best, else the ranked best), ``worst`` (the slowest valid one) or
    ``default``. Without ``shape``/``variant``, the first the database holds results of.
    ``outside``: a value outside its parameter's values is taken (explain shows such a
    config), else refused (selection.py reads the words)."""
    words = [w for w in words if w]
    rid = result_id(words[0]) if len(words) == 1 else None
    if rid is not None:
        if store is None:
            raise KsweepError(f"a result id ({words[0]}) needs a results database")
        r = store.get_by_id(rid)
        if r is None:
            raise KsweepError(f"no result with id {rid} in {store.path}")
        return Chosen(r.shape, r.variant, dict(r.params), (), r, rid)
    if store is not None and (shape is None or variant is None):  # the first swept shape × variant
        swept = {(r.shape, r.variant) for r in store.results()}
        for s_ in spec.shape_list():
            v_ = next((v for v in spec.variant_list() if (s_.name, v.name) in swept
                       and variant in (None, v.name)), None)
            if v_ is not None and shape in (None, s_.name):
                shape, variant = s_.name, v_.name
                break
    sh, va = pick(spec, shape, variant)
    params = spec.effective_params(sh, va)
    defaults = {p.name: p.default for p in params}
    if words in (["best"], ["worst"]):
        if store is None:
            raise KsweepError(f"'{words[0]}' needs a results database: sweep first, or give NAME=VALUE")
        r = standings.best(store, va.name, sh.name) if words == ["best"] else worst_result(store, va.name, sh.name)
        if r is None:
            raise KsweepError(f"no valid result for shape {sh.name}, variant {va.name} in {store.path}")
        return Chosen(sh.name, va.name, dict(r.params), (), r, store.result_id(va.name, sh.name, config_id(r.params)))
    if words in (["default"], []):
        chosen = dict(defaults)
        return _with_result(Chosen(sh.name, va.name, chosen, tuple(defaults)), store)
    given = given_values(words, params, outside=outside)
    chosen = {p.name: given.get(p.name, p.default) for p in params}
    return _with_result(Chosen(sh.name, va.name, chosen, tuple(n for n in chosen if n not in given)), store)


def _with_result(c: Chosen, store: Store | None) -> Chosen:
    if store is None:
        return c
    cid = config_id(c.params)
    r = store.get(c.variant, c.shape, cid)
    if r is None:
        return c
    return replace(c, result=r, result_id=store.result_id(c.variant, c.shape, cid),
                   superseded=(c.variant, c.shape, cid) in store.superseded(c.variant, c.shape))


def worst_result(store: Store, variant: str, shape: str) -> Result | None:
    """The slowest valid result (the last ranked one with a value)."""
    ranked = standings.standing(store, variant, shape).ranked()
    return ranked[-1] if ranked else None


# -- building one config -------------------------------------------------------------------------
def _factory(spec: Spec, shape: str | None, variant: str | None) -> JobFactory:
    sh, va = pick(spec, shape, variant)
    return JobFactory(spec, sh, va, Space.from_spec(spec, sh.name, va.name), mode_for(spec))


def build_config(spec: Spec, shape: str, variant: str, params: dict, db: Path | None
                 ) -> tuple[Job, BuildResult, BuildResult | None]:
    """Build one config through the build cache (``cache/`` beside the database, as the sweep
    built it): its job, its build and its harness's build (None without one)."""
    factory = _factory(spec, shape, variant)
    builder = make_builder(spec, Path(cache_folder(db, None)) if db is not None else None)
    job = factory.make(params)
    harness = builder.build(job.harness) if job.harness is not None else None
    built = builder.build(job)
    if isinstance(built, Stopped) or isinstance(harness, Stopped):
        raise KeyboardInterrupt
    return job, built, harness


def confirmation_of(store: Store, c: Chosen) -> dict:
    """What the confirmation runs say of the chosen config: mark (BEST, TIE or none), median,
    95% interval, runs; empty when it was not confirmed (report's MEDIAN, CI95, N)."""
    conf = standings.standing(store, c.variant, c.shape).confirmation
    v = conf.verdicts.get(config_id(c.params)) if conf is not None else None
    if v is None or not v.interval.n:
        return {}
    iv = v.interval
    return {"mark": v.mark, "median": iv.median, "ci95": [iv.lo, iv.hi], "n": iv.n, "failed_runs": v.failed}
