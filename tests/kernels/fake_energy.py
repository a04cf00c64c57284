"""Stand-in 'kernels' for the energy observer's tests: vadd done with numpy on a stand-in GPU
whose kernels take LAUNCH_MS and draw POWER_W each (kernel/backend.FakeBackend's power
model), by BLOCK:

    BLOCK   ms    W     mJ per launch
    64      4.0   100   400    slow, little power: more energy than 128 needs
    128     2.0   150   300    the least energy
    256     1.0   400   400    the fastest
    512     1.5   500   750    slower than 256 and more energy: on no front

so over (time, energy) the Pareto front is {128, 256}. ENERGY_UPDATE_MS: how often the
stand-in NVML's energy counter changes."""

PROFILE = {64: (4.0, 100.0), 128: (2.0, 150.0), 256: (1.0, 400.0), 512: (1.5, 500.0)}
ENERGY_UPDATE_MS = 20.0


def LAUNCH_MS(params):
    return PROFILE[params["BLOCK"]][0]


def POWER_W(params):
    return PROFILE[params["BLOCK"]][1]


def vadd(params, grid, block, smem, c, a, b, n):
    c[:] = a + b
