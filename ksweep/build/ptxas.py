"""Parse ``ptxas -v`` reports (pure): registers, spills, shared memory, stack per kernel.

Handles the wording of nvcc 11-13, e.g.::

    ptxas info    : Compiling entry function '_Z5spillILi300EEvPfPKf' for 'sm_90a'
    ptxas info    : Function properties for _Z5spillILi300EEvPfPKf
        2232 bytes stack frame, 4908 bytes spill stores, 4920 bytes spill loads
    ptxas info    : Used 64 registers, used 0 barriers, 2232 bytes cumulative stack size
    ptxas info    : Used 10 registers, used 1 barriers, 4096 bytes smem        (nvcc 13)
    ptxas info    : Used 10 registers, 4096 bytes smem, 368 bytes cmem[0], 8 bytes cmem[2]  (older)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")


@dataclass(frozen=True)
class KernelResources:
    name: str
    arch: str | None = None
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    smem: int = 0
    barriers: int | None = None
    cmem: int = 0  # constant memory, bytes over every bank ptxas reported (nvcc 11-12 report it)
    judged: bool = True  # chosen by [build] kernels (all are, without it)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True)
class PtxasReport:
    """Every function ptxas reported; the figures (registers, spills, smem) and the
    pruning look only at the judged ones (``select``)."""

    kernels: tuple[KernelResources, ...]

    @property
    def judged(self) -> tuple[KernelResources, ...]:
        return tuple(k for k in self.kernels if k.judged)

    @property
    def registers(self) -> int | None:
        regs = [k.registers for k in self.judged if k.registers is not None]
        return max(regs) if regs else None

    @property
    def spills(self) -> int | None:
        return sum(k.spills for k in self.judged) if self.judged else None

    @property
    def smem(self) -> int | None:
        return max(k.smem for k in self.judged) if self.judged else None

    def select(self, pattern: str | None, aliases=None) -> "PtxasReport":
        """The same report with only the kernels whose name matches ``pattern``
        (``re.search``) judged; every kernel when ``pattern`` is None. ``aliases(names)``
        gives other names of each (demangled: ``void tuned<64>(float*)``, ``tuned<64>``)."""
        if pattern is None:
            return self
        rx = re.compile(pattern)
        other = aliases([k.name for k in self.kernels]) if aliases else {}
        return PtxasReport(tuple(
            replace(k, judged=any(rx.search(n) for n in (k.name, *other.get(k.name, ()))))
            for k in self.kernels))

    def to_json(self) -> list[dict]:
        return [k.__dict__ | {"spills": k.spills} for k in self.kernels]

    def result_fields(self) -> dict:
        """The report as a Result's resource fields (regs, spills, smem and the per-function list)."""
        return {"regs": self.registers, "spills": self.spills, "smem": self.smem, "kernels": tuple(self.to_json())}


def parse_ptxas(text: str) -> PtxasReport:
    """All kernels reported in ``text`` (compiler stderr), in order of appearance."""
    kernels: dict[tuple, dict] = {}  # (name, arch): a kernel is compiled once per target
    current: tuple | None = None
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = (m.group(1), m.group(2))
            kernels.setdefault(current, {"name": m.group(1), "arch": m.group(2)})
            continue
        m = _PROPS.search(line)
        if m:
            if current is None or current[0] != m.group(1):
                current = (m.group(1), None)
                kernels.setdefault(current, {"name": m.group(1)})
            continue
        if current is None:
            continue
        k = kernels[current]
        m = _FRAME.search(line)
        if m:
            k["stack_frame"], k["spill_stores"], k["spill_loads"] = (int(g) for g in m.groups())
        m = _USED.search(line)
        if m:
            k["registers"] = int(m.group(1))
            s = _SMEM.search(line)
            k["smem"] = int(s.group(1)) if s else 0
            b = _BARRIERS.search(line)
            if b:
                k["barriers"] = int(b.group(1))
            banks = _CMEM.findall(line)
            if banks:
                k["cmem"] = sum(int(n) for n, _ in banks)
    return PtxasReport(tuple(KernelResources(**k) for k in kernels.values()))
