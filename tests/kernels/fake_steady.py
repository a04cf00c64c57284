"""Stand-in 'kernels' for the timing loop's tests: vadd done with numpy on a stand-in GPU
whose launches take LAUNCH_MS each on its own clock (kernel/backend.FakeBackend's power
model): BLOCK 128 always 1.0 ms (a steady kernel), BLOCK 256 1.0 and 1.3 ms in turn (a
noisy one, its median's interval never narrower than 30%)."""

_launches = [0]


def LAUNCH_MS(params):
    _launches[0] += 1
    if params["BLOCK"] == 256:
        return 1.0 if _launches[0] % 2 else 1.3
    return 1.0


def POWER_W(params):
    return 100.0


def vadd(params, grid, block, smem, c, a, b, n):
    c[:] = a + b
