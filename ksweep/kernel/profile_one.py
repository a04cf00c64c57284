"""One launch of one kernel-mode config in a fresh process: what ``ksweep profile`` runs
under Nsight Compute. ``python -m ksweep.kernel.profile_one REQUEST.json`` where the
request holds the worker's ``setup`` and the config's ``launch`` (cubin, entry, grid,
block, smem); exits 0 after the launch, 1 with a line on stderr when it fails."""

from __future__ import annotations

import json
import sys

from .backend import CudaBackend
from .worker import Worker


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ksweep.kernel.profile_one REQUEST.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        request = json.load(f)
    try:
        worker = Worker(CudaBackend(0, gpu_checks=False))  # one launch, nothing checked
        request["setup"]["timing"] = {**request["setup"].get("timing", {}), "flush_l2": False}
        worker.setup(request["setup"])
        worker.launch_once(request["launch"])
    except Exception as exc:  # noqa: BLE001 - one line for the profiler's log
        print(f"ksweep profile: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
