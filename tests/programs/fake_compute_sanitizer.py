#!/usr/bin/env python3
"""A stand-in for NVIDIA's compute-sanitizer, for tests without a GPU: it runs the program
given after its options, passes its output on, and reports as the real tool does, from the
recorded outputs of tests/data/sanitizer: the finding of the tool asked for (--tool) when the
program printed "planted fault", else a clean summary. Each call appends "<tool> <the
KSWEEP_SANITIZER the program got>" to $FAKE_SANITIZER_LOG when set."""

import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "sanitizer"
FOUND = {"memcheck": "memcheck_oob.txt", "racecheck": "racecheck_race.txt", "initcheck": "initcheck_uninit.txt",
         "synccheck": "synccheck_barrier.txt"}
VALUED = {"--tool", "--target-processes", "--show-backtrace", "--print-limit"}


def main(argv):
    tool, i = "memcheck", 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] == "--tool":
            tool = argv[i + 1]
        i += 2 if argv[i] in VALUED else 1
    program = argv[i:]
    if os.environ.get("FAKE_SANITIZER_LOG"):
        with open(os.environ["FAKE_SANITIZER_LOG"], "a") as log:
            log.write(f"{tool} {os.environ.get('KSWEEP_SANITIZER', '-')}\n")
    print("========= COMPUTE-SANITIZER", flush=True)
    done = subprocess.run(program, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if "planted fault" in done.stderr:
        found = [ln for ln in (DATA / FOUND[tool]).read_text().splitlines() if ln.startswith("=========")]
        print("\n".join(ln for ln in found if "COMPUTE-SANITIZER" not in ln))
    elif tool == "racecheck":
        print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
    else:
        print("========= ERROR SUMMARY: 0 errors")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
