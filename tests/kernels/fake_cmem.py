"""Stand-in 'kernels' reading module-scope variables (the fake backend's SYMBOLS, zeroed at
each load as a loaded cubin's are) and declaring static shared memory (STATIC_SMEM)."""

import numpy as np

# __constant__ float d_coef[8];  __device__ int d_offset;
SYMBOLS = {"d_coef": 8 * 4, "d_offset": 4}


def STATIC_SMEM(params):  # noqa: N802 - the name the fake backend reads
    return int(params.get("STATIC", 0))


def axpb(params, grid, block, smem, y, x, n, symbols):
    """y = d_coef[0] * x + d_coef[1] + d_offset."""
    coef = symbols["d_coef"].view(np.float32)
    offset = symbols["d_offset"].view(np.int32)[0]
    y[:] = coef[0] * x + coef[1] + offset
