"""Resource limits of target GPUs, visible to expressions as MAX_<KEY>.

Numbers are those of NVIDIA's CUDA C++ Programming Guide (compute capability tables).
``smem_per_block`` is the opt-in maximum of dynamic shared memory one block may use;
``static_smem`` the 48 KB a block gets without opting in; ``smem_per_sm`` the whole
shared memory of one multiprocessor; ``tmem_cols`` the tensor-memory columns of the
Blackwell data-centre parts (0 where there is none).
"""

from __future__ import annotations

from types import MappingProxyType

_COMMON = {
    "threads_per_block": 1024,
    "regs_per_thread": 255,
    "regs_per_sm": 65536,
    "static_smem": 48 * 1024,
    "warp_size": 32,
    "tmem_cols": 0,
}

_TABLE = {
    "sm_80": {"smem_per_block": 163 * 1024, "smem_per_sm": 164 * 1024, "warps_per_sm": 64, "blocks_per_sm": 32},
    "sm_86": {"smem_per_block": 99 * 1024, "smem_per_sm": 100 * 1024, "warps_per_sm": 48, "blocks_per_sm": 16},
    "sm_89": {"smem_per_block": 99 * 1024, "smem_per_sm": 100 * 1024, "warps_per_sm": 48, "blocks_per_sm": 24},
    "sm_90": {"smem_per_block": 227 * 1024, "smem_per_sm": 228 * 1024, "warps_per_sm": 64, "blocks_per_sm": 32},
    "sm_100": {
        "smem_per_block": 227 * 1024, "smem_per_sm": 228 * 1024, "warps_per_sm": 64, "blocks_per_sm": 32,
        "tmem_cols": 512,
    },
    "sm_120": {"smem_per_block": 99 * 1024, "smem_per_sm": 100 * 1024, "warps_per_sm": 48, "blocks_per_sm": 32},
}
_ALIASES = {"sm_90a": "sm_90", "sm_100a": "sm_100", "sm_120a": "sm_120"}

KNOWN_ARCHS = tuple(sorted(set(_TABLE) | set(_ALIASES)))
DEFAULT_ARCH = "sm_90"  # the GPU a spec that names no arch is taken for: its limits, kernel mode's target
LIMIT_KEYS = tuple(sorted(set(_COMMON) | {k for row in _TABLE.values() for k in row}))


def builtin_limits(arch: str) -> MappingProxyType:
    """The built-in limits of ``arch`` (e.g. 'sm_90a'); KeyError for an unknown arch."""
    key = _ALIASES.get(arch, arch)
    row = _TABLE[key]
    return MappingProxyType({**_COMMON, **row})


def limit_names(limits) -> dict[str, int]:
    """The names under which expressions see the limits: smem_per_block -> MAX_SMEM_PER_BLOCK."""
    return {f"MAX_{k.upper()}": v for k, v in limits.items()}
