"""Stand-in 'kernels' for the confirmation of ksweep.kt: vadd done with numpy on the fake
backend's own clock (a power model makes launches take LAUNCH_MS there). BLOCK 256 takes
1.0 ms a launch; BLOCK 128 takes 0.9 ms for its first LUCKY launches in the worker, then
1.5 ms: a sweep's single measurement of it is lucky, more measurements are not."""

LUCKY = 25
_launches: dict = {}


def LAUNCH_MS(params):
    block = params["BLOCK"]
    _launches[block] = _launches.get(block, 0) + 1
    if block == 128:
        return 0.9 if _launches[block] <= LUCKY else 1.5
    return 1.0


def POWER_W(params):
    return 100.0


def vadd(params, grid, block, smem, c, a, b, n):
    c[:] = a + b
