"""compute-sanitizer on this host: finding it, its command line, one tool's run of a program.

Each tool (memcheck, racecheck, initcheck, synccheck) checks the program in a run of its
own, with a timeout of its own: a tool that hangs or is slow costs its own budget, never
another's. The program is the config's own (program mode: its run command; kernel mode: one
checked launch in a fresh process, ``kernel/harden_one.py``), run with ``KSWEEP_SANITIZER``
set to the tool's name, which ``ksweep.h`` reads to skip its timing loop (a sanitizer slows
a kernel 10-100 times). What the tool said is read back by ``verify/sanitizer.py``.

Where the build names the config's own kernels (ptxas's entry functions, chosen by ``[build]
kernels``), memcheck, racecheck and synccheck check only those (one kernel: its first launch
only; initcheck checks the whole program: see WHOLE_PROGRAM): the rest of the program
(a cuBLAS reference, the harness's fill and compare kernels, a hand-written timing loop's
further launches) runs unchecked, at close to its own speed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping, Sequence

from ..process import ProcessRegistry, run_process
from ..verify.sanitizer import PREFIX, REPORT_LINES, ToolRun, parse
from .classify import last_lines

ENV = "KSWEEP_SANITIZER"  # set to the tool's name in the program's environment under a sanitizer
HINT = ("compute-sanitizer was not found (on the PATH or in /usr/local/cuda/bin): it comes with the CUDA "
        "toolkit; put the toolkit's bin folder on the PATH, or ksweep run --no-harden to sweep without it")


def find(given: str | None = None) -> str | None:
    """The compute-sanitizer program: ``given`` (a path, or a name on the PATH) when it is an
    executable, else compute-sanitizer on the PATH or in the CUDA toolkit's usual places."""
    if given is not None:
        found = shutil.which(given)
        return str(Path(found).absolute()) if found else None
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        path = Path(home) / "bin" / "compute-sanitizer"
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


# initcheck follows each byte's initialisation through every kernel and copy of the program: a
# kernel it does not check (the harness's fill kernel) would leave the inputs it wrote looking
# unwritten, so it checks the whole program (seen on SGEMM: every leader "16284 errors")
WHOLE_PROGRAM = frozenset({"initcheck"})


def own_entries(build) -> tuple[str, ...]:
    """The mangled names of the kernels a config's build compiled and ``[build] kernels``
    judges (ptxas's entry functions); () when the build named none (no ``-Xptxas -v``, a gcc
    build) or a name the tool's filter cannot carry: the tool then checks every kernel."""
    names = tuple(dict.fromkeys(k.name for k in build.report.kernels if k.judged and k.name))
    if any(not n or "," in n or "=" in n or n != n.strip() for n in names):
        return ()
    return names


def tool_argv(exe: str, tool: str, program: Sequence[str], only: Sequence[str] = ()) -> list[str]:
    """The command line of one tool's run: every process the program starts is checked (a
    run command through ``sh -c`` too), host backtraces left out (the finding, its kernel and
    line are what the verdict says). ``only``: the only kernels checked (their mangled
    names, ``own_entries``): one kernel, its first launch; several, every launch of them
    (compute-sanitizer counts launches over all its filters); initcheck checks every kernel
    (WHOLE_PROGRAM)."""
    filters: list[str] = []
    if only and tool not in WHOLE_PROGRAM:
        for name in only:
            filters += ["--kernel-name", f"kne={name}"]
        # the count is of every launch the filters match: with two kernels the first could use
        # it up, so the count is set for one kernel only (every launch of several is checked)
        if len(only) == 1:
            filters += ["--launch-count", "1"]
    return [exe, "--tool", tool, "--target-processes", "all", "--show-backtrace", "device",
            "--print-limit", "100", *filters, *program]


def run_tool(exe: str, tool: str, program: Sequence[str], *, env: Mapping[str, str], timeout: float,
             cwd: Path, registry: ProcessRegistry | None = None, only: Sequence[str] = ()) -> ToolRun | None:
    """One tool's run of ``program`` in the folder ``cwd``, read back; None when Ctrl-C stopped it."""
    out = run_process(tool_argv(exe, tool, program, only), cwd=cwd, timeout=timeout, env={**env, ENV: tool},
                      registry=registry, leftovers=True)
    if out.stopped:
        return None
    if out.error:
        return ToolRun(tool, None, returncode=None, tail=out.error, seconds=out.seconds)
    text = out.stdout + "\n" + out.stderr
    report = parse(text, tool)
    tail = last_lines("\n".join(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("=========")), 3)
    own = [ln for ln in text.splitlines() if ln.startswith(PREFIX)]
    if len(own) > REPORT_LINES:  # the first entries and the summary, the middle left out
        half = REPORT_LINES // 2
        own = [*own[:half], f"{PREFIX} [ksweep: {len(own) - 2 * half} lines left out]", *own[-half:]]
    return ToolRun(tool, report, timed_out=out.timed_out, timeout=timeout, returncode=out.returncode, tail=tail,
                   seconds=out.seconds, text="\n".join(own))


def run_plain(program: Sequence[str], *, env: Mapping[str, str], timeout: float, cwd: Path,
              registry: ProcessRegistry | None = None):
    """``program`` run once without a tool (kernel mode's further inputs): its process outcome,
    None when Ctrl-C stopped it."""
    out = run_process(list(program), cwd=cwd, timeout=timeout, env=dict(env), registry=registry, leftovers=True)
    return None if out.stopped else out
