"""ksweep.h, the header a harness includes for its measurement (docs/harness.md)."""

from pathlib import Path


def include_dir() -> Path:
    """The folder that holds ksweep.h: ``-I$(ksweep include)``, or ``-I{ksweep_include}`` in a spec."""
    return Path(__file__).resolve().parent
