"""``ksweep report``: a results database read for its reports (the standings, the parameter
order, the objectives, the stored profiles, the superseded results), and the names a report
is asked for checked against it. ``ksweep run``'s final table, ``export``, ``history`` and
``plot`` read through here too."""

from __future__ import annotations

from typing import Iterable

from ..errors import KsweepError
from ..job import config_id
from ..result import Result
from ..spec.names import did_you_mean
from ..spec.objectives import parse_objectives, resolve
from ..store import standings as standings_of
from ..store.sqlite import Store


def objectives_option(text: str):
    """``--objectives time,energy`` as objectives; one line naming the option when it is not
    (``ksweep report`` and ``ksweep run`` take it)."""
    try:
        return parse_objectives(w.strip() for w in text.split(","))
    except ValueError as exc:
        raise KsweepError(f"--objectives {text}: {exc}") from None


def objectives_of(text: str, results: Iterable[Result]):
    """``report --objectives``: the objectives in kernel mode's names (time: ms, …) unless the
    results have a metric of that name."""
    try:
        return resolve(objectives_option(text), True, {m for r in results for m in r.metrics})
    except ValueError as exc:
        raise KsweepError(f"--objectives {text}: {exc}") from None


def check_names(store: Store, shape=None, variant=None) -> None:
    """--shape and --variant must name one the database has (a typo would print nothing)."""
    for what, name in (("shape", shape), ("variant", variant)):
        if name is None:
            continue
        known = store.names(what)
        if known and name not in known:
            close = did_you_mean(name, known)
            raise KsweepError(f"--{what} {name}: no such {what} in {store.path}"
                              + (f" — did you mean {close}?" if close else f" ({what}s: {', '.join(known[:12])})"))


def load_all(db: str, shape=None, variant=None, profiles: list | None = None, superseded: list | None = None):
    """The standings (results, objective, what the confirmation runs say: store/standings.py),
    the parameter order and the objectives (and, into ``profiles`` when given, the stored
    Nsight Compute profiles; into ``superseded``, the superseded results), read in one
    transaction: a sweep marking results meanwhile cannot show one twice."""
    with Store(db, create=False) as store, store.snapshot():
        return _load(store, shape, variant, profiles, superseded)


def _load(store: Store, shape, variant, profiles: list | None, superseded: list | None):
    check_names(store, shape, variant)
    standings = standings_of.read(store, variant, shape)
    if superseded is not None:
        superseded.extend(store.superseded_results(variant, shape))
    if profiles is not None:
        profiles.extend(store.profiles(variant, shape))
    return standings, store.param_orders(), store.objectives()


def keys_of(results: Iterable[Result]) -> set[tuple[str, str, str]]:
    """(variant, shape, config id) of each result: which rows a CSV or JSON marks."""
    return {(r.variant, r.shape, config_id(r.params)) for r in results}
