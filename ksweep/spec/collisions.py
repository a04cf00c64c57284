"""Macro names that would rewrite the user's own identifiers (pure, but for reading sources).

ksweep passes each parameter as ``-DNAME=value``. In a real codebase the same name is
often also a template parameter or a constant (``template <const int BM, ...>``,
``const uint K10_BM = 128;``); the macro then replaces it everywhere and every config fails
to compile, although the program builds alone. A name is reported when a source the
build reads *declares* it as an identifier: a template parameter, a constant, a variable,
a function parameter or a type alias (``int BM``, ``const uint K10_BM =``, ``typename BM``,
``using BM =``). Plain uses are not reported: a program may rely on ``-DP0=...`` alone.
A name a source ``#define``s without an ``#ifndef`` guard is reported too (``unguarded``):
that definition replaces the ``-D`` value (the compiler only warns), so every config would
build with the source's value.

The sources read are the spec's, plus the headers they include with quotes, found beside
the including file or in a ``-I`` folder of the build command (the compiler's own
dependency list is only known after a build). For an nvcc build, CUDA's ``cuda_runtime.h``
(and the headers it includes) too: nvcc includes it in every ``.cu``, so ``-DT=float``
rewrites its ``template <class T>`` (``cuda_headers``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Iterable, Sequence

from ..preprocessor.directives import scan

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_TYPES = ("int", "uint", "unsigned", "long", "short", "size_t", "auto", "char", "bool", "float", "double",
          "typename", "class", "int32_t", "int64_t", "uint32_t", "uint64_t", "index_t")
_MAX_FILES = 200
_MAX_BYTES = 4 * 1024 * 1024


def read_sources(root: Path, sources: Sequence[str], include_dirs: Sequence[str] = ()) -> dict[Path, str]:
    """The text of ``sources`` and of the headers they include with quotes, transitively."""
    dirs = [root / d for d in include_dirs]
    todo = [root / s for s in sources]
    out: dict[Path, str] = {}
    while todo and len(out) < _MAX_FILES:
        path = todo.pop()
        try:
            path = path.resolve()
            if path in out or not path.is_file() or path.stat().st_size > _MAX_BYTES:
                continue
            text = path.read_text(errors="replace")
        except OSError:
            continue
        out[path] = text
        for name in _INCLUDE.findall(text):
            for base in (path.parent, *dirs):
                if (base / name).is_file():
                    todo.append(base / name)
                    break
    return out


def cuda_headers(argv: Sequence[str]) -> dict[Path, str]:
    """The text of CUDA's cuda_runtime.h and the headers it includes, when ``argv`` runs nvcc
    (which includes it in every .cu); {} for another compiler or when it is not found."""
    if not argv or Path(argv[0]).name not in ("nvcc", "nvcc.exe"):
        return {}
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    found = shutil.which(argv[0])
    if found:
        homes.append(str(Path(found).resolve().parent.parent))
    homes.append("/usr/local/cuda")
    for home in filter(None, homes):
        include = Path(home) / "include"
        if (include / "cuda_runtime.h").is_file():
            return read_sources(include, ["cuda_runtime.h"], [str(include)])
    return {}


def include_args(argv: Sequence[str]) -> list[tuple[int, str, str]]:
    """(index, prefix, folder) of each ``-I`` folder of a command: ``-Idir`` at its own index
    with the prefix ``-I``, ``-I dir`` at the folder's index with none."""
    out = []
    for i, a in enumerate(argv):
        if a == "-I" and i + 1 < len(argv):
            out.append((i + 1, "", argv[i + 1]))
        elif a.startswith("-I") and len(a) > 2:
            out.append((i, "-I", a[2:]))
    return out


def include_dirs(argv: Iterable[str]) -> list[str]:
    """The ``-I`` folders of a build command (``-Idir`` and ``-I dir``), placeholders left out."""
    return [d for _, _, d in include_args(list(argv)) if "{" not in d]


def collisions(names: Iterable[str], texts: dict[Path, str]) -> dict[str, tuple[Path, int, str]]:
    """name -> (file, line, the line) for each macro name that a source declares as an identifier."""
    code = {path: _STRING.sub('""', _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text))
            for path, text in texts.items()}
    found: dict[str, tuple[Path, int, str]] = {}
    for name in dict.fromkeys(names):
        declared = re.compile(r"(?:\b(?:%s)\s*(?:const\s+)?|\busing\s+)%s\s*[=,;>)\[{]"
                              % ("|".join(_TYPES), re.escape(name)))
        for path, clean in code.items():
            if name not in clean:
                continue
            hit = next((no for no, line in enumerate(clean.splitlines(), 1)
                        if not line.lstrip().startswith("#") and declared.search(line)), None)
            if hit is not None:
                found[name] = (path, hit, texts[path].splitlines()[hit - 1].strip())
                break
    return found


def command_defines(argv: Sequence[str]) -> set[str]:
    """The macro names a command defines itself, whatever the config (``-DAUTOTUNE``,
    ``-D NAME=1``): placeholders ({defines}) left out."""
    out = set()
    for i, a in enumerate(argv):
        flag = argv[i + 1] if a == "-D" and i + 1 < len(argv) else a[2:] if a.startswith("-D") else None
        if flag and "{" not in flag:
            name = re.match(r"\w+", flag)
            if name:
                out.add(name.group(0))
    return out


def unguarded(names: Iterable[str], texts: dict[Path, str], defined: Iterable[str] = ()) -> dict[str, tuple[Path, int]]:
    """name -> (file, line) for each macro name that a source #defines where the -D value
    does not keep it out (``Define.kept_out`` of preprocessor/directives.py: not guarded, not
    in ``#if 0``, nor in a branch that the build command's own ``defined`` macros rule out:
    ``#ifndef AUTOTUNE`` under -DAUTOTUNE). Such a definition replaces the -D value."""
    wanted, defined = set(names), set(defined)
    found: dict[str, tuple[Path, int]] = {}
    for path, text in texts.items():
        if not any(name in text for name in wanted):
            continue
        for d in scan(text).defines:
            if d.name in wanted and d.name not in found and not d.kept_out(defined):
                found[d.name] = (path, d.line)
    return found
