"""``ksweep guard``: a source's ``#define NAME value`` lines wrapped in ``#ifndef NAME``
guards (``source/guard.py``), so that ``-D`` can set them, and its constants made guarded
macros (``--convert``); the settings that are not macros said (``source/settings.py``);
``--check``: the source built as it is and as guarded, and the generated code compared
(``source/codecheck.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..source.codecheck import DEFAULT_TIMEOUT, check
from ..source.files import read_source
from ..source.guard import Guarded, guard, unified_diff
from ..source.settings import Setting, settings
from .outputs import Output, checked_output

__all__ = ["DEFAULT_TIMEOUT", "Guarding", "check_code", "guard_file", "guarded_output", "not_macros"]


@dataclass(frozen=True)
class Guarding:
    path: Path
    text: str  # the source as it is
    result: Guarded  # the defines guarded, those left and why, the guarded text

    def diff(self) -> str:
        """The change as a unified diff."""
        return unified_diff(self.text, self.result.text, str(self.path))


def guard_file(path: str | Path, names: Sequence[str] | None = None, convert: Sequence[str] = ()) -> Guarding:
    """Guard the defines ``names`` of the source at ``path`` (None: every object-like define
    with a value, unless ``convert`` names constants to make guarded macros); nothing is written."""
    path = Path(path)
    text = read_source(path)
    return Guarding(path, text, guard(text, names, label=str(path), convert=convert))


def not_macros(path: str | Path) -> list[Setting]:
    """The settings of the source at ``path`` that are not macros (source/settings.py)."""
    return settings(read_source(path))


def check_code(g: Guarding, command: Sequence[str], *, against: str | Path | None = None,
               timeout: float = DEFAULT_TIMEOUT):
    """Build the source as guarded and as it is (or as ``against``, the file before the user's
    own edits) with ``command`` and compare the generated code: codecheck's report."""
    before = read_source(against) if against else g.text
    return check(g.path, before, g.result.line_mapped, command, timeout=timeout)


def guarded_output(source: str | Path, *, output: str | Path | None = None, force: bool = False,
                   against: str | Path | None = None) -> Output:
    """Where the guarded source goes, checked before any work: ``output`` (an existing file
    only with ``force``; never the source or ``against``), else the source itself (in place).
    Its ``write`` keeps the line endings and replaces the file at once."""
    if output is None:
        return checked_output(source, option="--in-place", force=True)
    return checked_output(output, force=force, reads=[p for p in (source, against) if p])
