"""Stand-in 'kernels' for a host with two GPU models: vadd done with numpy, every config
taking 1 ms on GPU 0 and 10 ms on GPU 1 (the worker's CUDA_VISIBLE_DEVICES), or 10 ms
anywhere with the parameter SLOW = 1 (a slower variant), on the fake backend's own clock (a
power model makes launches take LAUNCH_MS there)."""

import os


def LAUNCH_MS(params):
    return 10.0 if os.environ.get("CUDA_VISIBLE_DEVICES") == "1" or params.get("SLOW") else 1.0


def POWER_W(params):
    return 100.0


def vadd(params, grid, block, smem, c, a, b, n):
    c[:] = a + b
