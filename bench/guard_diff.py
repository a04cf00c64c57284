"""How long `ksweep guard FILE` takes on a source of N unguarded #defines (its diff included).

    python3 bench/guard_diff.py [N ...]      (default: 4000 20000)

Prints, per N, the seconds of the whole command (a fresh process) and of the diff alone.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [4000, 20000]
    from ksweep.source.guard import unified_diff

    for n in sizes:
        source = "".join(f"#define K{i} {i}\n" for i in range(n)) + "int main(void) { return 0; }\n"
        guarded = "".join(f"#ifndef K{i}\n#define K{i} {i}\n#endif\n" for i in range(n)) + \
            "int main(void) { return 0; }\n"
        t = time.perf_counter()
        unified_diff(source, guarded, "k.c")
        diff_s = time.perf_counter() - t
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "k.c"
            path.write_text(source)
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "ksweep.cli.main", "guard", str(path)],
                                  capture_output=True, text=True)
            command_s = time.perf_counter() - t
        print(f"{n} defines: ksweep guard {command_s:.2f} s (exit {done.returncode}), the diff alone {diff_s:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
