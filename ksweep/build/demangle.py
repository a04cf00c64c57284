"""Kernel names as people read them: demangled (``c++filt``, when the host has it) and
shortened for a table cell or a one-line message."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from typing import Iterable

_CACHE: dict[str, str] = {}


def demangle(names: Iterable[str]) -> dict[str, str]:
    """mangled -> demangled for each of ``names``; a name that cannot be demangled (no
    c++filt, a C name) maps to itself."""
    names = list(dict.fromkeys(names))
    todo = [n for n in names if n not in _CACHE]
    tool = _filt()
    if todo and tool and any(n.startswith("_Z") for n in todo):
        try:
            out = subprocess.run([tool], input="\n".join(todo) + "\n", capture_output=True, text=True,
                                 timeout=10).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            out = []
        if len(out) == len(todo):
            _CACHE.update(zip(todo, out))
    return {n: _CACHE.get(n, n) for n in names}


@functools.lru_cache(maxsize=1)
def _filt() -> str | None:
    return shutil.which("cu++filt") or shutil.which("c++filt")


def aliases(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each mangled name's readable forms: the whole demangled signature
    (``void tuned<64>(float*, float const*)``) and the bare name (``tuned<64>``)."""
    full = demangle(names)
    return {n: (d, _bare(d)) for n, d in full.items() if d != n}


def _bare(text: str) -> str:
    return re.sub(r"^(?:void|static|__global__)\s+", "", _strip_args(text))


def short_name(name: str, width: int = 48) -> str:
    """``_Z15sgemmWarptilingILi128ELi128E...EviiifPfS0_fS0_`` -> ``sgemmWarptiling<128, 128, …>``:
    demangled, without return type and argument list, cut to ``width`` characters."""
    text = _bare(demangle([name])[name])
    if len(text) > width:
        text = text[: width - 2].rstrip(", ") + "…>" if "<" in text[: width - 2] else text[: width - 1] + "…"
    return text


def _strip_args(text: str) -> str:
    """Drop the trailing ``(int, float*, ...)`` argument list of a demangled function name."""
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return text[:i]
    return text
