"""Arguments and reference of matmul_kernel: fresh random A, B for every seed."""

import numpy as np


def make_args(sizes, seed):
    n = sizes["WIDTH"]
    rng = np.random.default_rng(seed)
    a = rng.random((n, n), dtype=np.float32) * 2 - 1  # uniform in [-1, 1), drawn as float32
    b = rng.random((n, n), dtype=np.float32) * 2 - 1  # uniform in [-1, 1), drawn as float32
    return [np.zeros((n, n), np.float32), a, b]


def reference(args, sizes):
    _, a, b = args
    return [a @ b]
