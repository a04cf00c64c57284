"""Which GPUs this host has (nvidia-smi), as plain records."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    index: int | None  # None: no GPU (runs are not pinned)
    name: str = "none"
    uuid: str | None = None
    driver: str | None = None


NO_GPU = Gpu(index=None)


def detect_gpus() -> list[Gpu]:
    """Visible NVIDIA GPUs; an empty list when nvidia-smi is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        r = subprocess.run(
            [exe, "--query-gpu=index,name,uuid,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if r.returncode != 0:
        return []
    return parse_nvidia_smi(r.stdout)


def local_arch() -> str | None:
    """The arch to build for on this host, from its first GPU's compute capability
    (nvidia-smi): 9.0 -> sm_90a, 10.0 -> sm_100a (the arch-specific targets of the
    data-centre parts), 8.6 -> sm_86; None when there is no GPU or nvidia-smi says nothing."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, "--query-gpu=compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return arch_of(r.stdout) if r.returncode == 0 else None


def arch_of(compute_caps: str) -> str | None:
    """sm_XY of the first compute capability nvidia-smi lists ("9.0" -> sm_90a)."""
    for line in compute_caps.split("\n"):
        major, dot, minor = line.strip().partition(".")
        if dot and major.isdigit() and minor.isdigit():
            arch = f"sm_{major}{minor}"
            return arch + "a" if arch in ("sm_90", "sm_100") else arch
    return None


def parse_nvidia_smi(text: str) -> list[Gpu]:
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 4 and parts[0].isdigit():
            gpus.append(Gpu(index=int(parts[0]), name=parts[1], uuid=parts[2], driver=parts[3]))
    return gpus


def select_gpus(available: list[Gpu], wanted: list[int] | None) -> list[Gpu]:
    """The GPUs to run on: ``wanted`` indices (all when None); one unpinned slot without GPUs.
    An index nvidia-smi does not list is of an unknown model, or of model "none" when it
    lists no GPU at all (the sweep's check of the host then refuses a sweep that needs one)."""
    if wanted is None:
        return available or [NO_GPU]
    by_index = {g.index: g for g in available}
    return [by_index.get(i, Gpu(index=i, name="unknown" if available else "none")) for i in wanted] or [NO_GPU]
