"""``ksweep guard``: a source's ``#define NAME value`` lines wrapped in ``#ifndef NAME``
guards (``source/guard.py``), so that ``-D`` can set them; ``--check``: the source built as
it is and as guarded, and the generated code compared (``source/codecheck.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..source.codecheck import DEFAULT_TIMEOUT, check
from ..source.files import read_source, write_source
from ..source.guard import Guarded, guard, unified_diff

__all__ = ["DEFAULT_TIMEOUT", "Guarding", "check_code", "guard_file", "write"]


@dataclass(frozen=True)
class Guarding:
    path: Path
    text: str  # the source as it is
    result: Guarded  # the defines guarded, those left and why, the guarded text

    def diff(self) -> str:
        """The change as a unified diff."""
        return unified_diff(self.text, self.result.text, str(self.path))


def guard_file(path: str | Path, names: Sequence[str] | None = None) -> Guarding:
    """Guard the defines ``names`` of the source at ``path`` (None: every object-like define
    with a value); nothing is written."""
    path = Path(path)
    text = read_source(path)
    return Guarding(path, text, guard(text, names, label=str(path)))


def check_code(g: Guarding, command: Sequence[str], *, against: str | Path | None = None,
               timeout: float = DEFAULT_TIMEOUT):
    """Build the source as guarded and as it is (or as ``against``, the file before the user's
    own edits) with ``command`` and compare the generated code: codecheck's report."""
    before = read_source(against) if against else g.text
    return check(g.path, before, g.result.line_mapped, command, timeout=timeout)


def write(target: str | Path, text: str) -> None:
    """Write the guarded source (its line endings kept)."""
    write_source(target, text)
