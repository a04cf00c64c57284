"""The instruction mix of a built binary: ``cuobjdump -sass``, counted per opcode and class.

``parse_sass`` and ``classify`` are pure; ``disassemble`` runs ``cuobjdump`` (on the PATH,
under ``$CUDA_HOME/bin``, or the one the ``nvidia-cuda-cuobjdump`` package installs: the
``sass`` extra), which needs ``nvdisasm`` beside it (``nvidia-cuda-nvdisasm``). Counts are
static (instructions in the code, not executed ones): what changed between two configs'
code, e.g. a loop unrolled, spill loads appearing, tensor-core instructions replacing FMAs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KsweepError

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)")

# Opcode -> class, by the opcode's base name (modifiers after '.' dropped).
_CLASSES: dict[str, tuple[str, ...]] = {
    "tensor core": ("HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "BMMA", "QGMMA", "BGMMA", "OMMA", "QMMA",
                    "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA", "UTCMMA"),
    "fp32": ("FADD", "FMUL", "FFMA", "FMNMX", "FSET", "FSETP", "FCHK", "FSEL", "FSWZADD", "FADD32I", "FMUL32I",
             "FFMA32I", "FMNMX3", "FADD2", "FFMA2", "FMUL2"),
    "fp16/bf16": ("HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSET2", "HSETP2", "HADD2_32I", "HMUL2_32I", "HFMA2_32I"),
    "fp64": ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DSET"),
    "special function": ("MUFU",),
    "conversion": ("F2F", "F2I", "I2F", "I2I", "F2FP", "FRND", "I2FP", "F2IP"),
    "integer": ("IADD3", "IADD", "IMAD", "IMUL", "IMNMX", "ISETP", "LOP3", "LOP", "SHF", "SHL", "SHR", "LEA",
                "IABS", "POPC", "FLO", "BREV", "PRMT", "SEL", "SGXT", "BMSK", "VIADD", "VIADDMNMX", "VIMNMX",
                "VIMNMX3", "IDP", "IMAD32I", "IADD32I", "LOP32I", "ISCADD", "BFE", "BFI", "IDE"),
    "global memory": ("LDG", "STG", "LD", "ST", "RED", "REDG", "ATOM", "ATOMG", "LDGSTS", "LDGDEPBAR", "CCTL"),
    "shared memory": ("LDS", "STS", "LDSM", "STSM", "ATOMS", "LDSU"),
    "local memory (spills)": ("LDL", "STL"),
    "tma / bulk copy": ("UTMALDG", "UTMASTG", "UBLKCP", "UTMAPF", "UTMACCTL", "UBLKRED", "UTMAREDG", "UBLKPF"),
    "constant": ("LDC", "ULDC"),
    "move / shuffle": ("MOV", "UMOV", "MOV32I", "SHFL", "S2R", "S2UR", "CS2R", "R2UR", "P2R", "R2P", "UP2UR",
                       "UR2UP", "PLOP3", "UPLOP3", "VOTE", "VOTEU", "MATCH", "REDUX", "ELECT"),
    "barrier / sync": ("BAR", "BSYNC", "BSSY", "WARPSYNC", "MEMBAR", "DEPBAR", "SYNCS", "ARRIVES", "ERRBAR",
                       "FENCE", "WARPGROUP", "UCGABAR_ARV", "UCGABAR_WAIT", "CGAERRBAR", "NANOSLEEP"),
    "control": ("BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BREAK", "NOP", "YIELD", "BPT", "KILL",
                "ACQBULK", "ENDCOLLECTIVE"),
}
_CLASS_OF = {op: name for name, ops in _CLASSES.items() for op in ops}


def classify(opcode: str) -> str:
    """The class of an opcode (``FFMA.FTZ`` -> ``fp32``); ``uniform`` for another
    uniform-datapath ``U…`` instruction, ``other`` for the rest."""
    base = opcode.split(".", 1)[0]
    if base in _CLASS_OF:
        return _CLASS_OF[base]
    if base.startswith("U") and base[1:] in _CLASS_OF and _CLASS_OF[base[1:]] in ("integer", "move / shuffle"):
        return "uniform"
    return "other"


@dataclass(frozen=True)
class InstructionMix:
    """Instructions per opcode (base name) for each function of a binary."""

    functions: dict[str, Counter] = field(default_factory=dict)

    @property
    def opcodes(self) -> Counter:
        total: Counter = Counter()
        for counts in self.functions.values():
            total.update(counts)
        return total

    @property
    def classes(self) -> Counter:
        out: Counter = Counter()
        for op, n in self.opcodes.items():
            out[classify(op)] += n
        return out

    @property
    def total(self) -> int:
        return sum(self.opcodes.values())

    def only(self, pattern: str | None) -> "InstructionMix":
        """The functions whose name matches ``pattern`` (``re.search``); all when None, or
        when none matches (a binary's one kernel under another name)."""
        if not pattern:
            return self
        rx = re.compile(pattern)
        chosen = {k: v for k, v in self.functions.items() if rx.search(k)}
        return InstructionMix(chosen) if chosen else self

    def to_json(self) -> dict:
        return {"total": self.total, "classes": dict(self.classes.most_common()),
                "opcodes": dict(self.opcodes.most_common()),
                "functions": {k: sum(v.values()) for k, v in self.functions.items()}}


def parse_sass(text: str) -> InstructionMix:
    """Count the instructions of ``cuobjdump -sass`` output per function and opcode (its
    base name: ``FFMA.FTZ`` and ``FFMA`` are one opcode)."""
    functions: dict[str, Counter] = {}
    current: Counter | None = None
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            current = functions.setdefault(m.group(1), Counter())
            continue
        if current is None:
            continue
        m = _INSTR.match(line)
        if m:
            current[m.group(1)] += 1
    return InstructionMix(functions)


def cuobjdump() -> str | None:
    """The path of a ``cuobjdump`` that can disassemble (``nvdisasm`` beside it or on the PATH)."""
    candidates = [shutil.which("cuobjdump")]
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        candidates.append(str(Path(home) / "bin" / "cuobjdump"))
    try:
        import nvidia  # the namespace package of NVIDIA's wheels (nvidia-cuda-cuobjdump)

        for root in getattr(nvidia, "__path__", []):
            candidates.extend(str(p) for p in sorted(Path(root).glob("cu*/bin/cuobjdump")))
    except ImportError:
        pass
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


def disassemble(binary: str | Path, timeout: float = 120) -> InstructionMix:
    """The instruction mix of a cubin, an object file or an executable (its embedded cubins)."""
    tool = cuobjdump()
    if tool is None:
        raise KsweepError("cuobjdump was not found (on the PATH, under $CUDA_HOME/bin, or from the "
                          "nvidia-cuda-cuobjdump package): install CUDA's binary utilities, or "
                          "pip install 'ksweep[sass]'")
    env = dict(os.environ)
    env["PATH"] = str(Path(tool).parent) + os.pathsep + env.get("PATH", "")  # its nvdisasm
    try:
        out = subprocess.run([tool, "-sass", str(binary)], capture_output=True, text=True, timeout=timeout,
                             env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise KsweepError(f"cuobjdump -sass {binary} took more than {timeout:.0f} s") from None
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise KsweepError(f"cuobjdump -sass {binary} failed: {tail[0]}")
    return parse_sass(out.stdout)
