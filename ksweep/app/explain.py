"""``ksweep explain``: why a config is valid or pruned, its derived values, its constraints
with their margins, the limits it reads, its resources and occupancy (a build's ptxas
report) and what its stored result and profile say; computed and rendered by
``report/explain.py``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from ..build.deps import changed
from ..job import config_id
from ..report import explain as ex
from ..space.space import Space
from ..gpu.limits import limit_names
from ..status import Status
from .target import build_config, confirmation_of, open_target, resolve_config


def explain(target: str, words: Sequence[str], *, shape: str | None = None, variant: str | None = None,
            build: bool = False, spec_path: str | None = None) -> ex.Explanation:
    t = open_target(target, spec_path)
    store = t.store()
    try:
        c = resolve_config(words, t.spec, store, shape, variant, outside=True)  # shown NOT IN THE SPACE
        profiles = store.profiles(c.variant, c.shape) if store is not None else []
        confirmation = confirmation_of(store, c) if store is not None and c.result is not None else {}
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

