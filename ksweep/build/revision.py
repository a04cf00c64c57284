"""The source revision a result was measured on: what ``ksweep history`` groups results by.

In a git work tree: the commit (12 hex digits), plus ``+`` and a digest of the uncommitted
changes to tracked files under the spec's folder (and of listed sources git does not
track) when there are any (``3f2a9c1d0b7e+5d41402a``), so an edited-but-not-committed
source is a revision of its own and the same edit is the same revision again. Outside git: ``sha:`` and a digest of the contents of the sources the
spec lists. None when neither can be had (no sources listed, outside git).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Iterable


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def source_revision(root: Path, sources: Iterable[Path]) -> str | None:
    root = Path(root)
    if shutil.which("git") is not None:
        commit = _git(root, "rev-parse", "HEAD")
        if commit:
            # changes to tracked files under the spec's folder, staged or not, and the listed
            # sources git does not track (a results database beside the spec is neither)
            diff = _git(root, "diff", "HEAD", "--no-color", "--", ".") or ""
            listed = [Path(s) for s in sources]
            tracked = set((_git(root, "ls-files", "--full-name", "--", *map(str, listed)) or "").split("\n")) \
                if listed else set()
            top = (_git(root, "rev-parse", "--show-toplevel") or "").strip()
            extra = ""
            for f in sorted(listed):
                try:
                    rel = str(Path(f).resolve().relative_to(Path(top).resolve())) if top else str(f)
                except ValueError:
                    rel = str(f)
                if rel not in tracked:
                    extra += f"{Path(f).name}\0{_digest_file(f)}\n"
            rev = commit.strip()[:12]
            if diff or extra:
                rev += "+" + hashlib.sha256((diff + "\0" + extra).encode()).hexdigest()[:8]
            return rev
    files = [Path(s) for s in sources]
    if not files:
        return None
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(str(f.name).encode() + b"\0" + _digest_file(f).encode() + b"\n")
    return "sha:" + h.hexdigest()[:12]


def _digest_file(path: Path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "missing"
