"""Arguments and reference of faults.cu's tile_add (kernel mode): c = a + b over N floats."""

import numpy as np


def make_args(sizes, seed):
    rng = np.random.default_rng(seed)
    n = sizes["N"]
    return [np.zeros(n, np.float32), rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32), np.int32(n)]


def reference(args, sizes):
    _, a, b, _ = args
    return [a + b]
