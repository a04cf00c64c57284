"""A parameter's ``-D`` name that no source the build reads reads (pure, but for reading sources).

``-DUNROL=4`` for a source that reads ``UNROLL`` builds one program for every value: each
config of the knob is the same measurement, the sweep a waste. Before anything is built,
``ksweep plan`` and ``ksweep run`` look for every parameter's macro in the code of the
files the build reads: the spec's sources and the headers they include (with quotes, or
with angle brackets when a ``-I`` or ``-isystem`` folder holds them), comments and string
literals left out. A name that is no token of that code, nor in an ``#if``, ``#ifdef``,
``#ifndef`` or ``defined()``, is said in one line with the names the sources do read.

Only where that is known: a command that runs a compiler (gcc, g++, cc, c++, clang,
clang++, nvcc; kernel mode's nvcc or NVRTC) on the listed sources (and the files the command
names itself), every one of them found, and no ``#include`` of a header a macro names.
A parameter that reaches the program another way is never said: named in a command, a
shape's arguments or the run's environment (``{NAME}``), in a kernel's launch or template,
or through a derived value that is passed as ``-D`` itself. A name a header outside the
sources may read is left alone too: one that starts with ``_``, ``NDEBUG``, and one that
starts with the name of a library a source includes by angle brackets and that was not
found (``<cub/cub.cuh>``: ``CUB_…``; ``<cuda_runtime.h>``: ``CUDA_…``).

``rename_hint``: how plan's warning of a ``-D`` name that would rewrite an identifier says to
name the macro apart: by a macro the sources read for it (``K10_BM`` for ``BM``), never by a
name no source reads.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from ..preprocessor.directives import scan
from .collisions import cuda_headers
from .names import did_you_mean

_COMPILER = re.compile(r"^(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc)(-[\d.]+)?(\.exe)?$")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"]+)"|<([^>]+)>)', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_TOKEN = re.compile(r"[A-Za-z_]\w*")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_CONDITION = ("if", "elif", "ifdef", "ifndef", "elifdef", "elifndef")
_MAX_FILES = 400
_MAX_BYTES = 4 * 1024 * 1024
_SHOWN = 12
_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl")
_COMPUTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[A-Za-z_]', re.M)  # #include NAME: a macro's header


def unread_defines(spec) -> str | None:
    """One line naming each parameter whose -D name no source of any variant reads, and the
    names the sources do read; None when every one is read (or it cannot be known)."""
    where: dict[str, str] = {}  # macro -> the spec key that makes it
    read_any: set[str] = set()
    offered: dict[str, None] = {}
    files_shown: list[str] = []
    judged = False
    for variant in spec.variant_list():
        build = _build_of(spec, variant)
        if build is None:
            continue
        sources, argv = build
        texts, libraries = _read(spec.root, sources, argv)
        if texts is None:
            return None  # a listed source is missing: the spec's own check says so
        judged = True
        tokens: set[str] = set()
        for text in (*texts.values(), *cuda_headers(argv).values()):  # nvcc includes cuda_runtime.h in every .cu
            tokens |= set(_TOKEN.findall(_LITERAL.sub('""', _COMMENT.sub(" ", text))))
        params = {p.name: p for shape in spec.shape_list() for p in spec.effective_params(shape, variant)}
        passed = _passed_otherwise(spec, variant)
        for p in params.values():
            if not p.define or len(p.values) < 2 or p.name in passed:
                continue
            key = f"{'params' if p.tier == 1 else 'switches'}.{p.name}"
            where.setdefault(p.define_name, key)
            if p.define_name in tokens or _outside(p.define_name, libraries):
                read_any.add(p.define_name)
        offered.update(dict.fromkeys(macros_read(texts.values())))
        files_shown += [_shown(spec.root, f) for f in texts if _shown(spec.root, f) not in files_shown]
    unread = [name for name in where if name not in read_any]
    if not judged or not unread:
        return None
    names = [n for n in offered if n not in unread]
    close = [c for c in (did_you_mean(n, names) for n in unread) if c]
    if len(unread) == 1:
        lead = f"{where[unread[0]]}: -D{unread[0]} is read by no source of the build"
    else:
        lead = f"{', '.join(f'{where[n]} (-D{n})' for n in unread)}: read by no source of the build"
    files = ", ".join(files_shown[:4]) + (f" and {len(files_shown) - 4} more" if len(files_shown) > 4 else "")
    said = ", ".join(names[:_SHOWN]) + (" …" if len(names) > _SHOWN else "") if names else "no macro at all"
    return (f"{spec.label}: {lead} ({files} and what they include), so every value would build the same "
            f"program; the sources read {said}" + (f" — did you mean {', '.join(dict.fromkeys(close))}?" if close else ""))


def _build_of(spec, variant) -> tuple[list[str], list[str]] | None:
    """(sources, the compiler's argv) of a variant when a known compiler builds them, else None."""
    if spec.kernel is not None:
        k = spec.kernel
        if not k.defines:
            return None
        return [str(k.source)], ["nvcc", *k.flags]
    argv = list(variant.build_command if variant.build_command is not None else spec.build.command)
    sources = list(variant.sources if variant.sources is not None else spec.build.sources)
    if not argv or not sources or not _COMPILER.match(Path(argv[0]).name):
        return None
    # the files the command compiles or includes itself (-include), listed in sources or not
    named = [a for i, a in enumerate(argv[1:], 1) if "{" not in a and not a.startswith("-")
             and (Path(a).suffix.lower() in _SOURCE_SUFFIXES or argv[i - 1] in ("-include", "--pre-include"))]
    return list(dict.fromkeys([*sources, *named])), argv


def _passed_otherwise(spec, variant) -> set[str]:
    """The parameters that reach the program another way than their own -D."""
    templates = [*(variant.build_command if variant.build_command is not None else spec.build.command),
                 *(variant.run_command if variant.run_command is not None else spec.run.command),
                 *spec.run.env.values(), *spec.build.env.values(), *(a for s in spec.shape_list() for a in s.args)]
    out = {m.group(1) for t in templates for m in _PLACEHOLDER.finditer(t)}
    if spec.kernel is not None:
        k = spec.kernel
        out |= set(_PLACEHOLDER.findall(k.name))
        for expr in (*k.grid, *k.block, k.smem):
            out |= set(expr.names) if expr is not None else set()
    # a derived value passed as -D (or named in a command) passes on what it is computed from
    derived = {d.name: d for d in spec.derived}
    used = [d for d in spec.derived if d.define or d.name in out]
    seen: set[str] = set()
    while used:
        d = used.pop()
        if d.name in seen:
            continue
        seen.add(d.name)
        for name in d.expr.names:
            out.add(name)
            if name in derived:
                used.append(derived[name])
    return out


def _read(root: Path, sources: Sequence[str], argv: Sequence[str]) -> tuple[dict[Path, str] | None, set[str]]:
    """The text of the sources and the headers they include (by quotes beside the file or in a
    folder of the command; by angle brackets in a folder of the command), and the libraries
    included by angle brackets that were not found (their first path part, upper-cased);
    (None, ...) when a listed source is not there."""
    dirs = [root / d for d in _folders(argv)]
    todo = []
    for s in sources:
        path = (root / s)
        if not path.is_file():
            return None, set()
        todo.append(path)
    computed = False
    out: dict[Path, str] = {}
    libraries: set[str] = set()
    while todo and len(out) < _MAX_FILES:
        path = todo.pop()
        try:
            path = path.resolve()
            if path in out or path.stat().st_size > _MAX_BYTES:
                continue
            text = path.read_text(errors="replace")
        except OSError:
            continue
        out[path] = text
        computed = computed or bool(_COMPUTED.search(text))
        for quoted, angled in _INCLUDE.findall(text):
            name = quoted or angled
            bases = [path.parent, *dirs] if quoted else dirs
            found = next((b / name for b in bases if (b / name).is_file()), None)
            if found is not None:
                todo.append(found)
            elif angled:
                libraries.add(re.split(r"[/._]", angled, maxsplit=1)[0].upper())
    if computed:  # a header named by a macro (#include TILE_HEADER) may read anything
        return None, set()
    return out, libraries


def _folders(argv: Sequence[str]) -> list[str]:
    """The -I, -iquote, -isystem and --include-path folders of a command, placeholders left out."""
    out = []
    for i, a in enumerate(argv):
        for flag in ("-I", "-iquote", "-isystem", "--include-path"):
            if a == flag and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(flag) and len(a) > len(flag) and not (flag == "-I" and a.startswith("-i")):
                out.append(a[len(flag):].lstrip("="))
    return [d for d in out if "{" not in d]


def _outside(name: str, libraries: Iterable[str]) -> bool:
    """Whether a header outside the sources may read ``name`` (see the module's docstring)."""
    if name.startswith("_") or name == "NDEBUG":
        return True
    return any(name == lib or name.startswith(lib + "_") for lib in libraries if lib)


def macros_read(texts: Iterable[str]) -> list[str]:
    """The macro names the sources' conditionals read, include guards and reserved names aside."""
    out: dict[str, None] = {}
    for text in texts:
        found = scan(text)
        empty = {d.name for d in found.defines if not d.value}  # include guards, flags defined here
        for d in found.directives:
            if d.keyword in _CONDITION:
                for name in _TOKEN.findall(d.rest):
                    if name != "defined" and not name.startswith("_") and name not in empty and not name.isdigit():
                        out.setdefault(name)
    return list(out)


def rename_hint(name: str, read: list[str], prefix: str) -> str:
    """How to name the macro apart: a name the sources read as a macro for it (K10_BM for BM),
    never one they do not read (its every value would build the same program)."""
    base = name[len(prefix):] if prefix and name.startswith(prefix) else name
    fits = [m for m in read if m != name and (m.endswith("_" + base) or m.startswith(base + "_"))]
    if fits:
        macro = fits[0]
        tail = macro.endswith("_" + base) and macro[: -len(base)]
        return (f"give the macro the name the sources read for it, define = \"{macro}\""
                + (f" (or [sweep] define_prefix = \"{tail}\")" if tail and not prefix else ""))
    return (f"give the macro another name, one a source reads: none reads a macro for {base} yet (make the "
            f"value a guarded macro with its own name, e.g. ksweep guard FILE NAME --convert for a constant)")


def _shown(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return path.name
