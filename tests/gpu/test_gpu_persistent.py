"""A persistent host on a real GPU: a kernel fault that the program itself ignores still
fails its config (CUDA_ERROR: the host finds the context broken) and the next config runs
in a fresh host."""

import shutil
from pathlib import Path

from ksweep import load_spec
from ksweep.run.persistent import PersistentHost
from ksweep.space.space import Space
from ksweep.status import Status
from ksweep.sweep.jobs import JobFactory
from ksweep.sweep.local import make_builder

SPEC = """
[sweep]
objective = "ms"
[params]
FAULT = [0, 1]
[build]
sources = ["fault.cu"]
command = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "{defines}", "-o", "{binary}", "fault.cu"]
timeout = 300
[run]
timeout = 60
persistent = true
"""


def test_a_fault_the_program_ignores_fails_its_config(tmp_path):
    shutil.copy(Path(__file__).parent / "fault.cu", tmp_path / "fault.cu")
    (tmp_path / "fault.toml").write_text(SPEC)
    spec = load_spec(tmp_path / "fault.toml")
    factory = JobFactory(spec, spec.shape("default"), spec.variant(None), Space.from_spec(spec, "default"))
    builder = make_builder(spec)
    host = PersistentHost({"CUDA_VISIBLE_DEVICES": "0"})
    try:
        outcomes = []
        for fault in (0, 1, 0):
            job = factory.make({"FAULT": fault})
            outcomes.append(host.run(job, builder.build(job), None, tmp_path / "scratch"))
    finally:
        host.close()
    assert [o.status for o in outcomes] == [Status.OK, Status.CUDA_ERROR, Status.OK], [o.message for o in outcomes]
    assert "context is broken" in outcomes[1].message
