"""Checks of a whole Spec, across its tables: which modes go together, and which files a
sweep of it reads. The loader runs them; a caller that changes a loaded spec (``ksweep
run --persistent``) runs ``check_modes`` again."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..errors import SpecError
from .model import Spec


def check_modes(spec: Spec) -> None:
    """Kernel mode runs every config in ksweep's own worker, one per GPU: it has no
    persistent host of the user's program and no harness to build."""
    if spec.kernel is None:
        return
    if spec.run.persistent:
        raise SpecError("a [kernel] spec already runs every config in one worker per GPU: drop run.persistent "
                        "(or --persistent)", path=spec.label, key="run.persistent")
    if spec.build.harness is not None:
        raise SpecError("a [kernel] spec runs its cubins in ksweep's own worker: drop [build.harness]",
                        path=spec.label, key="build.harness")


def require_sources(root: Path, sources: Iterable[str], label: str, key: str) -> None:
    """A SpecError naming the key and the first of ``sources`` (relative to root) that does not exist."""
    for rel in sources:
        if not (root / rel).exists():
            raise SpecError(f"source '{rel}' does not exist (paths are relative to the spec file)",
                            path=label, key=key)
