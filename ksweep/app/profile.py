"""``ksweep profile``: chosen configs of a sweep (the best of each shape × variant and the
default, or those named) built through the build cache, run under Nsight Compute
(``profile/ncu.py``: kernel mode through ``kernel/profile_one.py``, one launch in a fresh
process), and their metrics stored beside their results."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..build.builder import BuildResult
from ..errors import KsweepError
from ..job import Job, config_id
from ..process import run_process
from ..profile import ncu as ncu_mod
from ..space.space import Space
from ..spec.model import Spec
from ..status import Status
from ..store import standings
from ..store.sqlite import Store
from ..sweep.local import scratch_dir
from .target import build_config, open_target, resolve_config


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
            from ..run.program import run_argv

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

    from ..kernel.executor import setup_request, shape_sizes
    from ..kernel.launch import entry_name

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

