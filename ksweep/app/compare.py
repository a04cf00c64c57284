"""``ksweep compare``: two configs of a database side by side (their stored profiles'
metrics, their resources, derived values and parameters, the SASS instruction mix of their
builds), or two Nsight Compute CSV exports; ``profile/diff.py`` pairs the rows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from ..errors import KsweepError
from ..job import config_id
from ..profile import ncu as ncu_mod
from ..result import Result
from ..status import Status
from ..store.sqlite import Store
from .target import Chosen, build_config, confirmation_of, open_target, resolve_config


def compare(a: str, b: str, db: str | None = None, *, shape: str | None = None, variant: str | None = None,
            spec_path: str | None = None, sass: bool = True):
    """Two ncu CSV exports (``a``, ``b``), or two configs of database ``db`` (each ``best``,
    ``default``, a result id or ``NAME=VALUE,…``)."""
    from ..profile import diff

    if db is None:
        for x in (a, b):
            if _is_database(x):
                raise KsweepError(f"{x} is a {'spec' if x.endswith('.toml') else 'results database'}: compare needs "
                                  f"two of its configs after it, ksweep compare {x} A B (each 'best', 'default', "
                                  f"a result id or NAME=VALUE,NAME=VALUE), or two ncu CSV exports")
        pa, pb = (_ncu_csv(x) for x in (a, b))
        pair = diff.pair_launches(pa, pb)
        if pair is None:
            raise KsweepError(f"no profiled launch in {a if not pa else b}")
        return diff.Comparison(a, b, metrics=diff.metric_rows(*pair), kernel=(pair[0].kernel, pair[1].kernel))
    t = open_target(db, spec_path)
    with Store(t.db, create=False) as store:
        ca, cb = (resolve_config(x.replace(",", " ").split(), t.spec, store, shape, variant) for x in (a, b))
        profiles = store.profiles()
        if (ca.shape, ca.variant, config_id(ca.params)) == (cb.shape, cb.variant, config_id(cb.params)):
            raise KsweepError(_same_config(a, b, ca, store))
        objectives = [(o.metric, o.direction) for o in store.objectives()]
        metric = objectives[0][0]
        confirmations = {id(c): confirmation_of(store, c) for c in (ca, cb)}
        labels = {id(c): _label(c, metric, confirmations[id(c)]) for c in (ca, cb)}
    notes = []
    rows: tuple = ()
    kernels = ("", "")
    pa, pb = (_latest_profile(profiles, c) for c in (ca, cb))
    if pa and pb:
        pair = diff.pair_launches([ncu_mod.LaunchProfile.from_json(x) for x in pa["launches"]],
                                  [ncu_mod.LaunchProfile.from_json(x) for x in pb["launches"]])
        if pair is not None:
            rows, kernels = diff.metric_rows(*pair), (pair[0].kernel, pair[1].kernel)
    else:
        missing = [lab for lab, p in (("A", pa), ("B", pb)) if not p]
        notes.append(f"no stored profile of {' and '.join(missing)}: ksweep profile {db} --configs ... adds one")
    ra, rb = ca.result, cb.result
    pattern = t.spec.profile.kernel or t.spec.build.kernels or (
        f"^{re.escape(t.spec.kernel.name)}$" if t.spec.kernel is not None else None)
    resources = diff.resource_rows(ra.kernels if ra else (), rb.kernels if rb else (), pattern)
    sass_rows: tuple = ()
    if sass:
        try:
            from ..build.sass import disassemble

            mixes = []
            for c in (ca, cb):
                _, built, _ = build_config(t.spec, c.shape, c.variant, c.params, t.db)
                if built.status is not Status.OK or built.binary is None:
                    raise KsweepError(f"{labels[id(c)]} did not build: {built.message}")
                mixes.append(disassemble(built.binary).only(pattern))
            sass_rows = diff.sass_rows(mixes[0].classes, mixes[1].classes)
        except KsweepError as exc:
            notes.append(f"no SASS diff: {exc}")
    return diff.Comparison(
        labels[id(ca)], labels[id(cb)], metrics=rows, resources=resources,
        derived=diff.mapping_rows("derived", ra.derived if ra else {}, rb.derived if rb else {}),
        sass=sass_rows, notes=tuple(notes), params=diff.mapping_rows("params", ca.params, cb.params, knob=True),
        kernel=kernels, results=diff.result_rows(*(_measured(c.result, metric, confirmations[id(c)])
                                                   for c in (ca, cb)), objectives))


def _measured(r: Result | None, metric: str, confirmation: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics a config's run reported, its objective the confirmation's median when it
    has one (the value its label shows, and report, explain and export use)."""
    if r is None or r.status is Status.PRUNED:
        return {}
    out = dict(r.metrics)
    if confirmation.get("median") is not None:
        out[metric] = confirmation["median"]
    return out


def _is_database(path: str) -> bool:
    """A results database (SQLite's header) or a spec: what ``compare DB A B`` takes first."""
    if path.endswith(".toml"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\0"
    except OSError:
        return False


def _same_config(a: str, b: str, c: Chosen, store: Store) -> str:
    """Why two words that name one config compare nothing, and what to give instead."""
    shown = f"#{c.result_id} " if c.result_id is not None else ""
    shown += f"{c.shape}/{c.variant} " + " ".join(f"{k}={v}" for k, v in c.params.items())
    held = {config_id(r.params) for r in store.results(c.variant, c.shape) if r.status is not Status.PRUNED}
    hint = (f"; {store.path} holds one config's result of {c.shape}/{c.variant}" if len(held) == 1 else
            "; one config's NAME=VALUE pairs are joined with commas (A=1,B=2)" if "=" in a and "=" in b else "")
    return f"'{a}' and '{b}' are the same config ({shown}): compare needs two different configs{hint}"


def _ncu_csv(path: str) -> list:
    """The launches of an ncu CSV export; one line (KsweepError) for a file that is none."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise KsweepError(f"{path}: {exc.strerror or exc}") from None
    try:
        return ncu_mod.parse_csv(text)
    except ncu_mod.NcuError as exc:
        raise KsweepError(f"{path}: {exc}") from None


def _latest_profile(profiles: list[dict], c: Chosen) -> dict | None:
    cid = config_id(c.params)
    found = [p for p in profiles if p["variant"] == c.variant and p["shape"] == c.shape
             and config_id(p["params"]) == cid]
    return found[-1] if found else None


def _label(c: Chosen, metric: str, confirmation: Mapping[str, Any]) -> str:
    """``#12 shape/variant NAME=VALUE …  [what its result says]``: a failed or pruned config's
    status, a confirmed one's median (``_confirmation_of``: the value report, explain and
    export use), else its single run."""
    rid = f"#{c.result_id} " if c.result_id is not None else ""
    return f"{rid}{c.shape}/{c.variant} " + " ".join(f"{k}={v}" for k, v in c.params.items()) + \
        f"  [{_result_note(c.result, metric, confirmation)}]"


def _result_note(r: Result | None, metric: str, confirmation: Mapping[str, Any]) -> str:
    if r is None:
        return "no stored result"
    if r.status is Status.PRUNED:
        return "PRUNED: never built or run" + (f" ({r.message})" if r.message else "")
    value = r.metrics.get(metric)
    shown = f"{metric}={value:.4g}" if isinstance(value, (int, float)) else ""
    if r.status is not Status.OK:
        return r.status.value + (f": {shown}, not ranked" if shown else "")
    if confirmation:
        mark = f", {confirmation['mark']}" if confirmation.get("mark") else ""
        failed = f", {confirmation['failed_runs']} failed" if confirmation.get("failed_runs") else ""
        return (f"{metric}={confirmation['median']:.4g}: median of {confirmation['n']} confirmation "
                f"run{'s' * (confirmation['n'] != 1)}{failed}{mark}")
    return f"{shown}: a single run" if shown else f"OK, no {metric}"
