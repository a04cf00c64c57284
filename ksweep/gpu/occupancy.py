"""Theoretical occupancy of a kernel launch (pure): the CUDA occupancy calculation.

How many blocks of one kernel a multiprocessor holds at once, as limited by its
registers, its shared memory, its warp slots and its block slots, from the GPU's limits
(``gpu/limits.py``), the kernel's resources (ptxas: registers, static shared memory) and
the launch (threads per block, dynamic shared memory). The rules are NVIDIA's, as the
occupancy calculator of the CUDA toolkit states them for compute capability 8.x-12.x:

- registers are allocated per warp, ``regs × 32`` rounded up to 256; each of the four
  sub-partitions of a multiprocessor holds ``regs_per_sm / 4`` of them, so it holds
  ``⌊(regs_per_sm / 4) / regs_per_warp⌋`` warps; a block also fits the 64 K registers of
  a block only when its warps, rounded up to a multiple of four, do;
- a block's shared memory is its static and dynamic shared memory plus 1 KB the driver
  reserves per block, rounded up to 128 bytes; with no carve-out preference set, a
  multiprocessor is counted with all of its shared memory (H100: 228 KB);
- a block over 48 KB of shared memory (static and dynamic) runs only when the kernel
  opted in (``cudaFuncAttributeMaxDynamicSharedMemorySize``), up to the opt-in maximum;
  static shared memory above 48 KB does not compile.

``ksweep explain`` shows the result; ``tests/gpu`` checks it against the CUDA runtime's
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

REG_ALLOC_UNIT = 256  # registers, per warp
SUB_PARTITIONS = 4
SMEM_ALLOC_UNIT = 128  # bytes (compute capability 8.0 and later)
RESERVED_SMEM = 1024  # bytes the driver keeps per block (8.0 and later)
MAX_REGS_PER_BLOCK = 65536
KB = 1024

LIMIT_NAMES = ("registers", "shared memory", "warps", "blocks")


@dataclass(frozen=True)
class Occupancy:
    """Blocks per multiprocessor and what limits them.

    ``by_limit``: the blocks each limit alone allows; ``binding``: the limits that give the
    smallest number (several when they tie); ``problem``: why no block fits at all."""

    blocks_per_sm: int
    by_limit: Mapping[str, int]
    binding: tuple[str, ...]
    threads: int
    warps_per_block: int
    max_warps_per_sm: int
    registers: int
    regs_per_warp: int
    smem_per_block: int  # bytes allocated to one block: static + dynamic + reserved, rounded
    smem_per_sm: int  # the shared memory of a multiprocessor
    problem: str | None = None
    details: Mapping[str, str] = field(default_factory=dict)

    @property
    def active_warps(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def occupancy(self) -> float:
        """Active warps over the multiprocessor's warp slots (0..1)."""
        return self.active_warps / self.max_warps_per_sm if self.max_warps_per_sm else 0.0

    def to_json(self) -> dict:
        return {"blocks_per_sm": self.blocks_per_sm, "occupancy": round(self.occupancy, 4),
                "active_warps": self.active_warps, "max_warps_per_sm": self.max_warps_per_sm,
                "by_limit": dict(self.by_limit), "binding": list(self.binding), "threads": self.threads,
                "warps_per_block": self.warps_per_block, "registers": self.registers,
                "regs_per_warp": self.regs_per_warp, "smem_per_block": self.smem_per_block,
                "smem_per_sm": self.smem_per_sm, "problem": self.problem, "details": dict(self.details)}


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(limits: Mapping[str, int], *, threads: int, registers: int,
              static_smem: int = 0, dynamic_smem: int = 0, opt_in: bool = True) -> Occupancy:
    """The theoretical occupancy of a launch of ``threads`` threads per block, with
    ``registers`` per thread and that much static and dynamic shared memory (bytes), on
    a GPU with ``limits`` (``gpu.limits.builtin_limits(arch)``: threads_per_block,
    regs_per_sm, smem_per_sm, smem_per_block (opt-in), static_smem, warps_per_sm,
    blocks_per_sm, warp_size). ``opt_in``: the kernel raises its dynamic shared-memory
    limit (else a block over 48 KB does not launch)."""
    warp = int(limits.get("warp_size", 32))
    max_warps = int(limits["warps_per_sm"])
    max_blocks = int(limits["blocks_per_sm"])
    warps_per_block = -(-threads // warp) if threads > 0 else 0
    details: dict[str, str] = {}
    problems: list[str] = []

    # warps and blocks
    by_warps = max_warps // warps_per_block if warps_per_block else 0
    details["warps"] = f"{max_warps} warp slots / {warps_per_block} warps per block"
    details["blocks"] = f"at most {max_blocks} blocks per multiprocessor"
    if threads <= 0 or threads > int(limits["threads_per_block"]):
        problems.append(f"{threads} threads per block (the limit is {limits['threads_per_block']})")
        by_warps = 0

    # registers
    regs_per_warp = _round_up(max(registers, 0) * warp, REG_ALLOC_UNIT)
    per_partition = int(limits["regs_per_sm"]) // SUB_PARTITIONS
    if regs_per_warp:
        warps_by_regs = (per_partition // regs_per_warp) * SUB_PARTITIONS
        by_regs = warps_by_regs // warps_per_block if warps_per_block else 0
        details["registers"] = (f"{registers} registers x {warp} threads = {regs_per_warp} per warp (allocated in "
                                f"units of {REG_ALLOC_UNIT}); {warps_by_regs} warps fit the {limits['regs_per_sm']} "
                                f"registers of a multiprocessor")
    else:
        by_regs = max_blocks
        details["registers"] = "no registers reported"
    max_regs_thread = int(limits.get("regs_per_thread", 255))
    if registers > max_regs_thread:
        problems.append(f"{registers} registers per thread (the limit is {max_regs_thread})")
        by_regs = 0
    elif regs_per_warp * _round_up(warps_per_block, SUB_PARTITIONS) > MAX_REGS_PER_BLOCK or \
            regs_per_warp * warps_per_block > MAX_REGS_PER_BLOCK:
        problems.append(f"{regs_per_warp * warps_per_block} registers per block (the limit is {MAX_REGS_PER_BLOCK})")
        by_regs = 0

    # shared memory
    smem_per_sm = int(limits["smem_per_sm"])
    used = static_smem + dynamic_smem
    allocated = _round_up(used + RESERVED_SMEM, SMEM_ALLOC_UNIT)
    static_limit = int(limits.get("static_smem", 48 * KB))
    block_limit = int(limits["smem_per_block"]) if opt_in else static_limit
    if static_smem > static_limit:
        problems.append(f"{_kb(static_smem)} of static shared memory (static arrays are limited to "
                        f"{_kb(static_limit)}: allocate it dynamically and opt in)")
        by_smem = 0
    elif used > block_limit:
        why = "the opt-in maximum" if opt_in else "without opting in to more (cudaFuncSetAttribute)"
        problems.append(f"{_kb(used)} of shared memory per block ({_kb(block_limit)} is {why})")
        by_smem = 0
    else:
        by_smem = smem_per_sm // allocated
    details["shared memory"] = (f"{_kb(static_smem)} static + {_kb(dynamic_smem)} dynamic + {_kb(RESERVED_SMEM)} "
                                f"reserved = {_kb(allocated)} per block, of the {_kb(smem_per_sm)} of a multiprocessor")

    by_limit = {"registers": by_regs, "shared memory": by_smem, "warps": by_warps, "blocks": max_blocks}
    blocks = min(by_limit.values())
    binding = tuple(name for name in LIMIT_NAMES if by_limit[name] == blocks)
    if blocks == 0 and not problems:
        problems.append(" and ".join(f"{name}" for name in binding) + " allow no block")
    return Occupancy(blocks, by_limit, binding, threads, warps_per_block, max_warps, registers, regs_per_warp,
                     allocated, smem_per_sm, "; ".join(problems) or None, details)


def _kb(n: int) -> str:
    if n % KB == 0:
        return f"{n // KB} KB"
    return f"{n / KB:.1f} KB"
