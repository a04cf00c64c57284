import numpy as np


def make_args(sizes, seed):
    rng = np.random.default_rng(seed)
    n = sizes["N"]
    return [np.zeros(n, np.float32), rng.standard_normal(n).astype(np.float32), n]


def make_cmem(sizes, seed):
    rng = np.random.default_rng(100 + seed)
    return {"d_coef": rng.uniform(1, 2, 8).astype(np.float32), "d_offset": np.int32(seed + 1)}


def too_large(sizes, seed):
    return {"d_coef": np.ones(9, np.float32)}


def missing(sizes, seed):
    return {"d_coef": np.ones(8, np.float32), "d_filter": np.ones(4, np.float32)}


def reference(args, sizes, cmem=None):
    _, x, _ = args
    cmem = cmem or {"d_coef": np.ones(8, np.float32), "d_offset": np.int32(1)}
    return [cmem["d_coef"][0] * x + cmem["d_coef"][1] + np.float32(cmem["d_offset"])]


def reference_zeros(args, sizes):
    return [np.zeros_like(args[0])]
