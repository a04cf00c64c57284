"""What NVIDIA's compute-sanitizer said of one run, and the hardening verdict of a config
(pure): the tool's text read back (``parse``), each tool's run summed up (``outcome``), and
the verdict of a config from its tools' runs (``verdict``): UNSAFE on a finding, else clean
when every tool ran to its summary, else incomplete (a tool that timed out, could not
attach, or printed no summary: not a finding, and not a clean bill either).

The tool prints its report on lines that start with ``=========`` (its ``--prefix``),
whatever the program prints around them. An entry starts on a line with one space after
the prefix and goes on with lines indented further, up to a bare ``=========``:

    ========= Invalid __global__ write of size 4 bytes
    =========     at vadd(float *, const float *, int)+0x70 in vadd.cu:12
    =========     by thread (255,0,0) in block (3,0,0)
    =========     Address 0x7f3a00001000 is out of bounds
    =========
    ========= ERROR SUMMARY: 1 error

racecheck puts the first access in the entry's first line (``Error: Race reported between
Write access at k(int *)+0x1c0 in race.cu:12``) and ends with ``RACECHECK SUMMARY: 1
hazard displayed (1 error, 0 warnings)``; its warnings (a race that wrote equal values)
are kept but are not findings. The ``at`` line takes every form the tool has printed:
``at k(int *)+0x70 in f.cu:12`` (with ``-lineinfo``), ``at k(int *)+0x70``, ``at 0x90 in
k(int *)``, ``at k():0x160 in f.cu:6`` and cuda-memcheck's ``at 0xc8 in f.cu:75:k(int *)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..status import Status

PREFIX = "========="
REPORT_LINES = 2000  # the tool's lines a run keeps, the first and last half (ksweep harden --output writes them)

# "ERROR SUMMARY: 8192 errors", not the line after it, "ERROR SUMMARY: 8187 errors were not printed"
_SUMMARY = re.compile(r"^ERROR SUMMARY:\s*(\d+)\s+errors?\b(?!\s+were not printed)", re.I)
_RACE_SUMMARY = re.compile(r"^RACECHECK SUMMARY:\s*(\d+)\s+hazards?\s+displayed\s*"
                          r"(?:\((\d+)\s+errors?,\s*(\d+)\s+warnings?\))?", re.I)
# what the tool says when it could not check the program at all
_TOOL_FAILURE = re.compile(r"^(?:error:\s*)?(?:internal sanitizer error|no attachable process|target application "
                           r"terminated before first instrumented|device not supported|unable to|could not|failed to|"
                           r"the application is not supported|.*is not supported)", re.I)
_PROGRAM_FAILED = re.compile(r"^(?:target application returned an error|error: process didn't terminate "
                             r"successfully|process didn't terminate successfully)", re.I)
# the first lines of the entries that are findings (any other line at an entry's start is the
# tool talking: a banner, a summary, advice)
_FINDING = re.compile(r"^(?:(?:error|warning)\s*:\s*)?(?:invalid |misaligned |out-of-range |uninitialized |program hit |"
                      r"leaked |malloc|free |hardware exception|illegal |warp |lane |device-side assert|cuda api error|"
                      r"barrier error|race reported|potential (?:raw|war|waw) hazard|divergent |sync error|"
                      r"host api memory access error)", re.I)
# the tool's own lines that are never a finding: its banner, the leak check's and the summary's words
_BANNER = re.compile(r"^(?:compute-sanitizer\b|leaked \d+ bytes|.*\bsummary:|.*\bwere not printed)", re.I)
_THREAD = re.compile(r"by thread \(([\d, ]+)\) in block \(([\d, ]+)\)")
# the lines that say where: "at k(int *)+0x70 in f.cu:12", racecheck's "... Write access at k(...)",
# its hazard form's "Read Thread (0,0,0) at 0x38 in f.cu:5:k(int *)"; not "allocation at 0x... of size"
_AT_LINE = re.compile(r"^(?:at\s|.*\baccess at\s|(?:read|write) thread\b.*\sat\s)", re.I)
_AT = re.compile(r"\bat\s+(.+?)(?:\s+\[\d+ hazards?\])?$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_LOCATION = re.compile(r"^(?P<file>[^\s:]+\.(?:cu|cuh|h|hpp|hh|cpp|cc|c|ptx)):(?P<line>\d+)(?::(?P<rest>.+))?$")


@dataclass(frozen=True)
class Finding:
    """One entry of a tool's report: what it found (its first line), in which kernel, where."""

    kind: str  # "Invalid __global__ write of size 4 bytes", "Race reported between ...", ...
    kernel: str | None = None  # "vadd(float *, const float *, int)", when the report names it
    location: str | None = None  # "vadd.cu:12", with -lineinfo (or -G)
    thread: str | None = None  # "thread (255,0,0) block (3,0,0)"
    warning: bool = False  # racecheck's warnings: reported, not a finding

    def describe(self) -> str:
        """'Invalid __global__ write of size 4 bytes in vadd(float *, int) at vadd.cu:12 (thread ... block ...)'."""
        text = self.kind
        if self.kernel and self.kernel not in text:
            text += f" in {self.kernel}"
        if self.location and self.location not in text:
            text += f" at {self.location}"
        return text + (f" ({self.thread})" if self.thread else "")


@dataclass(frozen=True)
class ToolReport:
    """One tool's report read back from a run's output."""

    tool: str
    findings: tuple[Finding, ...] = ()  # errors and warnings, in the order printed
    errors: int | None = None  # what its summary counted (None: no summary line)
    warnings: int = 0
    tool_failure: str | None = None  # the tool could not check the program: its words
    program_failed: bool = False  # it said the program ended with an error
    # entries whose first line is none of the findings this parser knows (a banner, advice, or a
    # finding of a tool's newer kind): what is said of errors the summary counted but no entry read
    unread: tuple[str, ...] = ()

    @property
    def summary_seen(self) -> bool:
        return self.errors is not None

    @property
    def errors_found(self) -> list[Finding]:
        return [f for f in self.findings if not f.warning]


def parse(text: str, tool: str) -> ToolReport:
    """The tool's report in a run's output (stdout and stderr together, in any order)."""
    entries: list[list[str]] = []
    unread: list[str] = []
    errors: int | None = None
    warnings = 0
    failure, failed = None, False
    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue
        body = raw[len(PREFIX):]
        if not body.strip():
            entries.append([])  # a bare prefix ends an entry
            continue
        if body.startswith(" ") and not body.startswith("  "):  # an entry's first line
            line = body.strip()
            m, race = _SUMMARY.match(line), _RACE_SUMMARY.match(line)
            if m:
                errors = (errors or 0) + int(m.group(1))
            elif race:
                hazards, errs, warns = race.groups()
                errors = (errors or 0) + int(errs if errs is not None else hazards)
                warnings += int(warns or 0)
            elif _PROGRAM_FAILED.match(line):
                failed = True
            elif _TOOL_FAILURE.match(line):
                failure = failure or line
            elif _FINDING.match(line):
                entries.append([line])
                continue
            elif not _BANNER.match(line):
                unread.append(line)
            entries.append([])
        elif entries and entries[-1]:
            entries[-1].append(body.strip())
    findings = tuple(_finding(e) for e in entries if e)
    return ToolReport(tool, findings, errors, warnings, failure, failed, tuple(unread))


def _finding(lines: list[str]) -> Finding:
    head = lines[0]
    warning = bool(re.match(r"^warning\b", head, re.I))
    kind = re.sub(r"^(?:error|warning)\s*:\s*", "", head, flags=re.I)
    kernel = location = thread = None
    for line in lines:  # the first line holds racecheck's first access; the others the entry's details
        if thread is None and (m := _THREAD.search(line)):
            thread = f"thread ({m.group(1).replace(' ', '')}) block ({m.group(2).replace(' ', '')})"
        if kernel is None and location is None and _AT_LINE.match(line) and (m := _AT.search(line)):
            kernel, location = _where(m.group(1))
    return Finding(kind, kernel, location, thread, warning)


def _where(text: str) -> tuple[str | None, str | None]:
    """(kernel, file:line) of an ``at`` clause, in each form the tool prints (module docstring)."""
    text = text.strip()
    code, _, place = text.partition(" in ")
    code, place = code.strip(), place.strip()
    if _HEX.match(code):  # at 0x90 in k(int *) | at 0xc8 in f.cu:75:k(int *)
        m = _LOCATION.match(place)
        if m:
            return (m.group("rest") or None), f"{m.group('file')}:{m.group('line')}"
        return (place or None), None
    kernel = re.sub(r"(?:\+0x[0-9a-fA-F]+|:0x[0-9a-fA-F]+)$", "", code) or None  # k(int *)+0x70, k():0x160
    m = _LOCATION.match(place) if place else None
    return kernel, (f"{m.group('file')}:{m.group('line')}" if m else (place or None))


# -- one tool's run, and a config's verdict ---------------------------------------------------------------
@dataclass(frozen=True)
class ToolRun:
    """What happened when one tool ran the config's program: its report, or why there is none."""

    tool: str
    report: ToolReport | None = None  # None: it did not run (timed out before its summary, could not start)
    timed_out: bool = False
    timeout: float | None = None
    returncode: int | None = None
    tail: str = ""  # the last lines of the run's output, for a run that ended without a report
    seconds: float | None = None
    text: str = ""  # the tool's own lines (its report): at most REPORT_LINES, its first and last


def outcome(run: ToolRun) -> tuple[str, str]:
    """("clean" | "unsafe" | "incomplete", what to say) of one tool's run."""
    report = run.report
    if report is not None and report.errors_found:
        first = report.errors_found[0]
        count = report.errors if report.errors else len(report.errors_found)
        return "unsafe", f"{first.describe()}" + (f" ({count} errors)" if count > 1 else "")
    if report is not None and report.tool_failure and not report.unread and (report.errors or 0) <= 1:
        # the tool could not check the program, and its summary counts that failure as its one error
        return "incomplete", f"could not check the program: {report.tool_failure}"
    if report is not None and report.errors:  # a summary counting errors whose entries were not read
        said = f"{report.errors} error{'s' * (report.errors != 1)}"
        return "unsafe", (f"{said}; the tool's first entry: {report.unread[0]}" if report.unread
                          else f"{said} (ksweep harden --output DIR keeps the tool's report)")
    if run.timed_out:
        return "incomplete", f"no summary within {run.timeout:g} s (timed out)" if run.timeout else "timed out"
    if report is None:
        return "incomplete", "did not run" + (f": {run.tail}" if run.tail else "")
    if report.tool_failure:
        return "incomplete", f"could not check the program: {report.tool_failure}"
    if not report.summary_seen:
        return "incomplete", f"no summary (exit {run.returncode})" + (f": {run.tail}" if run.tail else "")
    if report.program_failed or (run.returncode not in (0, None)):
        return "incomplete", f"the program failed under the tool (exit {run.returncode})" + (
            f": {run.tail}" if run.tail else "")
    return "clean", "clean" + (f" ({report.warnings} warning{'s' * (report.warnings != 1)})"
                               if report.warnings else "")


@dataclass(frozen=True)
class Verdict:
    """A config's hardening by the sanitizers: ``verdict`` "clean", "unsafe" or "incomplete";
    ``tools`` the tools that ran, each with what it said; ``status``: UNSAFE on a finding
    (else None: the config keeps its status), with ``message`` the first finding."""

    verdict: str
    tools: Mapping[str, str] = field(default_factory=dict)
    message: str = ""

    @property
    def status(self) -> Status | None:
        return Status.UNSAFE if self.verdict == "unsafe" else None


def verdict(runs: Sequence[ToolRun]) -> Verdict:
    """The verdict of a config from its tools' runs (in the order they ran): unsafe on the
    first finding, clean when every tool ran clean, else incomplete (why: the first tool
    that did not finish)."""
    said = {r.tool: outcome(r) for r in runs}
    tools = {tool: text for tool, (_, text) in said.items()}
    unsafe = [(tool, text) for tool, (kind, text) in said.items() if kind == "unsafe"]
    if unsafe:
        tool, text = unsafe[0]
        return Verdict("unsafe", tools, f"{tool}: {text}")
    if runs and all(kind == "clean" for kind, _ in said.values()):
        return Verdict("clean", tools, "clean: " + ", ".join(said))
    if not runs:
        return Verdict("incomplete", tools, "no tool ran")
    tool, (_, text) = next((t, s) for t, s in said.items() if s[0] != "clean")
    return Verdict("incomplete", tools, f"{tool}: {text}")


def inputs_verdict(returncode: int | None, stdout: str, timed_out: bool = False,
                   timeout: float | None = None) -> tuple[str, Status | None, str]:
    """(verdict, status, message) of kernel mode's further inputs (``kernel/harden_one.py``'s
    answer: its last JSON line): "passed"; "failed", a CHECKSUM_MISMATCH (outputs that are wrong
    for some inputs are wrong); "incomplete" when it did not answer (a timeout, a crash, an
    error: said, no status)."""
    import json

    if timed_out:
        return "incomplete", None, f"no answer within {timeout:g} s" if timeout else "timed out"
    answer = None
    for line in reversed(stdout.strip().splitlines()):
        try:
            answer = json.loads(line)
            break
        except ValueError:
            continue
    if not isinstance(answer, dict):
        return "incomplete", None, f"no answer (exit {returncode})"
    if not answer.get("ok"):
        return "incomplete", None, str(answer.get("error", "failed"))
    skipped = answer.get("skipped") or []
    if answer.get("failed"):
        return "failed", Status.CHECKSUM_MISMATCH, f"hardening: {answer['failed']}"
    checked = ", ".join(answer.get("checked") or []) or "nothing compared"
    return "passed", None, f"passed: {checked}" + (f"; not compared (no reference): {', '.join(skipped)}"
                                                    if skipped else "")
