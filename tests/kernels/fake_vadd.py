"""Stand-in 'kernels' for the fake backend: vadd done with numpy, with planted failures
chosen by the config: BLOCK=32 faults (poisons the context), BLOCK=64 hangs, BLOCK=512
writes a wrong answer, BLOCK=1024 leaves half the output unwritten."""

import time

from ksweep.kernel.backend import FakeFault


def vadd(params, grid, block, smem, c, a, b, n):
    bs = params.get("BLOCK")
    if bs == 32:
        raise FakeFault("CUDA_ERROR_ILLEGAL_ADDRESS")
    if bs == 64:
        time.sleep(3600)
    if bs == 512:
        c[:] = a - b
        return
    if bs == 1024:
        c[: n // 2] = (a + b)[: n // 2]
        return
    c[:] = a + b
    time.sleep(1e-4 * (256 / bs))  # larger blocks are "faster"
