"""Peak dense throughput per data type and DRAM bandwidth of common GPUs: what no kernel
can beat (the physics gate, gpu/physics.py).

Figures are NVIDIA's datasheet numbers for dense math (no structured sparsity), in TFLOP/s,
and DRAM bandwidth in GB/s (10^9 bytes). Where a part has two tensor rates for one input
type (GeForce parts: FP16 accumulate twice the FP32-accumulate rate) the higher one is
listed: the gate must never flag a result the hardware can reach. A GPU is matched by
the name the driver reports (``NVIDIA H100 80GB HBM3``), first matching row wins; a spec
may override both numbers (``[physics] peak_tflops``, ``bandwidth_gbs``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .models import first_match

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True)
class Peaks:
    name: str  # the row's own name, for messages
    tflops: Mapping[str, float]  # dtype -> dense TFLOP/s (TOP/s for int8)
    bandwidth_gbs: float

    def __post_init__(self):
        object.__setattr__(self, "tflops", MappingProxyType(dict(self.tflops)))


def _row(name, fp64, fp32, tf32, fp16, fp8, int8, bw):
    return Peaks(name, {"fp64": fp64, "fp32": fp32, "tf32": tf32, "fp16": fp16, "bf16": fp16,
                        "fp8": fp8, "int8": int8}, bw)


# (pattern on the driver's GPU name, peaks). Order matters: the first match wins.
_TABLE: tuple[tuple[re.Pattern, Peaks], ...] = tuple((re.compile(p, re.I), row) for p, row in (
    (r"H100.*NVL", _row("H100 NVL", 30, 60, 417.5, 835.5, 1670.5, 1670.5, 3900)),
    (r"H100.*PCIe", _row("H100 PCIe", 25.6, 51.2, 378, 756, 1513, 1513, 2000)),
    (r"H100", _row("H100 SXM", 33.5, 66.9, 494.7, 989.4, 1978.9, 1978.9, 3350)),
    (r"GH200", _row("GH200", 33.5, 66.9, 494.7, 989.4, 1978.9, 1978.9, 4900)),
    (r"H200", _row("H200", 33.5, 66.9, 494.7, 989.4, 1978.9, 1978.9, 4800)),
    (r"H800", _row("H800 SXM", 0.8, 66.9, 494.7, 989.4, 1978.9, 1978.9, 3350)),
    (r"B200", _row("B200", 40, 80, 1100, 2250, 4500, 4500, 8000)),
    (r"B100", _row("B100", 30, 60, 875, 1750, 3500, 3500, 8000)),
    (r"A100.*80GB.*PCIe|A100.*PCIe.*80GB", _row("A100 80GB PCIe", 9.7, 19.5, 156, 312, 0, 624, 1935)),
    (r"A100.*80GB", _row("A100 80GB SXM", 9.7, 19.5, 156, 312, 0, 624, 2039)),
    (r"A100", _row("A100 40GB", 9.7, 19.5, 156, 312, 0, 624, 1555)),
    (r"L40S", _row("L40S", 1.4, 91.6, 183, 366, 733, 733, 864)),
    (r"RTX 5090", _row("RTX 5090", 1.6, 104.8, 209.5, 419, 838, 838, 1792)),
    (r"RTX 4090", _row("RTX 4090", 1.3, 82.6, 82.6, 330.3, 660.6, 660.6, 1008)),
    (r"RTX 3090", _row("RTX 3090", 0.6, 35.6, 35.6, 142, 0, 284, 936)),
    (r"RTX A6000", _row("RTX A6000", 1.2, 38.7, 77.4, 154.8, 0, 309.7, 768)),
))


def peaks_for(gpu_name: str | None) -> Peaks | None:
    """The peaks of the GPU the driver calls ``gpu_name``; None for a GPU not in the table."""
    return first_match(_TABLE, gpu_name)
