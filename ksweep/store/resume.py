"""Which stored results stand for a sweep's experiment: resume, superseding, ``--rerun`` marks,
the configs a cut-short ``--rerun all`` did not reach, GPU models known only later, and the
pruned configs. The sweep asks; this module decides and writes the marks.

A stored result stands when it was measured under the result key the config has now (the
same sources, build, run and check: ``sweep/jobs.py``), its dependencies are unchanged, and
its GPU model is one this run uses. Results measured on another source or spec are marked
superseded: readers leave them out (``Store.results``), the history keeps them, and a
config measured again loses the mark. Which confirmation rounds are owed is ``owed.py``'s;
which standing result is best, ``standings.py``'s.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..build import deps as depfiles
from ..errors import SpecError
from ..job import config_id
from ..result import Result
from ..status import Status
from ..strategies.base import space_size


@dataclass
class Stand:
    """One shape × variant's stored results as a sweep starts it."""

    standing: dict[str, Result] = field(default_factory=dict)  # config id -> a result of this experiment
    # (config id, GPU model, outdated) of results whose GPU model the executor did not name
    # before the run (a Dask cluster's): judged once its runs show the models (``judge_later``)
    later: list[tuple[str, str, bool]] = field(default_factory=list)


def stand(store, variant: str, shape: str, space, key_of: Callable[[dict], str | None],
          gpu_models: set[str] | None) -> Stand:
    """The stored results of (variant, shape) that stand for this experiment (``key_of``: a
    config's result key now, None when it cannot be made). Of the others, those measured on
    another source or spec are marked superseded and those that stand again lose the mark;
    another GPU model's are not judged (their compiler may be another host's)."""
    stale: list[str] = []
    current: list[str] = []
    found = Stand()
    checked: dict[tuple, bool] = {}
    for old in store.evaluated(variant, shape):
        config = dict(old.params)
        cid = config_id(config)
        if old.gpu_name is not None and gpu_models is not None and old.gpu_name not in gpu_models:
            continue
        unknown = gpu_models is None and old.gpu_name not in (None, "none")
        if set(config) != set(space.names):  # another parameter set: not a config of this spec
            stale.append(cid)
            continue
        if config not in space and within_lists(space, config):
            # a constraint prunes it now (added, or changed): the spec says it is invalid, and
            # a report must not rank it (record_pruned stores it as PRUNED when it can)
            stale.append(cid)
            continue
        key = key_of(config)  # a config outside a narrowed space is judged too: its key does not depend on it
        if key is None:
            continue
        deps = tuple(map(tuple, old.deps))
        if deps not in checked:
            checked[deps] = depfiles.unchanged(deps)
        outdated = old.cache_key != key or not checked[deps]
        if unknown:  # a Dask cluster's models are known once it has run: judged then
            found.later.append((cid, old.gpu_name, outdated))
        elif outdated:
            stale.append(cid)
        else:
            current.append(cid)
        if outdated:
            continue
        found.standing[cid] = old  # of this experiment: judged again with it, asked for or not
    store.supersede(variant, shape, stale, current)
    return found


def reused(result: Result, space, rerun: str | None) -> bool:
    """Whether a standing result stands in for its config's evaluation in this sweep: a
    config of the space, not asked to be rerun (``--rerun failed``: a failure is)."""
    return dict(result.params) in space and rerun != "all" and (rerun != "failed" or result.status is Status.OK)


def mark_for_rerun(store, variant: str, shape: str, marked: list[str]) -> None:
    """``--rerun all``: the standing results it will measure again stand for nothing until then
    (a reader sees the sweep's new results only, not the old BEST beside them)."""
    store.supersede(variant, shape, marked, [])


def unmark_unreached(store, variant: str, shape: str, marked: list[str]) -> list[str]:
    """A --rerun all that ended before it measured every config again (--max-evals,
    --time-limit, --patience, Ctrl-C, a narrowed space): the configs it did not reach keep
    their stored results, of this experiment as they are, as a plain run would resume them
    (hidden, they left ``export`` and ``check`` a subset to rank). Those it measured lost
    the mark when stored; only a sweep killed outright leaves the others marked, until the
    next run judges them again (``stand``). Returns the configs that stand again."""
    if not marked:
        return []
    still = {cid for _, _, cid in store.superseded(variant, shape)}
    back = [cid for cid in marked if cid in still]
    store.supersede(variant, shape, [], back)
    return back


def judge_later(store, variant: str, shape: str, later: list[tuple[str, str, bool]], ran: list[Result]) -> None:
    """The results of GPU models an executor did not name before the sweep (a Dask
    cluster's): judged now, for the models this target's runs (``ran``) went to. Another
    model's results are not judged (those a --rerun all marked stood again when its search
    ended: ``unmark_unreached``)."""
    seen, again = {r.gpu_name for r in ran}, {config_id(r.params) for r in ran}
    mine = [(cid, stale) for cid, gpu, stale in later if gpu in seen and cid not in again]
    if mine:
        store.supersede(variant, shape, [c for c, s in mine if s], [c for c, s in mine if not s])


def record_pruned(store, space, variant: str, shape: str) -> int:
    """Store every pruned config with its reason (a result measured before a constraint
    pruned it is replaced: the history keeps it), and supersede the PRUNED rows of configs
    that are valid now (a constraint removed or changed). Returns how many configs the
    constraints prune (0 when none was stored and the space prunes nothing)."""
    names = space.names
    rows = []
    valid_again = [config_id(r.params) for r in store.results(variant, shape, superseded=True)
                   if r.status is Status.PRUNED and set(r.params) == set(names) and dict(r.params) in space]
    still_pruned = []  # stored PRUNED rows that stand (again, if a constraint came back)
    for values in itertools.product(*(p.values for p in space.params)):
        config = dict(zip(names, values))
        if config in space:
            continue
        stored = store.get(variant, shape, config_id(config))
        if stored is not None and stored.status is Status.PRUNED:
            still_pruned.append(config_id(config))
            continue
        try:
            verdict = space.explain(config)
            derived = space.derive_known(config)
        except SpecError as exc:
            derived = {}
            message = str(exc)
        else:
            message = f"{verdict.constraint}: {verdict.reason}"
        rows.append(Result(variant=variant, shape=shape, params=config, derived=derived,
                           status=Status.PRUNED, message=message, finished=time.time()))
    if rows:
        store.put_many(rows)
    store.supersede(variant, shape, valid_again, still_pruned)
    size = space_size(space)
    return space.raw_size - size if rows or space.raw_size > size else 0


def within_lists(space, config: Mapping) -> bool:
    """Whether each of ``config``'s values is among its parameter's values (else the space
    was narrowed, and the config is judged by its key, not by the constraints)."""
    return all(config.get(p.name) in p.values for p in space.params)
