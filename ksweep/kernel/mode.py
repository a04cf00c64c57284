"""Kernel mode as a run mode (run/modes.py): a cubin per config, built from a generated
wrapper of the user's source, launched by ksweep's own GPU worker (kernel/executor.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Mapping

from ..build import nvrtc
from ..build.digest import file_digest
from ..gpu.limits import DEFAULT_ARCH
from ..run.modes import ConfigExtras, Mode, Templates
from ..workspace import workspace
from .launch import launch_dims, wrapper_source


class KernelMode(Mode):
    name = "kernel"
    checks_metrics = False  # outputs are compared with the reference's on the GPU

    def __init__(self, backend: str = "cuda"):
        self.backend = backend  # "cuda", or a stand-in for tests

    def templates(self, spec, t: Templates) -> Templates:
        k = spec.kernel
        build = t.build
        if not build:
            arch = (spec.arch or DEFAULT_ARCH).replace("sm_", "")
            if k.compiler == "nvrtc":  # a templated kernel is instantiated by a name expression
                build = (*nvrtc.command(), f"--gpu-architecture=sm_{arch}", "--ptxas-options=-v", *k.flags,
                         "{defines}", *(("--name-expression", "&{kernel_instance}") if k.templated else ()),
                         "-o", "{binary}", "{kernel_wrapper}")
            else:
                build = ("nvcc", "-cubin", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas=-v", *k.flags,
                         "{defines}", "-o", "{binary}", "{kernel_wrapper}")
        params = t.params if k.defines else tuple(replace(p, define=False) for p in t.params)
        # templated kernels get their parameters as template arguments, not -D flags
        return replace(t, build=build, run=(), sources=(k.source, *t.sources), params=params)

    def config(self, spec, names: Mapping[str, Any]) -> ConfigExtras:
        wrapper = self._wrapper(spec, names)
        return ConfigExtras(values={"kernel_wrapper": str(wrapper), "kernel_instance": spec.kernel.instance(names)},
                            sources=(wrapper,),
                            launch=launch_dims(spec.kernel, names, spec.label))

    def key_parts(self, spec) -> dict[str, Any]:
        files = [(str(path), file_digest(path)) for path in self.input_files(spec)]
        return {"kernel": _key_fields(spec.kernel), "kernel_files": files}

    def input_files(self, spec) -> tuple[Path, ...]:
        """The argument, constant-memory and reference files ("file.py:function", or
        "npz:PATH" for arrays given to app.kernel.tune_kernel), one per reference: repeated as
        the result key has always listed them."""
        k = spec.kernel
        files = []
        for ref in (k.args, k.cmem, k.reference):
            if isinstance(ref, str) and ":" in ref:
                where = ref[4:] if ref.startswith("npz:") else ref.rsplit(":", 1)[0]
                path = (spec.root / where).resolve()
                if path.is_file():
                    files.append(path)
        return tuple(files)

    reference_key = "kernel.reference"

    def reference_config(self, spec, defaults: dict) -> dict | None:
        k = spec.kernel
        if isinstance(k.reference, dict):
            return {**defaults, **k.reference}
        return defaults if k.reference == "defaults" else None

    def needs_gpu(self, spec) -> bool:
        return True

    harden_reference = True  # a reference config's outputs are made by launching it beside the config

    def harden_program(self, spec, job, build, workdir: Path, harness: Path | None = None, reference=None,
                       checks: str = "sanitize") -> list[str] | None:
        """A fresh process (``kernel/harden_one.py``) that sets up the shape's inputs and checks
        the config's kernel: one checked launch ("sanitize", what a sanitizer runs), or the
        further inputs ("inputs"); ``reference``: (job, build) of the reference config, whose
        launches give the expected outputs where the reference is not a Python function."""
        import json
        import sys

        from .executor import setup_request, shape_sizes
        from .launch import entry_name

        def launch(j, b) -> dict | None:
            entry = entry_name([k.name for k in b.report.kernels], spec.kernel)
            if entry is None or b.binary is None:
                return None
            return {"cubin": str(b.binary), "entry": entry, "params": dict(j.params),
                    **{k: j.launch[k] for k in ("grid", "block", "smem")}}

        mine = launch(job, build)
        if mine is None:
            return None
        shape = next(s for s in spec.shape_list() if s.name == job.shape)
        request = {"setup": {**setup_request(spec.kernel, spec.root, shape_sizes(spec, shape)), "energy": None},
                   "launch": mine, "reference": launch(*reference) if reference is not None else None,
                   "checks": checks, "special": list(spec.harden.special)}
        path = workdir / f"harden-{checks}.json"
        path.write_text(json.dumps(request, default=str))
        return [sys.executable, "-m", "ksweep.kernel.harden_one", "--backend", self.backend, str(path)]

    def fingerprint_keys(self, spec) -> tuple[str, ...]:
        from ..verify.determinism import DIGEST

        return (DIGEST,)

    def host_problem(self, spec, gpu_models: set[str] | None, gpu_check: bool) -> str | None:
        if self.backend != "cuda":
            return None
        if importlib.util.find_spec("cuda") is None:
            return ("kernel mode needs cuda-python, which is not installed: pip install 'ksweep[gpu]' "
                    "(or pip install cuda-python)")
        if gpu_check and gpu_models == {"none"}:  # said without a command's option: the library's callers see it too
            return ("kernel mode runs the kernels on a GPU, but this host has no NVIDIA GPU (nvidia-smi found none): "
                    "tune on a machine with a GPU and its driver")
        return super().host_problem(spec, gpu_models, gpu_check)

    @staticmethod
    def _wrapper(spec, values: Mapping[str, Any]) -> Path:
        text = wrapper_source(spec.kernel, values)
        folder = workspace(spec) / "kernel"
        path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.cu"
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
        return path


def _key_fields(k) -> dict[str, Any]:
    """The kernel settings a result's key covers: every field, but the energy observer's window
    only when the observer is on (without it, changing the window reruns nothing)."""
    out = {f.name: getattr(k, f.name) for f in fields(k)}
    timing = {f.name: getattr(k.timing, f.name) for f in fields(k.timing)}
    if not k.observers:
        del out["observers"]
        del timing["energy_ms"]
    out["timing"] = timing
    return out
