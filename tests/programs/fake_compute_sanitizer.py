#!/usr/bin/env python3
"""A stand-in for NVIDIA's compute-sanitizer, for tests without a GPU: it runs the program
given after its options, passes its output on, and reports as the real tool does, from the
recorded outputs of tests/data/sanitizer: the finding of the tool asked for (--tool) when the
program printed "planted fault", else a clean summary. Each call appends "<tool> <the
KSWEEP_SANITIZER the program got> <the kernel filter: kne=NAME,... and the launch count, or
->" to $FAKE_SANITIZER_LOG when set. With $FAKE_SANITIZER_BARRIER ("N FOLDER") a run goes on
only once N runs have started (each leaves a file in FOLDER), and fails after a minute. With
$FAKE_SANITIZER_RUNNING ("FOLDER LOG") a run appends to LOG how many runs are going (a file
each in FOLDER) as it starts, and lasts 0.3 s at least. $FAKE_SANITIZER_SIZES_LOG: the sizes
of a kernel-mode request (the program's JSON argument) appended, one JSON line a run."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "sanitizer"
FOUND = {"memcheck": "memcheck_oob.txt", "racecheck": "racecheck_race.txt", "initcheck": "initcheck_uninit.txt",
         "synccheck": "synccheck_barrier.txt"}
VALUED = {"--tool", "--target-processes", "--show-backtrace", "--print-limit", "--kernel-name", "--launch-count"}


def main(argv):
    tool, i, only, count = "memcheck", 0, [], None
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] == "--tool":
            tool = argv[i + 1]
        elif argv[i] == "--kernel-name":
            only.append(argv[i + 1])
        elif argv[i] == "--launch-count":
            count = argv[i + 1]
        i += 2 if argv[i] in VALUED else 1
    program = argv[i:]
    if os.environ.get("FAKE_SANITIZER_GPU_LOG"):  # the GPU each run was given
        with open(os.environ["FAKE_SANITIZER_GPU_LOG"], "a") as log:
            log.write(f"{os.environ.get('CUDA_VISIBLE_DEVICES', '-')}\n")
    if os.environ.get("FAKE_SANITIZER_SIZES_LOG") and program[-1].endswith(".json"):  # kernel mode's sizes
        with open(program[-1]) as f, open(os.environ["FAKE_SANITIZER_SIZES_LOG"], "a") as log:
            log.write(json.dumps(json.load(f)["setup"]["sizes"], sort_keys=True) + "\n")
    if os.environ.get("FAKE_SANITIZER_LOG"):
        with open(os.environ["FAKE_SANITIZER_LOG"], "a") as log:
            said = f"{','.join(only)}:{count}" if only else "-"
            log.write(f"{tool} {os.environ.get('KSWEEP_SANITIZER', '-')} {said}\n")
    running = os.environ.get("FAKE_SANITIZER_RUNNING")  # "FOLDER LOG": how many run at once
    if running:
        folder, log = running.split(" ", 1)
        Path(folder, str(os.getpid())).touch()
        with open(log, "a") as out:
            out.write(f"{len(os.listdir(folder))}\n")
        time.sleep(0.3)  # long enough for the runs started together to overlap
    barrier = os.environ.get("FAKE_SANITIZER_BARRIER")  # "N FOLDER": go on once N runs have started
    if barrier:
        n, folder = barrier.split(" ", 1)
        Path(folder, str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(os.listdir(folder)) < int(n):
            if time.monotonic() > deadline:
                print(f"fake sanitizer: only {len(os.listdir(folder))} of {n} runs started", file=sys.stderr)
                return 3
            time.sleep(0.05)
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
    if running:
        Path(folder, str(os.getpid())).unlink()
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
