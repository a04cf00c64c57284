"""GPU checks of cmem, the shared-memory opt-in and ksweep.kt.tune_kernel (real CUDA backend).

    python tests/gpu/kt_compat_check.py      # on a machine with a GPU, nvcc and cuda-python

Prints one line per check and exits 1 if any fails."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

SOURCE = r'''
__constant__ float d_coef[8];
__device__ int d_offset;
#ifndef block_size_x
#define block_size_x 128
#endif
#ifndef STATIC_KB
#define STATIC_KB 0
#endif
extern "C" __global__ void axpb(float *y, const float *x, int n) {
#if STATIC_KB > 0
    __shared__ float pad[STATIC_KB * 256];
    pad[threadIdx.x] = x[0];
    __syncthreads();
#endif
    extern __shared__ float dyn[];
    int i = blockIdx.x * block_size_x + threadIdx.x;
    dyn[threadIdx.x] = 0.0f;
    if (i < n) y[i] = d_coef[0] * x[i] + d_coef[1] + d_offset + dyn[threadIdx.x]
#if STATIC_KB > 0
        + 0.0f * pad[threadIdx.x]
#endif
        ;
}
'''


TEMPLATED = r'''
template <int tile>  // not TILE: as with Kernel Tuner's #defines, -DTILE=2 would rewrite the template's own name
__global__ void vscale(float *y, const float *x, int n) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * tile;
    for (int t = 0; t < tile; ++t)
        if (base + t < n) y[base + t] = 3.0f * x[base + t];
}
'''


def main() -> int:
    from ksweep.kt import tune_kernel

    failures = 0
    n = 1 << 20
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    coef = np.array([2.0, 3.0, 0, 0, 0, 0, 0, 0], np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "axpb.cu"
        src.write_text(SOURCE)

        def run(label, expect_ok, **kw):
            nonlocal failures
            results, env = tune_kernel("axpb", str(src), n, [np.zeros(n, np.float32), x, np.int32(n)],
                                       {"block_size_x": [128, 256], **kw.pop("params", {})},
                                       answer=[2 * x + 3 + 5, None, None], atol=1e-4, quiet=True, **kw)
            ok = [r for r in results if "time" in r]
            good = bool(ok) if expect_ok else not ok
            failures += not good
            errors = sorted({str(r.get("__error__")) for r in results if "__error__" in r})
            print(f"{'PASS' if good else 'FAIL'} {label}: {len(ok)}/{len(results)} timed, errors {errors}, "
                  f"device {env.get('device_name')}")
            return results, env

        # the kernel writes dyn[threadIdx.x]: every launch gives it 4 KB of dynamic shared memory
        # at least (without any, that write is out of bounds and the config fails for that)
        small = {"size": 4096}
        run("cmem fills __constant__ and __device__", True, smem_args=small,
            cmem_args={"d_coef": coef, "d_offset": np.int32(5)})
        run("without cmem the check fails", False, smem_args=small)
        run("a missing symbol is a failed config", False, smem_args=small,
            cmem_args={"d_coef": coef, "d_offset": np.int32(5), "d_nope": coef})
        run("40 KB static + 16 KB dynamic runs (opt-in)", True, params={"STATIC_KB": [40]},
            smem_args={"size": 16 * 1024}, cmem_args={"d_coef": coef, "d_offset": np.int32(5)})
        run("0 KB static + 200 KB dynamic runs (opt-in)", True, smem_args={"size": 200 * 1024},
            cmem_args={"d_coef": coef, "d_offset": np.int32(5)})
        run("40 KB static + 200 KB dynamic is refused by the GPU", False, params={"STATIC_KB": [40]},
            smem_args={"size": 200 * 1024}, cmem_args={"d_coef": coef, "d_offset": np.int32(5)})

        def check(label, good, detail=""):
            nonlocal failures
            failures += not good
            print(f"{'PASS' if good else 'FAIL'} {label}{': ' + detail if detail else ''}")

        # Kernel Tuner's ways of calling, as a migrating script writes them
        results, _ = run("a string metric is computed from time", True, smem_args=small,
                         cmem_args={"d_coef": coef, "d_offset": np.int32(5)}, metrics={"us": "time * 1000"})
        check("  its value", all(abs(r["us"] - 1000 * r["time"]) <= 1e-9 * r["us"] for r in results if "time" in r))
        results, _ = tune_kernel("axpb", str(src), n, [np.zeros(n, np.float32), x, np.int32(n)],
                                 {"block_size_x": [128, 256]}, answer=[None, None, None], smem_args=small,
                                 cmem_args={"d_coef": coef, "d_offset": np.int32(5)}, quiet=True)
        check("answer of Nones checks nothing", len(results) == 2 and all("time" in r for r in results),
              str([r.get("__error__") for r in results]))
        tsrc = Path(tmp) / "vscale.cu"
        tsrc.write_text(TEMPLATED)
        results, env = tune_kernel("vscale<TILE>", str(tsrc), n, [np.zeros(n, np.float32), x, np.int32(n)],
                                   {"block_size_x": [128, 256], "TILE": [1, 2, 4]}, grid_div_x=["block_size_x", "TILE"],
                                   answer=[3 * x, None, None], atol=1e-5, quiet=True)
        check("a templated kernel name is instantiated per config",
              len(results) == 6 and all("time" in r for r in results), str([r.get("__error__") for r in results]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
