"""Arguments and reference of matmul_kernel: fresh random A, B for every seed."""

import numpy as np


def make_args(sizes, seed):
    n = sizes["WIDTH"]
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    return [np.zeros((n, n), np.float32), a, b]


def reference(args, sizes):
    _, a, b = args
    return [a @ b]
