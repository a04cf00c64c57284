"""The worker's correctness checks on the GPU: outputs compared with their references and
inputs with their pristine copies where they lie, so that only a few numbers cross the bus.

The kernels (``gpucheck.cu``, no header needed) are built once per worker by NVRTC, as a
cubin for the GPU's own architecture when NVRTC knows it, else as PTX for the newest one it
knows below (the driver compiles it). ``DeviceChecks`` runs them through a backend's
primitives (alloc, fill, launch, sync, download): the comparison of
``args.check_output``, with the same result bit for bit. An output is compared in the work
type (``args.work_dtype``): its reference must be stored in it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .args import MATCHED, OutputCheck

SOURCE = Path(__file__).with_name("gpucheck.cu")
OUTPUT_TYPES = ("float32", "float64", "float16", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                "int64", "uint64")
PAIRS = [("float32", "float32")] + [(t, "float64") for t in OUTPUT_TYPES]
FUNCTIONS = [f"ks_{step}_{g}_{w}" for g, w in PAIRS for step in ("check", "worst")] + ["ks_differing_bytes"]
THREADS = 256
MAX_BLOCKS = 4096
# the summary's slots, as gpucheck.cu numbers them
UNWRITTEN, OVER, WORST_BITS, MAX_ERR_BITS, FIRST_UNWRITTEN, WORST_INDEX = range(6)


def build(capability: tuple[int, int]) -> bytes:
    """The kernels' image for a GPU of this compute capability: a cubin, or PTX."""
    from ..build.nvrtc import compile_program, supported_archs

    want = capability[0] * 10 + capability[1]
    known = supported_archs()
    below = [a for a in known if a <= want]
    if not below:
        raise RuntimeError(f"NVRTC compiles for sm_{min(known)} and newer, not for this GPU (sm_{want})")
    arch = f"sm_{want}" if want in known else f"compute_{max(below)}"
    image, log = compile_program(SOURCE.read_bytes(), SOURCE.name, [f"--gpu-architecture={arch}", "--fmad=false"],
                                 ptx=arch.startswith("compute_"))
    if image is None:
        raise RuntimeError(f"NVRTC did not compile {SOURCE.name}: {log}")
    return image


def from_bits(value: int, dtype: np.dtype) -> float:
    """A non-negative float of ``dtype`` from the bits the kernels keep in a 64-bit slot."""
    bits = np.array([value], np.uint64)
    return float(bits.astype(np.uint32).view(np.float32)[0] if dtype == np.float32 else bits.view(np.float64)[0])


class DeviceChecks:
    """The comparison kernels of one loaded module (``functions``: name -> handle), run
    through ``backend`` on arrays of its memory (``backend.DeviceArray``), with ``threads``
    per block and at most ``max_blocks`` blocks."""

    def __init__(self, backend, functions: Mapping[str, Any], threads: int = THREADS, max_blocks: int = MAX_BLOCKS):
        self.b = backend
        self.fns = dict(functions)
        self.threads, self.max_blocks = threads, max_blocks
        self.slots_ptr = backend.alloc(8 * 6)
        self.slots = backend.host_array((6,), np.uint64)

    def handles(self, got, expected) -> bool:
        """Whether a kernel compares outputs of this type with references of that one."""
        return f"ks_check_{got.dtype}_{expected.dtype}" in self.fns

    def check_output(self, got, expected, atol: float, rtol: float) -> OutputCheck:
        n = math.prod(got.shape)
        w = np.dtype(expected.dtype)
        self.b.fill(self.slots_ptr, 0, 8 * FIRST_UNWRITTEN)
        self.b.fill(self.slots_ptr + 8 * FIRST_UNWRITTEN, 0xFF, 16)  # the two indices start at ~0
        args = [got, expected, np.uint64(n), w.type(atol), w.type(rtol), np.uint64(self.slots_ptr)]
        for step in ("check", "worst"):  # the second returns at once when nothing is beyond the tolerance
            self.b.launch(self.fns[f"ks_{step}_{got.dtype}_{expected.dtype}"], self._grid(n), self._block, 0, args)
        self.b.sync()
        self.b.download(self.slots_ptr, self.slots)
        s = [int(v) for v in self.slots]
        unwritten, first = s[UNWRITTEN], s[FIRST_UNWRITTEN] if s[UNWRITTEN] else -1
        if not s[OVER]:
            return OutputCheck(unwritten, first) if unwritten else MATCHED
        j = s[WORST_INDEX]
        return OutputCheck(unwritten, first, s[OVER], j, from_bits(s[MAX_ERR_BITS], w),
                           self._element(got, j), self._element(expected, j))

    def differing_bytes(self, a, b) -> int:
        """How many bytes differ between two arrays of the same size."""
        self.b.fill(self.slots_ptr, 0, 8)
        self.b.launch(self.fns["ks_differing_bytes"], self._grid(-(-a.nbytes // 16)), self._block, 0,
                      [a, b, np.uint64(min(a.nbytes, b.nbytes)), np.uint64(self.slots_ptr)])
        self.b.sync()
        self.b.download(self.slots_ptr, self.slots)
        return int(self.slots[0])

    @property
    def _block(self) -> list[int]:
        return [self.threads, 1, 1]

    def _grid(self, items: int) -> list[int]:
        return [max(1, min(self.max_blocks, -(-items // self.threads))), 1, 1]

    def _element(self, array, j: int) -> float:
        one = np.empty(1, np.dtype(array.dtype))
        self.b.download(array.ptr + j * one.itemsize, one)
        return float(one[0])
