"""``ksweep include``: where ksweep.h is, for a compiler's ``-I`` (as ``pybind11 --includes``)."""

from __future__ import annotations

from ..include import include_dir


def where(flag: bool = False) -> str:
    """The folder that holds ksweep.h, or with ``flag`` as the compiler flag ``-I<folder>``."""
    return f"-I{include_dir()}" if flag else str(include_dir())
