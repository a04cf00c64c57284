import shutil
import textwrap
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture
def program_dir(tmp_path):
    """A folder holding the test C program; returns a function that writes a spec there."""
    shutil.copy(PROGRAMS / "behaviours.c", tmp_path / "behaviours.c")

    def write(body: str, name: str = "sweep.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(body))
        return path

    write.dir = tmp_path
    return write


GCC_BUILD = """
[build]
sources = ["behaviours.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
timeout = 60
"""
