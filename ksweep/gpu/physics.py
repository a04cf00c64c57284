"""The physics gate (pure): a result implying more than the hardware allows is impossible.

A spec's ``[physics]`` gives the work of one run as expressions, ``flops`` (operations)
and ``bytes`` (the fewest bytes it must move through DRAM), per shape if need be. With
the GPU's peak dense throughput for the data type and its DRAM bandwidth
(gpu/peaks.py, or the spec's own numbers), no run can take less than

    floor = max(flops / peak, bytes / bandwidth)

A measured time below ``floor / (1 + margin)`` is ``IMPOSSIBLE``: a weak check let a wrong
kernel through, or the timing is broken (it measured nothing). It is never ranked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .peaks import Peaks, peaks_for

_UNIT_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class Work:
    """What one run of a config must do (numbers, from the spec's expressions)."""

    flops: float | None = None
    bytes: float | None = None


@dataclass(frozen=True)
class Floor:
    """The least time a run can take on one GPU, and why."""

    seconds: float
    what: str  # "2.15e+12 flop at 989 TFLOP/s (bf16, H100 SXM)"


def floor(work: Work, dtype: str, peaks: Peaks | None) -> Floor | None:
    """The time no run of ``work`` can beat on a GPU with ``peaks``; None when unknown."""
    if peaks is None:
        return None
    best: Floor | None = None
    peak = peaks.tflops.get(dtype) or 0.0
    if work.flops and peak > 0:
        best = Floor(work.flops / (peak * 1e12),
                     f"{work.flops:.3g} operations at most {peak:g} TFLOP/s ({dtype}, {peaks.name})")
    if work.bytes and peaks.bandwidth_gbs > 0:
        t = work.bytes / (peaks.bandwidth_gbs * 1e9)
        if best is None or t > best.seconds:
            best = Floor(t, f"{work.bytes:.3g} bytes at most {peaks.bandwidth_gbs:g} GB/s ({peaks.name})")
    return best


def check(value: float, unit: str, bound: Floor | None, margin: float) -> str | None:
    """Why a measured time ``value`` (in ``unit``) is impossible, or None when it is not."""
    if bound is None or value is None:
        return None
    seconds = value * _UNIT_SECONDS[unit]
    if seconds <= 0 or seconds * (1 + margin) >= bound.seconds:
        return None
    factor = bound.seconds / seconds
    return (f"{value:g} {unit} is {factor:.2f}x faster than the hardware allows: {bound.what} need at least "
            f"{bound.seconds / _UNIT_SECONDS[unit]:.4g} {unit} (margin {margin:.0%})")


def gpu_peaks(gpu_name: str | None, override_tflops: float | None, override_bw: float | None,
              dtype: str) -> Peaks | None:
    """The peaks used for a run: the table's row for its GPU, with the spec's overrides."""
    row = peaks_for(gpu_name)
    if override_tflops is None and override_bw is None:
        return row
    tflops = dict(row.tflops) if row else {}
    if override_tflops is not None:
        tflops[dtype] = override_tflops
    bw = override_bw if override_bw is not None else (row.bandwidth_gbs if row else 0.0)
    return Peaks((row.name if row else "the spec's [physics]"), tflops, bw)


def with_efficiency(metrics: Mapping[str, float], work: Work | None) -> dict[str, float]:
    """A run's metrics with ``gflops_per_watt`` added where its FLOP count (``[physics]``) and
    its energy per launch (``energy_mj``, kernel mode's energy observer or the run's own) are
    known: GFLOP/s per watt is GFLOP per joule, flops / 1e9 / (energy_mj / 1e3)."""
    out = dict(metrics)
    energy = out.get("energy_mj")
    if work is not None and work.flops and isinstance(energy, (int, float)) and energy > 0:
        out["gflops_per_watt"] = work.flops * 1e-6 / float(energy)
    return out
