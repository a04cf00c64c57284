"""Stand-in 'kernels' for the hardening's further inputs (kernel/harden_one.py): vadd, with
planted cheats chosen by the config's CHEAT: "address" keeps its outputs by its inputs'
addresses (right for whatever it saw first at an address); "saturate" clips its sums to
±1000 (right for the usual draws, wrong for large inputs); "zero_skip" treats an all-zero
input as absent (writes nothing: its poisoned output shows)."""

import numpy as np

_BY_ADDRESS: dict = {}


def vadd(params, grid, block, smem, c, a, b, n, addresses=None):
    cheat = params.get("CHEAT")
    if cheat == "address":
        key = tuple(addresses[1:3])
        if key in _BY_ADDRESS:
            c[:] = _BY_ADDRESS[key]
            return
        c[:] = a + b
        _BY_ADDRESS[key] = c.copy()
        return
    if cheat == "saturate":
        c[:] = np.clip(a + b, -1000.0, 1000.0)
        return
    if cheat == "zero_skip" and not a.any():
        return
    c[:] = a + b
