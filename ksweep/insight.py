"""Why is this config fast? ``explain``, ``profile`` and ``compare``, above every layer like
``api.py``: they find a spec and its database, resolve a config (``NAME=VALUE …``, a result
id, ``best`` or ``default``), build it through the build cache, run it under Nsight Compute,
and hand what they found to the pure modules that compute and render
(``report/explain.py``, ``profile/ncu.py``, ``profile/diff.py``, ``build/sass.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from .app.wiring import cache_folder, mode_for
from .build.builder import BuildResult
from .errors import KsweepError
from .gpu.limits import limit_names
from .job import Job, config_id
from .process import run_process
from .profile import ncu as ncu_mod
from .report import explain as ex
from .build.deps import changed
from .result import Result
from .space.space import Space
from .spec.load import load_spec
from .spec.model import Spec
from .spec.names import did_you_mean
from .status import Status, Stopped
from .store import standings
from .store.sqlite import Store
from .sweep.jobs import JobFactory
from .sweep.local import default_db_path, make_builder, scratch_dir


# -- finding the spec, the database and the config ------------------------------------------
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
        recorded = store.get_meta("spec")
    source = spec_path or recorded
    if not source:
        raise KsweepError(f"{target}: the database does not name its spec: give it with --spec SPEC.toml")
    if not Path(source).exists():
        raise KsweepError(f"{target}: its spec {source} no longer exists: give it with --spec SPEC.toml")
    return Target(load_spec(source), path)


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


def _value(text: str, values: tuple) -> Any:
    """``text`` as the type of a parameter's values (``128`` -> 128, ``true`` -> True)."""
    for v in values:
        if str(v) == text or (isinstance(v, bool) and text.lower() in ("true", "false", "1", "0")):
            if isinstance(v, bool):
                return text.lower() in ("true", "1")
            return v
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


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
                   variant: str | None) -> Chosen:
    """``NAME=VALUE …`` (the rest at their defaults), a result id (``12`` or ``#12``), ``best``
    (the confirmed best, else the ranked best), ``worst`` (the slowest valid one) or
    ``default``. Without ``shape``/``variant``, the first the database holds results of."""
    words = [w for w in words if w]
    if len(words) == 1 and re.fullmatch(r"#?\d+", words[0]):
        if store is None:
            raise KsweepError(f"a result id ({words[0]}) needs a results database")
        r = store.get_by_id(int(words[0].lstrip("#")))
        if r is None:
            raise KsweepError(f"no result with id {words[0].lstrip('#')} in {store.path}")
        return Chosen(r.shape, r.variant, dict(r.params), (), r, int(words[0].lstrip("#")))
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
    given = {}
    for w in words:
        if "=" not in w:
            raise KsweepError(f"'{w}': give the config as NAME=VALUE ..., a result id, 'best' or 'default'")
        name, text = w.split("=", 1)
        match = next((p for p in params if p.name == name.strip()), None)
        if match is None:
            close = did_you_mean(name, [p.name for p in params])
            raise KsweepError(f"'{name}' is not a parameter" + (f" — did you mean '{close}'?" if close else
                              f" (parameters: {', '.join(p.name for p in params)})"))
        given[match.name] = _value(text.strip(), match.values)
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


# -- explain -------------------------------------------------------------------------------------
def explain(target: str, words: Sequence[str], *, shape: str | None = None, variant: str | None = None,
            build: bool = False, spec_path: str | None = None) -> ex.Explanation:
    t = open_target(target, spec_path)
    store = t.store()
    try:
        c = resolve_config(words, t.spec, store, shape, variant)
        profiles = store.profiles(c.variant, c.shape) if store is not None else []
        confirmation = _confirmation_of(store, c) if store is not None and c.result is not None else {}
    finally:
        if store is not None:
            store.close()
    spec = t.spec
    space = Space.from_spec(spec, c.shape, c.variant)
    checks, derived = ex.check_constraints(space, c.params)
    verdict = space.explain(c.params)
    arch, limits = ex.arch_limits(spec)
    read = set()
    for item in (*space.constraints, *space.derived):
        if getattr(item, "expr", None) is not None:
            read |= set(item.expr.names)
    limit_keys = set(limit_names(limits))
    used_limits = {n: space.fixed[n] for n in sorted(read) if n in limit_keys and n in space.fixed}
    kernels: tuple[dict, ...] = tuple(c.result.kernels) if c.result is not None and c.result.kernels else ()
    notes = []
    if c.superseded:
        notes.append("its stored result is superseded (reports leave it out): measured on another source or "
                     "spec, or not measured again yet by a --rerun all; a plain ksweep run measures it again, or "
                     "takes it back where it still stands")
    edited = changed(c.result.deps) if c.result is not None else []
    if edited:
        notes.append(f"{', '.join(Path(p).name for p in edited)} changed since its stored result was measured: "
                     f"the result is of the other version (ksweep run measures it on this one)")
    if build and verdict.ok:
        _, built, _ = build_config(spec, c.shape, c.variant, c.params, t.db)
        kernels = tuple(built.report.to_json()) or kernels
        if built.status is not Status.OK:
            notes.append(f"the build: {built.status.value}: {built.message}")
    elif not kernels and verdict.ok:
        built_before = c.result is not None and c.result.build_seconds is not None and \
            not c.result.status.build_failure
        notes.append("its build reported no CUDA kernel (no ptxas report: a host-only program?): no registers "
                     "or occupancy to show" if built_before else
                     "no build of it is stored: --build compiles it for ptxas's resources and the occupancy")
    env = {**space.fixed, **c.params, **derived}
    launch = ex.launch_of(spec, env) if verdict.ok else {}
    pattern = spec.profile.kernel or (f"^{re.escape(spec.kernel.name)}$" if spec.kernel is not None else None)
    occ = ex.kernel_occupancy(limits, kernels, launch, pattern) if kernels and limits else ()
    prof = next((p for p in reversed(profiles) if config_id(p["params"]) == config_id(c.params)), None)
    return ex.Explanation(
        label=spec.label, variant=c.variant, shape=c.shape, params=c.params, defaulted=c.defaulted,
        derived=derived, constraints=checks, pruned_by=None if verdict.ok else verdict.constraint,
        pruned_reason=None if verdict.ok else verdict.reason, arch=arch, limits=used_limits, result=c.result,
        result_id=c.result_id, kernels=kernels, occupancy=occ, launch=launch,
        profile=prof or {}, notes=tuple(notes), confirmation=confirmation, outside=space.outside_values(c.params))


def _confirmation_of(store: Store, c: Chosen) -> dict:
    """What the confirmation runs say of the chosen config: mark (BEST, TIE or none), median,
    95% interval, runs; empty when it was not confirmed (report's MEDIAN, CI95, N)."""
    conf = standings.standing(store, c.variant, c.shape).confirmation
    v = conf.verdicts.get(config_id(c.params)) if conf is not None else None
    if v is None or not v.interval.n:
        return {}
    iv = v.interval
    return {"mark": v.mark, "median": iv.median, "ci95": [iv.lo, iv.hi], "n": iv.n, "failed_runs": v.failed}


# -- profile -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profiled:
    shape: str
    variant: str
    params: dict
    label: str  # "best", "#2", "default", "given"
    ok: bool
    message: str
    launches: tuple = ()


def choose_for_profile(store: Store, spec: Spec, top: int, configs: Sequence[str], shape: str | None,
                       variant: str | None) -> list[tuple[str, str, dict, str]]:
    """(shape, variant, params, label) of the configs to profile: the ``configs`` given (each
    ``NAME=VALUE,…`` or a result id), else the top N valid ones of every shape × variant and
    the default config."""
    out = []
    groups = sorted({(r.variant, r.shape) for r in store.results()})
    for va, sh in groups:
        if (shape and sh != shape) or (variant and va != variant):
            continue
        if configs:
            for text in configs:
                c = resolve_config(text.replace(",", " ").split(), spec, store, sh, va)
                if c.shape == sh and c.variant == va:
                    out.append((sh, va, c.params, text))
            continue
        standing = standings.standing(store, va, sh)
        ranked, first = standing.ranked(), standing.best()
        picked = ([first] if first is not None else []) + [r for r in ranked if r is not first]
        seen = set()
        for i, r in enumerate(picked[:top]):
            seen.add(config_id(r.params))
            out.append((sh, va, dict(r.params), "best" if i == 0 else f"top {i + 1}"))
        try:
            d = resolve_config(["default"], spec, store, sh, va)
        except KsweepError:
            continue
        if config_id(d.params) not in seen and Space.from_spec(spec, sh, va).explain(d.params).ok:
            out.append((sh, va, d.params, "default"))
    return out


def profile(db: str, *, top: int = 3, configs: Sequence[str] = (), metrics: str | Sequence[str] | None = None,
            shape: str | None = None, variant: str | None = None, spec_path: str | None = None, gpu: int = 0,
            ncu: str | None = None, csv_dir: str | None = None, echo=print) -> list[Profiled]:
    """Profile chosen configs of a sweep's database with Nsight Compute and store the
    metrics beside their results. A failure of the profiler is one line (KsweepError) and
    leaves the database as it was. ``csv_dir``: also write each profile's CSV exports there
    (``<shape>-<variant>-<label>.raw.csv`` and ``.details.csv``, for ``compare A.csv B.csv``)."""
    t = open_target(db, spec_path)
    spec = t.spec
    tool = ncu_mod.find_ncu(ncu)
    if tool is None and ncu is not None:
        raise KsweepError(f"Nsight Compute (ncu) was not found: --ncu {ncu} is not an executable file"
                          + ("" if os.sep in ncu else " on the PATH"))
    if tool is None:
        raise KsweepError("Nsight Compute (ncu) was not found on the PATH: install it (it comes with the CUDA "
                          "toolkit) or give --ncu PATH")
    metric_set = metrics if metrics is not None else spec.profile.metrics
    set_name = metric_set if isinstance(metric_set, str) else "custom"
    with Store(t.db, create=False) as store:
        chosen = choose_for_profile(store, spec, top, configs, shape, variant)
        keys = {(r.variant, r.shape, config_id(r.params)): r.cache_key for r in store.results()}
    if not chosen:
        raise KsweepError(f"{db}: no valid result to profile")
    version = _version(tool)
    out = []
    for sh, va, params, label in chosen:
        job, built, harness = build_config(spec, sh, va, params, t.db)
        if built.status is not Status.OK:
            out.append(Profiled(sh, va, params, label, False, f"did not build: {built.message}"))
            continue
        try:
            save = None
            if csv_dir is not None:
                Path(csv_dir).mkdir(parents=True, exist_ok=True)
                save = Path(csv_dir) / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{sh}-{va}-{label}")
            launches, command = _profile_one(spec, job, built, harness, tool, metric_set, gpu, save)
        except ncu_mod.NcuError as exc:
            if not out:  # the first one fails: ncu itself cannot profile here (one line, nothing stored)
                raise KsweepError(str(exc)) from None
            out.append(Profiled(sh, va, params, label, False, str(exc)))
            continue
        with Store(t.db, create=False) as store:
            store.put_profile(va, sh, params, keys.get((va, sh, config_id(params))), set_name,
                              [p.to_json() for p in launches], tool=version, command=command)
        out.append(Profiled(sh, va, params, label, True, f"{len(launches)} launch(es)", tuple(launches)))
        echo(f"profiled {sh}/{va} {label}: " + " ".join(f"{k}={v}" for k, v in params.items()))
    return out


def _version(tool: str) -> str:
    out = run_process([tool, "--version"], cwd=tempfile.gettempdir(), timeout=60)
    lines = [line for line in out.stdout.splitlines() if "Version" in line or "version" in line]
    return lines[-1].strip() if lines else tool


def _profile_one(spec: Spec, job: Job, built: BuildResult, harness: BuildResult | None, tool: str,
                 metric_set, gpu: int, save: Path | None = None) -> tuple[list, list[str]]:
    scratch = scratch_dir(spec)
    scratch.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="profile-", dir=scratch))
    try:
        report = workdir / "profile"
        log = workdir / "ncu.log"
        env = {**job.run_env, "CUDA_VISIBLE_DEVICES": str(gpu)}
        p = spec.profile
        if spec.kernel is not None:
            program, kernel = _kernel_mode_program(spec, job, built, workdir)
        else:
            from .run.program import run_argv

            program = run_argv(job, built, workdir, harness.binary if harness is not None else None)
            kernel = p.kernel or spec.build.kernels
        argv = ncu_mod.profile_argv(tool, report, program, kernel=kernel, launch_skip=p.launch_skip,
                                    launch_count=p.launch_count, metrics=metric_set, log_file=log)
        outcome = run_process(argv, cwd=workdir, timeout=p.timeout, env=env)
        text = (log.read_text(errors="replace") if log.exists() else "") + outcome.stdout + outcome.stderr
        rep = report.with_suffix(".ncu-rep")
        if outcome.timed_out:
            raise ncu_mod.NcuError(f"the profiled run took more than {p.timeout:.0f} s ([profile] timeout)")
        if not rep.exists():
            raise ncu_mod.NcuError(ncu_mod.failure_line(text, outcome.returncode))
        imported = run_process(ncu_mod.import_argv(tool, rep), cwd=workdir, timeout=300)
        if imported.returncode != 0:
            raise ncu_mod.NcuError(ncu_mod.failure_line(imported.stdout + imported.stderr, imported.returncode))
        launches = ncu_mod.parse_csv(imported.stdout)
        if save is not None:
            Path(f"{save}.raw.csv").write_text(imported.stdout)
            details = run_process(ncu_mod.import_argv(tool, rep, page="details"), cwd=workdir, timeout=300)
            Path(f"{save}.details.csv").write_text(details.stdout)
        if not launches:
            raise ncu_mod.NcuError(ncu_mod.failure_line(text, outcome.returncode))
        return launches, [a if a != str(report) else "REPORT" for a in argv]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kernel_mode_program(spec: Spec, job: Job, built: BuildResult, workdir: Path) -> tuple[list[str], str]:
    """Kernel mode: a fresh worker (``ksweep.kernel.profile_one``) that sets up the inputs,
    launches the config's kernel once and exits; the kernel's entry name filters ncu."""
    import json

    from .kernel.executor import setup_request, shape_sizes
    from .kernel.launch import entry_name

    entry = entry_name([k.name for k in built.report.kernels], spec.kernel)
    if entry is None:
        raise ncu_mod.NcuError(f"no entry point for '{spec.kernel.name}' in the cubin")

    sh = next(s for s in spec.shape_list() if s.name == job.shape)
    request = {
        "setup": setup_request(spec.kernel, spec.root, shape_sizes(spec, sh), checked=False),
        "launch": {"cubin": str(built.binary), "entry": entry, "params": dict(job.params),
                   **{k: job.launch[k] for k in ("grid", "block", "smem")}},
    }
    path = workdir / "request.json"
    path.write_text(json.dumps(request, default=str))
    return [sys.executable, "-m", "ksweep.kernel.profile_one", str(path)], f"^{re.escape(entry)}$"


# -- compare -------------------------------------------------------------------------------------
def compare(a: str, b: str, db: str | None = None, *, shape: str | None = None, variant: str | None = None,
            spec_path: str | None = None, sass: bool = True):
    """Two ncu CSV exports (``a``, ``b``), or two configs of database ``db`` (each ``best``,
    ``default``, a result id or ``NAME=VALUE,…``)."""
    from .profile import diff

    if db is None:
        pa, pb = (_ncu_csv(x) for x in (a, b))
        pair = diff.pair_launches(pa, pb)
        if pair is None:
            raise KsweepError(f"no profiled launch in {a if not pa else b}")
        return diff.Comparison(a, b, metrics=diff.metric_rows(*pair), kernel=(pair[0].kernel, pair[1].kernel))
    t = open_target(db, spec_path)
    with Store(t.db, create=False) as store:
        ca, cb = (resolve_config(x.replace(",", " ").split(), t.spec, store, shape, variant) for x in (a, b))
        profiles = store.profiles()
        metric = store.objective().metric
        labels = {id(c): _label(c, metric, _confirmation_of(store, c)) for c in (ca, cb)}
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
            from .build.sass import disassemble

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
        sass=sass_rows, notes=tuple(notes), params=diff.mapping_rows("params", ca.params, cb.params),
        kernel=kernels)


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
