"""Why do Kernel Tuner and ksweep rank pnpoly.cu's configs differently? One binary per
compiler path, all timed by one timer in one process.

The pnpoly comparison (bench/kt_examples_vs_kerneltuner.py) found each tool picking the
same config every round, but not the other's, with Kernel Tuner's per-config times 0.90 to
1.49 times ksweep's. Either the two tools time alike but run different binaries (their
NVRTCs or options differ), or they run the same binaries and time them differently. This
script tells the two apart: for a few configs it builds the kernel

- ``ksweep``: as ``ksweep.kt.tune_kernel(compiler="nvrtc")`` does (cuda-bindings' NVRTC, a
  cubin for sm_90a, the tunables as -D options);
- ``ksweep-lang-cupy``: as ``ksweep.kt.tune_kernel(lang="cupy")`` does (the same, with the
  options Kernel Tuner's CuPy backend compiles with: ``--std=c++11 -ftz=true``);
- ``kt-cupy``: as Kernel Tuner's cupy backend does (``cupy.RawModule`` with ``--std=c++11``,
  the tunables as #define lines; CuPy's own NVRTC);
- ``kt-nvcuda``: as Kernel Tuner's nvcuda backend does (cuda-bindings' NVRTC, PTX for
  compute_90 with ``--std=c++11``, loaded by the driver's JIT);

and times every binary with the same CUDA-event loop (CuPy launches, the same inputs and
constant memory), two ways: back to back (ksweep's loop, no L2 flush here) and with a
synchronisation before each launch (Kernel Tuner's loop). The versions of both NVRTCs, each
binary's registers and a hash of its SASS are printed.

    python3 bench/pnpoly_compilers.py --kt-examples DIR [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CONFIGS = [  # block_size_x, tile_size, between_method, use_precomputed_slopes, use_method
    (256, 8, 0, 1, 1), (256, 8, 0, 0, 1), (128, 8, 0, 1, 1), (128, 8, 0, 0, 1),
    (256, 20, 0, 1, 0), (256, 8, 1, 1, 1), (128, 20, 1, 0, 0),
]
NAMES = ("block_size_x", "tile_size", "between_method", "use_precomputed_slopes", "use_method")


def defines(cfg, n) -> dict:
    d = dict(zip(NAMES, cfg))
    bx, tile = d["block_size_x"], d["tile_size"]
    d.update(block_size_y=1, block_size_z=1, grid_size_x=-(-n // (bx * tile)), grid_size_y=1, grid_size_z=1,
             kernel_tuner=1)
    return d


def sass_hash(image: bytes, suffix: str) -> tuple[str, int]:
    """(a hash of the SASS without addresses, its instruction count) via cuobjdump, when it
    can disassemble the image (a cubin)."""
    with tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as f:
        f.write(image)
    try:
        out = subprocess.run(["cuobjdump", "-sass", f.name], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "n/a", 0
    finally:
        os.unlink(f.name)
    lines = [re.sub(r"/\*[0-9a-f]{4,}\*/", "", ln).strip() for ln in out.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12], len(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--kt-examples", type=Path, required=True)
    p.add_argument("--out", type=Path)
    p.add_argument("--reps", type=int, default=25)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()

    import cupy as cp
    from cuda.bindings import nvrtc

    from kt_examples_vs_kerneltuner import pnpoly_data
    from ksweep.build.nvrtc import compile_program
    from ksweep.kt import lang_build

    src_path = a.kt_examples / "pnpoly.cu"
    source = src_path.read_bytes()
    data = pnpoly_data()
    n = int(data["n"])
    facts = {"cupy": cp.__version__, "cupy_nvrtc": list(cp.cuda.nvrtc.getVersion()),
             "bindings_nvrtc": list(nvrtc.nvrtcVersion()[1:]), "driver": cp.cuda.runtime.driverGetVersion(),
             "runtime_cupy": cp.cuda.runtime.runtimeGetVersion()}
    print("versions:", json.dumps(facts), flush=True)

    points = cp.asarray(data["points"])
    bitmap = cp.zeros(n, cp.int32)
    answer = data["answer"]
    work = Path(tempfile.mkdtemp())
    binaries = {}  # (cfg, variant) -> (cupy function, facts)
    for cfg in CONFIGS:
        d = defines(cfg, n)
        dopts = [f"-D{k}={v}" for k, v in d.items()]
        header = "".join(f"#define {k} {v}\n" for k, v in d.items()).encode()
        variants = {}
        cubin, log = compile_program(source, str(src_path), ["--gpu-architecture=sm_90a", *dopts], ["cn_pnpoly"])
        assert cubin, log
        variants["ksweep"] = (cubin, ".cubin")
        _, flags = lang_build("cupy", None, [])
        cubin, log = compile_program(source, str(src_path), ["--gpu-architecture=sm_90a", *flags, *dopts],
                                     ["cn_pnpoly"])
        assert cubin, log
        variants["ksweep-lang-cupy"] = (cubin, ".cubin")
        ptx, log = compile_program(header + source, "CUDAProgram", ["--std=c++11", "--gpu-architecture=compute_90"],
                                   ["cn_pnpoly"], ptx=True)
        assert ptx, log
        variants["kt-nvcuda"] = (ptx, ".ptx")
        for name, (image, suffix) in variants.items():
            path = work / f"{'_'.join(map(str, cfg))}_{name}{suffix}"
            path.write_bytes(image.rstrip(b"\0 ") + (b"\0" if suffix == ".ptx" else b""))
            mod = cp.RawModule(path=str(path))
            mangled = re.search(rb"_Z9cn_pnpoly\w*", image).group().decode()
            binaries[cfg, name] = (mod, mod.get_function(mangled), sass_hash(image, suffix) if suffix == ".cubin"
                                   else ("jit", 0))
        mod = cp.RawModule(code=(header + source).decode(), options=("--std=c++11",), name_expressions=["cn_pnpoly"])
        fn = mod.get_function("cn_pnpoly")
        binaries[cfg, "kt-cupy"] = (mod, fn, ("cupy", 0))

    for (cfg, name), (mod, fn, _) in binaries.items():
        for sym, arr in (("d_vertices", data["vertices"]), ("d_slopes", data["slopes"])):
            ptr = mod.get_global(sym)
            cp.ndarray(arr.shape, arr.dtype, ptr)[:] = cp.asarray(arr)

    dims = {cfg: ((d["grid_size_x"], 1, 1), (d["block_size_x"], 1, 1)) for cfg in CONFIGS for d in [defines(cfg, n)]}
    kernel_args = (bitmap, points, np.int32(n))

    def launch(cfg, fn):  # nothing computed between an event's record and the launch it times
        fn(*dims[cfg], kernel_args)

    rows = {}
    start, end = cp.cuda.Event(), cp.cuda.Event()
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(a.reps)]
    for r in range(a.rounds):
        keys = list(binaries) if r % 2 == 0 else list(reversed(list(binaries)))
        for key in keys:
            cfg, name = key
            fn = binaries[key][1]
            bitmap.fill(-1)
            launch(cfg, fn)
            ok = bool((cp.asnumpy(bitmap) == answer).all())
            for _ in range(3):
                launch(cfg, fn)
            for s, e in events:  # back to back
                s.record()
                launch(cfg, fn)
                e.record()
            cp.cuda.runtime.deviceSynchronize()
            b2b = [cp.cuda.get_elapsed_time(s, e) for s, e in events]
            synced = []
            for _ in range(7):  # Kernel Tuner's loop: synchronise, time one launch
                cp.cuda.runtime.deviceSynchronize()
                start.record()
                launch(cfg, fn)
                end.record()
                end.synchronize()
                synced.append(cp.cuda.get_elapsed_time(start, end))
            row = rows.setdefault(key, {"ok": True, "b2b": [], "synced": []})
            row["ok"] &= ok
            row["b2b"].append(float(np.median(b2b)))
            row["synced"].append(float(np.median(synced)))

    lines = ["| config (bx tile between slopes method) | build | regs | SASS | correct | back to back ms | "
             "synced ms |", "|---|---|---|---|---|---|---|"]
    for (cfg, name), (mod, fn, (h, count)) in binaries.items():
        row = rows[cfg, name]
        lines.append(f"| {' '.join(map(str, cfg))} | {name} | {fn.num_regs} | {h} ({count}) | {row['ok']} | "
                     f"{min(row['b2b']):.3f}–{max(row['b2b']):.3f} | {min(row['synced']):.3f}–{max(row['synced']):.3f} |")
    print("\n".join(lines))
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "pnpoly_compilers.md").write_text("versions: " + json.dumps(facts) + "\n\n" + "\n".join(lines) + "\n")
        (a.out / "pnpoly_compilers.json").write_text(json.dumps(
            {"versions": facts, "rows": {f"{' '.join(map(str, c))} {v}": r for (c, v), r in rows.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
