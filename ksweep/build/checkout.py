"""The sources of a stored revision, checked out again: ``ksweep check`` rebuilds its
baseline from them and measures it beside the current build.

A revision that is a commit (``build/revision.py``: 12 hex digits, no ``+``) of the git
repository that holds the spec's folder is checked out into a temporary work tree (``git
worktree add --detach``), removed again when the block ends, however it ends (``git
worktree remove``; a check killed outright leaves an entry that ``git worktree prune``
removes). Any other revision says why it cannot be checked out
(``Unavailable``): an uncommitted edit, sources outside git, a commit this clone lacks.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

GIT_SECONDS = 600.0  # a checkout of a large repository takes a while; a hung one is not waited for


class Unavailable(Exception):
    """The revision's sources cannot be checked out (the message says why)."""


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                              timeout=GIT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"git {args[0]} failed: {exc}") from None


def _why_not(revision: str | None) -> str | None:
    if not revision or revision.startswith("("):
        return "its source revision is not known (measured before ksweep recorded revisions)"
    if revision.startswith("sha:"):
        return "its sources were not in a git repository when it was swept"
    if "+" in revision:
        return (f"it was swept from uncommitted changes to {revision.split('+')[0]}: commit the sources "
                f"before sweeping so that check can rebuild them")
    if not re.fullmatch(r"[0-9a-f]{7,40}", revision):
        return f"{revision!r} is not a commit"
    return None


@contextlib.contextmanager
def checked_out(folder: Path, revision: str | None) -> Iterator[Path]:
    """The folder that is ``folder`` (in a git work tree) in a temporary work tree of
    commit ``revision``; ``Unavailable`` when there is none."""
    why = _why_not(revision)
    if why is not None:
        raise Unavailable(why)
    if shutil.which("git") is None:
        raise Unavailable("git is not installed")
    folder = Path(folder).resolve()
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise Unavailable(f"{folder} is not in a git work tree")
    top_dir = Path(top.stdout.strip()).resolve()
    commit = _git(top_dir, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    if commit.returncode != 0:
        shallow = _git(top_dir, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        raise Unavailable(f"commit {revision} is not in the repository at {top_dir}"
                          + (" (a shallow clone: fetch its history, git fetch --unshallow)" if shallow else ""))
    parent = Path(tempfile.mkdtemp(prefix="ksweep-baseline-"))
    tree = parent / "tree"
    added = None
    try:
        # no hook of the repository's runs (a post-checkout hook is the user's, for their own checkouts)
        added = _git(top_dir, "-c", f"core.hooksPath={os.devnull}", "worktree", "add", "--detach", "--force",
                     str(tree), commit.stdout.strip())
        if added.returncode != 0:
            raise Unavailable(f"git worktree add failed: {added.stderr.strip()[:300]}")
        yield tree / folder.relative_to(top_dir)
    finally:
        if added is not None and added.returncode == 0 and \
                _git(top_dir, "worktree", "remove", "--force", str(tree)).returncode != 0:
            shutil.rmtree(parent, ignore_errors=True)
            _git(top_dir, "worktree", "prune")  # its entry, now that its folder is gone
        shutil.rmtree(parent, ignore_errors=True)
