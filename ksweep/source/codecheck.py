"""``ksweep guard --check``: build a source as it is and as guarded, with the same command,
and compare the code the two builds generated.

The command is the user's own (``nvcc -cubin -arch=sm_90a -o k.cubin k.cu``, ``gcc -c -o
k.o k.c``); it must name the source. Each build compiles a temporary copy of one version,
written beside the original (so that ``#include "…"`` finds the same headers) and starting
with ``#line 1 "<the source as the command names it>"`` (so that ``__FILE__``, assertions
and debug information name the original, in both builds alike); ``-o`` is pointed at a
temporary folder. ``SOURCE_DATE_EPOCH`` is fixed, so ``__DATE__``/``__TIME__`` agree.

The outputs are compared by what their code depends on (``elf/code.py``: each function's
bytes and relocations, the loaded sections, a cubin's kernel attributes, the symbols),
not byte for byte: debug information, notes and the compiler's signature are left out.
A file that is not ELF is compared byte for byte. Where they differ, the differing
functions are disassembled (``cuobjdump -sass`` for a cubin, ``objdump -d -r`` otherwise,
when on PATH), addresses and encodings stripped, and the first lines that differ shown.
"""

from __future__ import annotations

import difflib
import os
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import SourceError
from ..process import ProcessRegistry, at_once, pid_alive, run_process
from ..elf.code import Difference, compare, is_cubin, is_elf, units
from .files import encode_source

DEFAULT_TIMEOUT = 300.0
MAX_FUNCTIONS_SHOWN = 3
MAX_LINES_SHOWN = 30


@dataclass(frozen=True)
class CheckReport:
    """What ``check`` found: the same code, or where it differs."""

    identical: bool
    what: str  # "SASS of a cubin", "object code", "the output file"
    differences: tuple[Difference, ...] = ()
    listing: str = ""  # the first differing instructions, '' when no disassembler was found
    failed: str | None = None  # the guarded copy did not build: the compiler's first error
    note: str = ""  # why no listing

    @property
    def summary(self) -> str:
        """The verdict, in one line."""
        if self.failed is not None:
            return f"the guarded file does not build: {self.failed}"
        return f"the generated code is {'identical' if self.identical else 'different'} ({self.what})"

    def details(self) -> list[str]:
        """Where the code differs: the units, then the first differing instructions."""
        out = [f"  {d.unit}: {d.detail}" for d in self.differences[:20]]
        if len(self.differences) > 20:
            out.append(f"  … and {len(self.differences) - 20} more")
        if self.listing:
            out += self.listing.rstrip("\n").splitlines()
        elif self.note and self.differences:
            out.append(f"  ({self.note})")
        return out


def check(path: str | Path, before: str, after: str, command: Sequence[str], *, cwd: str | Path | None = None,
          timeout: float = DEFAULT_TIMEOUT) -> CheckReport:
    """Build ``before`` and ``after`` (two versions of the source at ``path``) with
    ``command`` and compare the generated code."""
    path = Path(path)
    cwd = Path(cwd or os.getcwd())
    command = list(command)
    if not command:
        raise SourceError("--check needs a build command after it: --check -- nvcc -cubin -o k.cubin k.cu")
    where = [i for i, a in enumerate(command) if _same_file(cwd / a, path)]
    if not where:
        raise SourceError(f"the build command does not name {path}: --check builds temporary copies of it "
                          f"in its place (give the command that compiles it, e.g. gcc -c -o k.o {path.name})")
    named = command[where[0]]
    _remove_stale_copies(path)
    suffix = Path(_output(command) or "").suffix
    with tempfile.TemporaryDirectory(prefix="ksweep-guard-") as tmp:
        outputs = (Path(tmp) / f"original{suffix}", Path(tmp) / f"guarded{suffix}")
        copies = []
        try:
            for text in (before, after):
                _copy_beside(path, text, named, copies)
            env = {"SOURCE_DATE_EPOCH": str(int(path.stat().st_mtime))}
            # the two builds at once: a large kernel takes nvcc minutes
            # (Ctrl-C or SIGTERM stops the compilers, then the copies are removed)
            builds = ProcessRegistry()
            first, second = at_once(lambda co: _build(command, where, *co, cwd, env, timeout, builds),
                                    list(zip(copies, outputs)), 2, builds)
        finally:
            for copy in copies:
                copy.unlink(missing_ok=True)
        if first is not None:
            raise SourceError(f"the build command fails on {path} as it is: {first}")
        if second is not None:
            return CheckReport(identical=False, what="", failed=second)
        return _compare(outputs[0].read_bytes(), outputs[1].read_bytes(), *outputs)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and a.resolve() == b.resolve()
    except OSError:
        return False


def _copy_prefix(path: Path, pid: int | str = "") -> str:
    """The start of the name of a copy of ``path`` that the check of process ``pid`` makes
    (without ``pid``: what every copy's name starts with, its pid next)."""
    return f".{path.stem}.ksweep-" + (f"{pid}-" if pid != "" else "")


def _remove_stale_copies(path: Path) -> None:
    """The copies beside ``path`` of a check whose process is gone (killed before it could
    remove them: SIGKILL, a machine reset) are removed; each copy's name holds its pid."""
    for copy in path.parent.glob(f"{_copy_prefix(path, '*')}*{path.suffix}"):
        pid = copy.name[len(_copy_prefix(path)):].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            copy.unlink(missing_ok=True)




def _copy_beside(path: Path, text: str, named: str, copies: list[Path]) -> None:
    """A temporary copy of ``text`` beside ``path``, whose lines and __FILE__ are the original's.
    Its name goes into ``copies`` (whose every file the caller removes) before the file is
    made: a stop (SIGTERM, Ctrl-C) landing between the two leaves nothing behind. A name
    taken already holds this process's id: a copy of an earlier check of a process that had
    this id, which may go too."""
    name = named.replace("\\", "\\\\").replace('"', '\\"')
    body = f'#line 1 "{name}"\n' + text.removeprefix("\ufeff")
    for _ in range(100):
        copy = path.parent / f"{_copy_prefix(path, os.getpid())}{secrets.token_hex(6)}{path.suffix}"
        copies.append(copy)
        try:
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise SourceError(f"cannot write a temporary copy of {path.name} beside it (--check builds it there "
                              f"so that its #include lines find the same files): {exc.strerror or exc}") from None
    else:
        raise SourceError(f"cannot write a temporary copy of {path.name} beside it: every name tried is taken")
    with os.fdopen(fd, "wb") as f:
        f.write(encode_source(body))


_OUTPUT_FLAGS = ("-o", "--output-file")


def _output_at(argv: Sequence[str]) -> tuple[int, str] | None:
    """(index, form) of the command's output option: form "next" (-o X), "glued" (-oX) or
    "equals" (--output-file=X); None when it has none."""
    for i, a in enumerate(argv):
        if a in _OUTPUT_FLAGS and i + 1 < len(argv):
            return i, "next"
        if a.startswith("--output-file="):
            return i, "equals"
        if a.startswith("-o") and len(a) > 2 and a != "-odir" and not a.startswith("-o="):
            return i, "glued"
    return None


def _output(argv: Sequence[str]) -> str | None:
    """The output path the command names."""
    found = _output_at(argv)
    if found is None:
        return None
    i, form = found
    return argv[i + 1] if form == "next" else argv[i].split("=", 1)[1] if form == "equals" else argv[i][2:]


def _argv(command: list[str], where: list[int], source: Path, output: Path) -> list[str]:
    """The command with the copy in place of the source and ``output`` in place of its -o."""
    argv = list(command)
    for i in where:
        argv[i] = str(source)
    found = _output_at(argv)
    if found is None:
        return argv + ["-o", str(output)]
    i, form = found
    if form == "next":
        argv[i + 1] = str(output)
    else:
        argv[i] = f"--output-file={output}" if form == "equals" else f"-o{output}"
    return argv


def _build(command, where, source: Path, output: Path, cwd: Path, env, timeout: float,
           registry: ProcessRegistry | None = None) -> str | None:
    """None when the build wrote its output; else what went wrong, in one line."""
    outcome = run_process(_argv(command, where, source, output), cwd=cwd, timeout=timeout, env=env,
                          output_limit=1024 * 1024, registry=registry)
    if outcome.error:
        return outcome.error
    if outcome.timed_out:
        return f"timed out after {timeout:g} s"
    if outcome.returncode != 0:
        return f"exit {outcome.returncode}: {_first_error(outcome.stderr + outcome.stdout)}"
    if not output.is_file():
        return "the command wrote no output file at its -o path"
    return None


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = next((ln for ln in lines if re.search(r"\berror\b", ln, re.I)), lines[0] if lines else "no message")
    return line[:300]


def _compare(a: bytes, b: bytes, path_a: Path, path_b: Path) -> CheckReport:
    if not (is_elf(a) and is_elf(b)):
        if a == b:
            return CheckReport(identical=True, what="the output file, byte for byte")
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        diff = Difference("the output file", f"bytes differ from offset 0x{at:x} of {len(a)}")
        return CheckReport(identical=False, what="the output file, byte for byte", differences=(diff,))
    cubin = is_cubin(a)
    what = "SASS of a cubin" if cubin else "object code"
    try:
        differences = compare(units(a), units(b))
    except ValueError as exc:
        raise SourceError(f"cannot read the build's output: {exc}") from None
    if not differences:
        return CheckReport(identical=True, what=what)
    functions = [d.function for d in differences if d.function][:MAX_FUNCTIONS_SHOWN]
    listing, note = ("", "")
    if functions:
        listing, note = _listing(path_a, path_b, functions, cubin)
    return CheckReport(identical=False, what=what, differences=tuple(differences), listing=listing, note=note)


def _listing(a: Path, b: Path, functions: list[str], cubin: bool) -> tuple[str, str]:
    tool = ["cuobjdump", "-sass"] if cubin else ["objdump", "-d", "-r", "--no-show-raw-insn"]
    if shutil.which(tool[0]) is None:
        return "", f"{tool[0]} is not on PATH: no instruction listing"
    texts = []
    for path in (a, b):
        outcome = run_process([*tool, str(path)], cwd=path.parent, timeout=120, output_limit=64 * 1024 * 1024)
        if outcome.returncode != 0:
            return "", f"{tool[0]} failed: {_first_error(outcome.stderr)}"
        texts.append(split_functions(outcome.stdout, cubin))
    out = []
    for name in functions:
        before, after = texts[0].get(name, []), texts[1].get(name, [])
        diff = list(difflib.unified_diff(before, after, f"{name} (original)", f"{name} (guarded)", n=2,
                                         lineterm=""))
        if diff:
            out += diff[:MAX_LINES_SHOWN] + ([f"… {len(diff) - MAX_LINES_SHOWN} more lines"]
                                             if len(diff) > MAX_LINES_SHOWN else [])
    return "\n".join(out), ""


_OBJDUMP_FUNCTION = re.compile(r"^[0-9a-fA-F]+ <(.+)>:$")
_OBJDUMP_LINE = re.compile(r"^\s+[0-9a-fA-F]+:\s+(.*\S)\s*$")
_SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_SASS_LINE = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(.*?)\s*(?:/\*\s*0x[0-9a-fA-F]+\s*\*/)?\s*$")


def split_functions(text: str, sass: bool) -> dict[str, list[str]]:
    """A disassembly (``cuobjdump -sass`` or ``objdump -d -r``) as lines per function, with
    addresses and instruction encodings stripped: two builds of the same code read alike."""
    head, line_re = (_SASS_FUNCTION, _SASS_LINE) if sass else (_OBJDUMP_FUNCTION, _OBJDUMP_LINE)
    out: dict[str, list[str]] = {}
    current = None
    for raw in text.splitlines():
        m = head.match(raw)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        m = line_re.match(raw)
        if current is not None and m and m.group(1):
            current.append(" ".join(m.group(1).split()))
    return out
