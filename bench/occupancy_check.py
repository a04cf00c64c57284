"""Check ksweep's theoretical occupancy (``ksweep explain``) against the CUDA runtime's
``cuOccupancyMaxActiveBlocksPerMultiprocessor``, for every built config of the databases
given (a GPU and cuda-python needed).

    python bench/occupancy_check.py DB [DB ...]

Each config's binary comes from the build cache beside its database (a cubin, or the
cubins ``cuobjdump -xelf`` extracts from an executable); each kernel ``explain`` computed an
occupancy for is loaded, given the launch's dynamic shared memory (opted in above 48 KB, as
the programs do) and asked. Prints one line per kernel and the count that agree; exits 1
on any disagreement.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from ksweep.app import explain, target
from ksweep.job import config_id
from ksweep.build.sass import cuobjdump
from ksweep.kernel.backend import CudaBackend
from ksweep.store.sqlite import Store


def cubins(binary: Path, work: Path) -> list[Path]:
    """The binary itself (a cubin loads as it is), then the cubins an executable embeds."""
    out = work / f"x{abs(hash(str(binary)))}"
    out.mkdir(exist_ok=True)
    subprocess.run([cuobjdump() or "cuobjdump", "-xelf", "all", str(binary.resolve())], cwd=out,
                   capture_output=True, check=False)
    return [binary, *sorted(out.glob("*.cubin"))]


def main(dbs: list[str]) -> int:
    b = CudaBackend(0)
    cu = b.cu
    agree = disagree = 0
    with tempfile.TemporaryDirectory() as tmp:
        for db in dbs:
            with Store(db, create=False) as store:
                ids = [(store.result_id(r.variant, r.shape, config_id(r.params)), r)
                       for r in store.results() if r.kernels]
            for rid, r in ids:
                e = explain.explain(db, [str(rid)])
                if not e.occupancy or e.launch.get("threads") is None:
                    continue
                _, built, _ = target.build_config(e_spec(db), r.shape, r.variant, dict(r.params), Path(db))
                files = cubins(Path(built.binary), Path(tmp)) if built.binary else []
                smem = int(e.launch.get("smem") or 0)
                for k in e.occupancy:
                    if k.occupancy is None:
                        continue
                    fn = None
                    for f in files:
                        try:
                            fn = b.load(str(f), k.kernel)
                            break
                        except Exception:  # noqa: BLE001 - not in this cubin
                            continue
                    if fn is None:
                        print(f"{db} #{rid} {k.kernel}: not found in the binary")
                        continue
                    if smem > 48 * 1024:
                        b.set_dynamic_smem(fn, smem)
                    runtime = int(b._check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                        fn, int(e.launch["threads"]), smem), "cuOccupancyMaxActiveBlocksPerMultiprocessor"))
                    mine = k.occupancy.blocks_per_sm
                    ok = runtime == mine
                    agree += ok
                    disagree += not ok
                    print(f"{'ok  ' if ok else 'DIFF'} {Path(db).name} #{rid} {k.kernel[:40]:<40} threads="
                          f"{e.launch['threads']:<4} regs={k.occupancy.registers:<3} smem={smem:<6} "
                          f"ksweep={mine} runtime={runtime} ({'+'.join(k.occupancy.binding)})")
    print(f"{agree} of {agree + disagree} kernels: ksweep's occupancy equals the CUDA runtime's")
    return 0 if disagree == 0 and agree else 1


_specs: dict[str, object] = {}


def e_spec(db: str):
    if db not in _specs:
        _specs[db] = target.open_target(db).spec
    return _specs[db]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
