"""Stand-in 'kernels' for the fake backend: vadd done with numpy, with planted failures
chosen by the config: BLOCK=32 faults (poisons the context), BLOCK=64 hangs, BLOCK=512
writes a wrong answer, BLOCK=1024 leaves half the output unwritten; and planted cheats
(CHEAT=1: the right answer for the first input draw only, then that answer again;
CHEAT=2: right, but writes into an input; CHEAT=3: right for two launches, then wrong)."""

import time

from ksweep.kernel.backend import FakeFault


_MEMO: dict = {}  # what a cheating "kernel" remembers between launches (the worker process keeps it)
_LAUNCHES: dict = {}


def vadd(params, grid, block, smem, c, a, b, n):
    bs = params.get("BLOCK")
    cheat = params.get("CHEAT")
    if cheat:  # planted cheats: right for the first input draw only; writes an input; wrong after a few launches
        key = (cheat, bs)
        _LAUNCHES[key] = _LAUNCHES.get(key, 0) + 1
        if cheat == 1:
            if key in _MEMO:
                c[:] = _MEMO[key]
                return
            c[:] = a + b
            _MEMO[key] = c.copy()
            return
        if cheat == 2:
            c[:] = a + b
            a[:1] = 0.0
            return
        if cheat == 3:
            c[:] = a + b if _LAUNCHES[key] <= 2 else a + b + 1.0
            return
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
