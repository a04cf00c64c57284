"""``ksweep harden DB``: the hardening a sweep runs before naming BEST (sweep/hardening.py), on a
stored sweep: each shape × variant's leaders (the confirmed configs, else the best few)
built through the build cache, run under compute-sanitizer's tools (and checked on further
inputs where the mode has them), their outputs' determinism read from the stored runs; every
verdict stored beside their results, a config found unsafe marked so (never BEST, never
exported)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from ..errors import KsweepError
from ..job import config_id
from ..process import ProcessRegistry
from ..run import sanitize
from ..run.base import Here
from ..status import Status
from ..store.sqlite import Store
from ..sweep.hardening import (Hardened, determinism, each_at_once, harden_config, leaders, record, report_name,
                               shares, sized_for_tools, tool_timeout)
from ..sweep.local import scratch_dir
from .target import build_config, open_target
from .wiring import mode_for


@dataclass(frozen=True)
class HardenedConfig:
    shape: str
    variant: str
    params: dict
    verdict: str  # clean, unsafe, incomplete; failed (the further inputs); skipped
    message: str
    status: Status | None = None  # its new status (UNSAFE, CHECKSUM_MISMATCH), None when it kept its own


def harden(db: str, *, spec_path: str | None = None, shape: str | None = None, variant: str | None = None,
           gpu: int = 0, sanitizer: str | None = None, tools: Sequence[str] | None = None,
           output: str | None = None, kernel_backend: str = "cuda", echo=print) -> list[HardenedConfig]:
    """Harden the leaders of a stored sweep; one line (KsweepError) when compute-sanitizer is
    missing. ``tools``: those of compute-sanitizer's tools (default: the spec's ``[harden] tools``);
    ``output``: a folder where each tool's report of each config is written; ``kernel_backend``:
    kernel mode's GPU backend (run_sweep's)."""
    t = open_target(db, spec_path)
    spec = t.spec
    if tools:
        spec = replace(spec, harden=replace(spec.harden, tools=tuple(tools)))
    exe = sanitize.find(sanitizer)
    if exe is None:
        raise KsweepError(f"--sanitizer {sanitizer}: not an executable file" if sanitizer else sanitize.HINT)
    if t.db is None or not t.db.exists():
        raise KsweepError(f"{db}: no results database to harden: sweep first")
    if output:
        try:
            Path(output).mkdir(parents=True, exist_ok=True)
            probe = Path(output) / ".ksweep-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise KsweepError(f"--output {output}: the tools' reports cannot be written there ({exc.strerror or exc})")
    mode = mode_for(spec, kernel_backend)
    here = Here(gpu, ProcessRegistry(), scratch_dir(spec))  # Ctrl-C kills the tools' runs
    with Store(t.db, create=False) as store:
        groups = sorted({(r.variant, r.shape) for r in store.results()})
        defaults = store.default_configs()
        objective = store.objective()
    out: list[HardenedConfig] = []
    for va, sh in groups:
        if (shape and sh != shape) or (variant and va != variant):
            continue
        with Store(t.db, create=False) as store:
            results = {config_id(r.params): r for r in store.results(variant=va, shape=sh)}
            measurements = store.measurements(va, sh)
            chosen = leaders(results, measurements, objective, defaults)
            for h in determinism(results, measurements, mode.fingerprint_keys(spec), chosen):
                store.put_hardening(h)
        # each leader built (one after another), then hardened together as a sweep does: [harden]
        # jobs sanitizer runs at once on this GPU, a leader's tools together, leaders in turn
        ready: list[HardenedConfig | tuple] = []
        for cid in chosen:
            result = results[cid]
            params = dict(result.params)
            job, built, harness = build_config(spec, sh, va, params, t.db)
            if job.cache_key != result.cache_key:
                ready.append(HardenedConfig(sh, va, params, "skipped", "its stored result was measured on another "
                                            "source or spec: sweep again first"))
                continue
            if built.status is not Status.OK:
                ready.append(HardenedConfig(sh, va, params, "skipped", f"did not build: {built.message}"))
                continue
            reference = None
            if mode.harden_reference:
                ref = mode.reference_config(spec, {p.name: p.default for p in spec.effective_params(
                    spec.shape(sh), spec.variant(va))})
                if ref is not None:
                    ref_job, ref_built, _ = build_config(spec, sh, va, dict(ref), t.db)
                    reference = (ref_job, ref_built) if ref_built.status is Status.OK else None

            def build(at_spec, at_shape, _space, params=params):
                at_job, at_built, _ = build_config(at_spec, at_shape.name, va, params, t.db)
                return (at_job, at_built) if at_built.status is Status.OK else None

            small = sized_for_tools(spec, mode, sh, va, params, build)
            ready.append((result, params, job, built, harness.binary if harness is not None else None, reference,
                          small))
        per_config, together = shares(spec, len(spec.harden.tools) or 1, 1)

        def harden_one(item):
            result, _params, job, built, harness, reference, small = item
            return harden_config(spec, mode, job, built, here, exe=exe, tools=spec.harden.tools,
                                 timeout=tool_timeout(spec, result), reference=reference, harness=harness,
                                 jobs=per_config, output=Path(output) if output else None, at=small)

        # in batches of the leaders hardened at once, each stored (and said) before the next
        # starts: a Ctrl-C or a failure keeps the verdicts of the batches before; each verdict
        # takes its leader's place in ``ready``
        todo = [i for i, item in enumerate(ready) if not isinstance(item, HardenedConfig)]
        if todo:  # said first: a sanitizer's runs take minutes
            echo(f"{sh}/{va}: hardening {len(todo)} leader(s) ({', '.join(spec.harden.tools) or 'no sanitizer'}"
                 f"{', the further inputs' if mode.harden_reference else ''}), {min(together, len(todo))} at once")
        for start in range(0, len(todo), together):
            batch = todo[start:start + together]
            said = each_at_once(harden_one, [ready[i] for i in batch], together, here)
            with Store(t.db, create=False) as store:
                for i, hardened in zip(batch, said):
                    result, params, job = ready[i][:3]
                    status = record(store, result, hardened)
                    ready[i] = done = _said(sh, va, params, hardened, status)
                    echo(f"{sh}/{va} " + " ".join(f"{k}={v}" for k, v in params.items())
                         + f": {done.verdict}: {done.message}")
                    if output and hardened.tools is not None and hardened.tools.tools:
                        echo(f"  the tools' reports: {Path(output) / report_name(job, '*')}")
        out.extend(ready)
    return out


def _said(shape: str, variant: str, params: dict, hardened: Hardened, status: Status | None) -> HardenedConfig:
    tools, inputs = hardened.tools, hardened.inputs
    if status is Status.UNSAFE:
        return HardenedConfig(shape, variant, params, "unsafe", tools.message, status)
    if status is not None:
        return HardenedConfig(shape, variant, params, "failed", inputs[2], status)
    if tools is not None and tools.verdict != "clean":
        return HardenedConfig(shape, variant, params, tools.verdict, tools.message)
    message = tools.message if tools is not None else "no sanitizer ran"
    if inputs is not None:
        message += f"; further inputs {inputs[2]}"
    return HardenedConfig(shape, variant, params, "clean" if tools is not None else "incomplete", message)
