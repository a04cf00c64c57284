"""Stand-in 'kernels' for the hardening's further inputs (kernel/harden_one.py): vadd, with
planted cheats chosen by the config's CHEAT: "address" keeps its outputs by its inputs'
addresses (right for whatever it saw first at an address); "saturate" clips its sums to
±1000 (right for the usual draws, wrong for large inputs); "zero_skip" treats an all-zero
input as absent (writes nothing: its poisoned output shows); "tiles" writes whole tiles of
256 elements only (right where N is a multiple of 256, wrong at an edge size; TILES=1 too);
"rounding" is honest: its error grows with its inputs' magnitudes, as a reordered float sum's does. A config's
FAULT names the sanitizer tool that "finds" a fault in it (or numbers it, 1-4 as the tools' order): under that tool (KSWEEP_SANITIZER)
it says "planted fault", which the stand-in compute-sanitizer reports. MS: its launch time."""

import os
import sys
import time

import numpy as np

_BY_ADDRESS: dict = {}
_TOOLS = {1: "memcheck", 2: "racecheck", 3: "initcheck", 4: "synccheck"}  # FAULT as a number


def vadd(params, grid, block, smem, c, a, b, n, addresses=None):
    cheat = params.get("CHEAT")
    fault = _TOOLS.get(params.get("FAULT"), params.get("FAULT"))
    if fault and os.environ.get("KSWEEP_SANITIZER") == fault:
        print("planted fault", file=sys.stderr)
    if params.get("MS"):
        time.sleep(params["MS"] / 1e3)
    if cheat == "tiles" or params.get("TILES"):
        whole = n - n % 256
        c[:whole] = (a + b)[:whole]
        return
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
    if cheat == "rounding":  # no cheat: a reordered float sum's error, in proportion to the terms, not the result
        c[:] = a + b + 1e-6 * (np.abs(a) + np.abs(b))
        return
    c[:] = a + b
