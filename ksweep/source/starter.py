"""``ksweep init``: a starting spec written from a source's guarded defines and switches (pure).

Each ``#ifndef NAME / #define NAME value`` with a number becomes a parameter whose default
is that number and whose values lie around it: powers of two around a power of two (128:
32, 64, 128, 256, 512), otherwise steps of the largest power of two that divides it (96:
32, 64, 96, 128, 160; 3: 1 to 5); 0 gives 0 and 1; a floating-point value half and twice
itself, written with its suffix. A guarded define whose value is not a number (a type, an
expression) is listed in a comment. Each name the source tests with ``#ifdef``,
``#ifndef`` or ``defined(...)`` and never defines is a switch (``NAME = "flag"``: ``-DNAME``
or nothing), but for reserved names (``_X``, ``__X``) and ksweep's own ``KSWEEP_*``. The
settings that are not macros (integer constants, enumerators, literal template arguments of a
launch: ``source/settings.py``) are said with where they are, and how ``ksweep guard
--convert`` makes the constants macros: in a comment, or as the reason when nothing else
can be tuned.

The build command is nvcc for CUDA (the arch given, from the local GPU, else sm_90a with a
comment saying so), gcc for C and g++ for C++, with ``{defines}``, ``-Xptxas=-v`` for nvcc
(registers and spills), ``-I{ksweep_include}`` when the source includes ksweep.h, and the
libraries its includes call for (cuBLAS, the driver API, libm, ...). The objective comes
from the keys of an ``@@RESULT`` line the source writes (``ms`` first), and comments remind
what is missing. Constraints and ``[check]`` are commented examples that name the source's
parameters and result keys. The text loads with ``ksweep.load_spec`` as written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePath

from ..errors import SourceError
from ..gpu.limits import KNOWN_ARCHS
from ..preprocessor.directives import Scan, scan
from ..spec.objectives import MAX_IS_BETTER
from .guard import is_value
from .settings import Setting, settings

NO_GPU_ARCH = "sm_90a"  # the arch a starting spec names when no GPU was found here
_INT = re.compile(r"^\(?\s*([+-]?)(0[xX][0-9a-fA-F']+|0[bB][01']+|0[0-7']*|[1-9][0-9']*)([uUlLzZ]*)\s*\)?$")
_FLOAT = re.compile(r"^\(?\s*([+-]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?)([fFlL]?)\s*\)?$")
_RESULT_LINE = re.compile(r"@@RESULT\b([^\n\"]*)")
_RESULT_KEY = re.compile(r"([A-Za-z_]\w*)=")
_RESULT_ADD = re.compile(r"\.add\(\s*\"([A-Za-z_]\w*)\"")
_MAIN = re.compile(r"\bmain\s*\(")
_COMMENT = re.compile(r"//\s*(.*\S)|/\*\s*(.*?)\s*\*/")
_RESERVED = re.compile(r"^(?:_[A-Z_]|__|KSWEEP_)")
_LIBS_CUDA = {"cublas_v2.h": "-lcublas", "cublas.h": "-lcublas", "cublasLt.h": "-lcublasLt", "cuda.h": "-lcuda",
              "curand.h": "-lcurand", "cufft.h": "-lcufft", "cusparse.h": "-lcusparse", "cusolverDn.h": "-lcusolver",
              "nvrtc.h": "-lnvrtc"}
_LIBS_HOST = {"math.h": "-lm", "pthread.h": "-pthread", "omp.h": "-fopenmp", "thread": "-pthread"}
_LANGS = {".cu": "cuda", ".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++"}


@dataclass(frozen=True)
class Tunable:
    """A guarded define and what the spec makes of it."""

    name: str
    line: int
    written: str  # the value as the source writes it
    values: tuple | None  # None: not a number
    default: object = None
    note: str = ""  # the define's own comment


def values_around(written: str) -> tuple[tuple, object] | None:
    """(values, default) of a parameter around a literal, or None when it is not a number."""
    m = _INT.match(written)
    if m:
        sign, digits, _ = m.groups()
        digits = digits.replace("'", "")
        base = 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else 8 if len(digits) > 1 and digits[0] == "0" else 10
        v = int(digits[2:] if base in (16, 2) else digits, base) * (-1 if sign == "-" else 1)
        return _int_values(v), v
    m = _FLOAT.match(written)
    if m:
        number, suffix = m.groups()
        v = float(number)
        values = tuple(f"{x!r}{suffix}" for x in (v / 2, v, v * 2)) if v else (f"0.0{suffix}", f"1.0{suffix}")
        return values, f"{v!r}{suffix}"
    return None


def _int_values(v: int) -> tuple[int, ...]:
    if v == 0:
        return (0, 1)
    if v > 0 and v & (v - 1) == 0:  # a power of two
        return tuple(x for x in (v // 4, v // 2, v, v * 2, v * 4) if x >= 1 and x * 4 >= v)
    step = abs(v) & -abs(v)  # the largest power of two that divides it
    around = (v - 2 * step, v - step, v, v + step, v + 2 * step)
    return tuple(x for x in around if x > 0) if v > 0 else around


def tunables(found: Scan) -> list[Tunable]:
    """The guarded defines, one per name (the first definition gives the default)."""
    out: dict[str, Tunable] = {}
    for d in found.defines:
        if not d.guarded or d.function_like or d.dead or not d.value or d.name in out:
            continue
        got = values_around(d.value)
        values, default = got if got else (None, None)
        raw = " ".join(line.text for line in found.lines[d.directive.first:d.directive.last + 1])
        comment = _COMMENT.search(raw)
        note = " ".join((comment.group(1) or comment.group(2) or "").split())[:70] if comment else ""
        out[d.name] = Tunable(d.name, d.line, " ".join(d.value.split()), values, default, note)
    return list(out.values())


def switches(found, params: set[str]) -> list[tuple[str, int]]:
    """Names tested with #ifdef/#ifndef/defined() that the source never defines, with their line."""
    defined = {d.name for d in found.defines}
    return [(name, line) for name, line in found.tested.items()
            if name not in defined and name not in params and not _RESERVED.match(name)]


def _not_macros(found: list[Setting], name: str) -> str:
    """What init says of the settings that are not macros, and how to make the constants macros."""
    shown = ", ".join(s.described() for s in found[:8]) + (" …" if len(found) > 8 else "")
    once = [n for n in (s.name for s in found) if sum(s.name == n for s in found) == 1]
    constants = [s.name for s in found if s.convertible and s.name in once]
    how = (f"`ksweep guard {name} --convert {' '.join(constants[:8])} --in-place --check -- BUILD COMMAND` makes "
           f"the constants guarded macros" if constants else
           "a macro the source reads (a guarded #define) must give each its value before -D can set it")
    if constants and len(constants) < len(found):
        how += "; the others need a macro the source reads, written by hand"
    return f"settings that are not macros, so -D cannot set them: {shown}: {how}"


def result_keys(text: str) -> list[str]:
    """The keys of the @@RESULT line the source prints (or documents), in order."""
    keys: dict[str, None] = {}
    for m in _RESULT_LINE.finditer(text):
        keys.update(dict.fromkeys(_RESULT_KEY.findall(m.group(1))))
    if "ksweep.h" in text:
        keys.update(dict.fromkeys(_RESULT_ADD.findall(text)))
    return list(keys)


def _objective(keys: list[str]) -> tuple[str, str, str]:
    """(key, direction, comment) of the objective."""
    if not keys:
        return "ms", "min", "the program prints no @@RESULT line yet: see the top of this file"
    for key in keys:
        if key == "ms":
            return key, "min", "the @@RESULT key to rank by"
    for key in keys:
        if key.lower() in MAX_IS_BETTER:
            return key, "max", "the @@RESULT key to rank by (higher is better)"
    timed = [k for k in keys if re.search(r"(?:^|_)(?:ms|us|ns|s|time)$", k)]
    return (timed[0] if timed else keys[0]), "min", "the @@RESULT key to rank by"


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def _commented(line: str, comment: str, column: int = 28) -> str:
    """A TOML line with a comment after it, at ``column`` when the line is shorter."""
    return f"{line.ljust(column - 2)}  # {comment}" if comment else line


def arch_flag(arch: str) -> str:
    """-gencode for one arch: sm_90a -> -gencode=arch=compute_90a,code=sm_90a."""
    return f"-gencode=arch=compute_{arch[3:]},code={arch}"


def starter_spec(text: str, source: str, *, arch: str | None = None, arch_note: str = "",
                 spec_name: str | None = None) -> str:
    """The text of a starting spec for the source ``text``, named ``source`` in the spec
    (a path relative to where the spec will be). ``arch``: the local GPU's (sm_90a), None
    when there is none; ``arch_note`` says where it came from; ``spec_name``: the spec's
    file name, for the commands its header shows."""
    path = PurePath(source)
    lang = _LANGS.get(path.suffix.lower())
    if lang is None:
        raise SourceError(f"{source}: ksweep init reads a .cu, .c or .cpp source (the one the build compiles), "
                          f"not a {path.suffix or 'file without suffix'}")
    found = scan(text)
    params = tunables(found)
    numeric = [p for p in params if p.values is not None]
    flags = switches(found, {p.name for p in params})
    keys = result_keys(text)
    includes = [i.header.split("/")[-1] for i in found.includes if i.default_build]
    has_main = _MAIN.search(found.code) is not None
    others = [s for s in settings(text) if s.number]  # constants, enumerators, launch template arguments
    if not numeric and not flags:
        plain = [d.name for d in found.defines if not d.function_like and is_value(d.value)]
        hint = (f": `ksweep guard {path.name} --in-place` wraps its #define lines ({', '.join(plain[:5])}"
                f"{' …' if len(plain) > 5 else ''}) in #ifndef guards first" if plain else "")
        if others:
            hint += ("; " if hint else ": ") + _not_macros(others, path.name)
        raise SourceError(f"{source}: nothing to tune: no #ifndef-guarded #define with a number and no #ifdef "
                          f"switch{hint}")
    name = path.stem
    spec_name = spec_name or f"{name}.toml"

    out = [f"# A starting spec for {path.name}, written by `ksweep init`. Check every value list, then",
           f"#   ksweep plan {spec_name}    (counts the configs; nothing is built)",
           f"#   ksweep run {spec_name}",
           "#"]
    if not keys:
        out += ["# @@RESULT: the program must print one line such as",
                "#   @@RESULT ms=0.123 checksum=4567.8",
                "# (numbers only; docs/spec.md, \"The @@RESULT protocol\"). ksweep.h does the timing and",
                "# the printing: #include <ksweep.h>, built with -I$(ksweep include) (docs/cli.md)."]
    else:
        out += [f"# @@RESULT: {path.name} prints " + " ".join(f"{k}=…" for k in keys) + ".",
                "# Every value must be a finite number; the objective key must be there."]
    if not has_main:
        out += ["#", f"# {path.name} has no main(): a program needs one that runs the kernel and prints",
                "# @@RESULT. A bare __global__ kernel can be tuned in kernel mode instead, with no main of",
                "# your own: a [kernel] table (docs/kernel_mode.md)."]
    out.append("")

    objective, direction, why = _objective(keys)
    out += ["[sweep]", f"name = {_toml(name)}"]
    if lang == "cuda":
        gpu = arch or NO_GPU_ARCH
        note = arch_note or ("no GPU found here: sm_90a assumed; give your GPU's arch" if arch is None else "")
        if gpu in KNOWN_ARCHS:
            out.append(_commented(f"arch = {_toml(gpu)}", note))
        else:
            out.append(f"# arch = {_toml(gpu)}: {note}; ksweep has no built-in limits for it (give [limits], "
                       f"docs/spec.md)")
    out += [_commented(f"objective = {_toml(objective)}", why), f"direction = {_toml(direction)}", ""]

    out += [f"# Tier 1: the #ifndef-guarded defines of {path.name} (-DNAME=value). A define that fixes",
            "# the problem (a size) belongs in a [shapes.NAME] table's defines instead."]
    if numeric:
        out.append("[params]")
    for p in numeric:
        comment = f"line {p.line}" + (f": {p.note}" if p.note else "")
        if str(p.default) != p.written:
            comment += f" (written {p.written}; -D passes {p.default})"
        out.append(_commented(f"{p.name} = {{ values = {_toml(p.values)}, default = {_toml(p.default)} }}", comment))
    for p in params:
        if p.values is None:
            out.append(f"# {p.name} = {p.written}   (line {p.line}): not a number; to sweep it, list values as "
                       f"strings, e.g. {p.name} = [{_toml(p.written)}]")
    plain = [d for d in found.defines if not d.guarded and not d.function_like and not d.dead and is_value(d.value)
             and d.name not in {p.name for p in params}]
    if plain:
        names = list(dict.fromkeys(d.name for d in plain))
        out.append(f"# not guarded, so -D cannot set them: {', '.join(names[:10])}"
                   + (" …" if len(names) > 10 else "") + f" (ksweep guard {path.name} NAME …)")
    if others:
        out.append(f"# {_not_macros(others, path.name)}")
    out.append("")

    if flags:
        out += [f"# Tier 2: names {path.name} tests with #ifdef/defined(): -DNAME or nothing", "[switches]"]
        out += [_commented(f"{flag} = \"flag\"", f"line {line}") for flag, line in flags]
        out.append("")

    a, b = (numeric + [None, None])[:2]
    out += ["# Constraints prune configs before anything is built, in this order; for example:",
            "# [[constraints]]", "# name = \"tile\""]
    if a is not None and b is not None:
        bound = a.default * b.default if isinstance(a.default, int) and isinstance(b.default, int) else 4096
        out += [f"# expr = \"{a.name} * {b.name} <= {bound}\"",
                f"# reason = \"{a.name} x {b.name} = {{{a.name}}} x {{{b.name}}} is more than {bound}\""]
    elif a is not None:
        out += [f"# expr = \"{a.name} % 16 == 0\"", f"# reason = \"{a.name} {{{a.name}}} is not a multiple of 16\""]
    else:
        out += ["# expr = \"TILE % 16 == 0\"", "# reason = \"TILE {TILE} is not a multiple of 16\""]
    if lang == "cuda":
        out.append("# (the GPU's limits are names too: MAX_THREADS_PER_BLOCK, MAX_SMEM_PER_BLOCK, ...)")
    out.append("")

    command = _build_command(lang, source, arch or NO_GPU_ARCH, includes)
    out += ["[build]", f"sources = {_toml([source])}", f"command = {_toml(command)}",
            f"timeout = {300 if lang == 'cuda' else 60}", ""]
    out += ["[run]", _commented("command = [\"{binary}\"]", "add the program's arguments (or \"{shape_args}\")"),
            "timeout = 60", ""]

    out += ["# What a config's results must satisfy to be ranked; for example:", "# [check]"]
    if "checksum" in keys:
        out += ["# keys = [\"checksum\"]", "# reference = \"defaults\"   # every config agrees with the default config",
                "# rtol = 1e-4"]
    else:
        out += ["# keys = [\"checksum\"]          # a key of the @@RESULT line",
                "# reference = \"defaults\"       # every config agrees with the default config"]
    errs = [k for k in keys if re.search(r"err|diff", k)]
    if errs:
        out.append(f"# max = {{ {errs[0]} = 1e-4 }}")
    return "\n".join(out) + "\n"


def _build_command(lang: str, source: str, arch: str, includes: list[str]) -> list[str]:
    if lang == "cuda":
        cmd = ["nvcc", "-O3", arch_flag(arch), "-Xptxas=-v"]
        libs = [_LIBS_CUDA[h] for h in includes if h in _LIBS_CUDA]
    else:
        cmd = ["gcc", "-O2", "-march=native"] if lang == "c" else ["g++", "-O2", "-march=native", "-std=c++17"]
        libs = []
    libs += [_LIBS_HOST[h] for h in includes if h in _LIBS_HOST and (lang == "c" or h != "math.h")]
    if "ksweep.h" in includes:
        cmd.append("-I{ksweep_include}")
    return cmd + ["{defines}", "-o", "{binary}", source] + list(dict.fromkeys(libs))
