"""The files a build actually read, from the compiler's own dependency output.

A spec's ``sources`` lists the files it knows about; the headers they include are
found by the compiler. As ccache does, ksweep asks gcc, g++, clang and nvcc for a
Make-style dependency file (``-MMD -MF FILE``: user headers, not system ones) and keys
the cached binary and the stored result on the contents of every file listed there too,
so editing an ``#include``d header rebuilds and reruns what used it.

NVRTC (``python -m ksweep.build.nvrtc``) lists nothing: that command takes the same flags
and writes the source and the headers it includes with quotes.

Only a command that compiles exactly one source file gets the flags (with several,
each compiler writes the dependencies of one of them only); a build through ``make``
or a shell script is keyed on its ``sources`` alone. Headers of the compiler's own
installation are left out: the compiler's identity (``--version``) covers them.
"""

from __future__ import annotations

import os
import re
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from . import nvrtc
from .digest import file_digest

DEPFILE = "ksweep-deps.d"
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".cu")
_COMPILER = re.compile(r"^(nvcc|gcc|g\+\+|cc|c\+\+|clang|clang\+\+)(-[0-9.]+)?$")
_SYSTEM_DIRS = ("/usr/include/", "/usr/lib/", "/usr/local/include/", "/usr/lib64/")
# options whose next argument is a path that is not a source to compile
_TAKES_VALUE = {"-o", "-I", "-isystem", "-include", "-x", "-L", "-l", "-MF", "-MT", "-MQ", "-Xcompiler",
                "-Xlinker", "-Xptxas", "-ccbin", "--compiler-bindir", "--output-file", "-odir",
                "--include-path", "--pre-include", "-arch", "-gencode", "-code", "--dependency-output"}


def command_length(argv: Sequence[str]) -> int:
    """How many words of ``argv`` name the compiler (its options go after them)."""
    return 3 if nvrtc.is_command(argv) else 1


def dependency_flags(argv: Sequence[str], depfile: str) -> list[str] | None:
    """The flags that make this build write its dependencies to ``depfile``, or None when
    the command is not a known compiler compiling one source (or already asks for them)."""
    if nvrtc.is_command(argv):  # it takes them and lists what NVRTC read (build/nvrtc.py)
        argv = ["nvcc", *argv[3:]]
    if not argv or not _COMPILER.match(os.path.basename(argv[0])):
        return None
    if any(a.startswith(("-M", "--generate-dependencies", "--generate-nonsystem-dependencies",
                         "--dependency-output")) for a in argv[1:]):
        return None
    sources, skip = 0, False
    for arg in argv[1:]:
        if skip:
            skip = False
            continue
        if arg in _TAKES_VALUE:
            skip = True
            continue
        if not arg.startswith("-") and arg.endswith(SOURCE_SUFFIXES):
            sources += 1
    if sources != 1:
        return None
    return ["-MMD", "-MF", depfile]


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a Make-style dependency file (targets left out; ``\\ `` is a
    space in a name, a backslash before a newline continues the line)."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    out: list[str] = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        # the target ends at the first ': ' (a path on Windows may hold a drive colon)
        m = re.search(r":(\s|$)", line)
        if m is None:
            continue
        rest = line[m.end():]
        for token in re.findall(r"(?:\\ |[^\s])+", rest):
            name = token.replace("\\ ", " ").replace("$$", "$")
            if name not in out:
                out.append(name)
    return out


@lru_cache(maxsize=None)
def _install_root(program: str) -> str | None:
    path = shutil.which(program)
    if path is None:
        return None
    return str(Path(os.path.realpath(path)).parent.parent) + os.sep


def user_dependencies(paths: Iterable[str], compiler: str, cwd: Path) -> list[Path]:
    """The files worth keying on: existing, outside system folders and the compiler's own
    installation, resolved, each once, in order."""
    root = _install_root(compiler)
    out: list[Path] = []
    seen: set[Path] = set()
    for name in paths:
        path = Path(name) if os.path.isabs(name) else Path(cwd) / name
        try:
            real = path.resolve()
        except OSError:
            continue
        text = str(real)
        if text.startswith(_SYSTEM_DIRS) or (root is not None and text.startswith(root)):
            continue
        if real in seen or not real.is_file():
            continue
        seen.add(real)
        out.append(real)
    return out


def digests(paths: Iterable[Path]) -> tuple[tuple[str, str], ...]:
    """(path, content digest) of each file, for storing beside a build or a result."""
    return tuple((str(p), file_digest(p)) for p in paths)


def unchanged(deps: Iterable[Sequence[str]]) -> bool:
    """True when every recorded file still has the recorded contents."""
    for path, digest in deps:
        try:
            if file_digest(Path(path)) != digest:
                return False
        except OSError:
            return False
    return True


def changed(deps: Iterable[Sequence[str]]) -> list[str]:
    """The recorded files that now have other contents. A file that is gone is not counted
    (a database read away from its sources cannot tell)."""
    out = []
    for path, digest in deps:
        try:
            if file_digest(Path(path)) != digest:
                out.append(path)
        except OSError:
            continue
    return out

