"""compute-sanitizer's reports read back (ksweep/verify/sanitizer.py), on recorded outputs of
each tool (tests/data/sanitizer/: the tool's lines among the program's own), and the
verdict of a config from its tools' runs."""

from pathlib import Path

import pytest

from ksweep.status import Status
from ksweep.verify.sanitizer import ToolRun, outcome, parse, verdict

DATA = Path(__file__).parent / "data" / "sanitizer"


def read(name: str, tool: str):
    return parse((DATA / name).read_text(), tool)


def test_memcheck_names_the_write_the_kernel_its_line_and_the_thread():
    r = read("memcheck_oob.txt", "memcheck")
    assert r.errors == 3 and r.summary_seen and not r.tool_failure
    first = r.errors_found[0]
    assert first.kind == "Invalid __global__ write of size 4 bytes"
    assert first.kernel == "vadd(float *, const float *, const float *, int)"
    assert first.location == "/home/user/proj/vadd.cu:12"
    assert first.thread == "thread (255,0,0) block (3,0,0)"
    # the second write and the API error that followed (its consequence) are findings too, in order
    assert [f.kind.split(" ")[0] for f in r.findings] == ["Invalid", "Invalid", "Program"]
    assert outcome(ToolRun("memcheck", r, returncode=1))[0] == "unsafe"


def test_memcheck_without_lineinfo_and_cuda_memchecks_old_form():
    r = read("memcheck_no_lineinfo.txt", "memcheck")
    f = r.errors_found[0]
    assert f.kind == "Invalid __shared__ read of size 16 bytes" and f.location is None
    assert f.kernel == "void sgemm<(int)128, (int)64>(int, int, int, const float *, const float *, float *)"
    old = read("cuda_memcheck_old.txt", "memcheck").errors_found[0]
    assert old.kernel == "void vector_projection<double>(double*, int)"
    assert old.location == "/home/ubuntu/Test0001/Debug/../src/my_helper.cuh:75"


@pytest.mark.parametrize("line, kernel, location", [
    ("at k(int *)+0x70 in f.cu:12", "k(int *)", "f.cu:12"),
    ("at k(int *)+0x70", "k(int *)", None),
    ("at 0x90 in IncrementTwice(unsigned int*)", "IncrementTwice(unsigned int*)", None),
    ("at unaligned_kernel():0x160 in memcheck_demo.cu:6", "unaligned_kernel()", "memcheck_demo.cu:6"),
])
def test_every_form_of_the_at_line(line, kernel, location):
    text = f"========= Invalid __global__ read of size 4 bytes\n=========     {line}\n=========\n" \
           "========= ERROR SUMMARY: 1 error\n"
    f = parse(text, "memcheck").errors_found[0]
    assert (f.kernel, f.location) == (kernel, location)


def test_racecheck_names_the_racing_accesses_and_counts_its_summary():
    r = read("racecheck_race.txt", "racecheck")
    assert r.errors == 1
    f = r.errors_found[0]
    assert f.kind.startswith("Race reported between Write access at reduce(")
    assert f.kernel == "reduce(const float *, float *, int)" and f.location == "/src/reduce.cu:21"
    assert outcome(ToolRun("racecheck", r, returncode=0))[0] == "unsafe"
    clean = read("racecheck_clean.txt", "racecheck")
    assert clean.errors == 0 and not clean.findings
    assert outcome(ToolRun("racecheck", clean, returncode=0)) == ("clean", "clean")


def test_a_racecheck_warning_is_said_but_is_no_finding():
    r = read("racecheck_warning.txt", "racecheck")
    assert r.errors == 0 and r.warnings == 1 and r.findings[0].warning and not r.errors_found
    assert outcome(ToolRun("racecheck", r, returncode=0)) == ("clean", "clean (1 warning)")


def test_a_host_api_finding_and_the_count_of_errors_not_printed():
    """Recorded on the H200 (compute-sanitizer 2025.3.1, initcheck limited to one kernel): the
    finding is a host API access; the second summary line counts the errors it did not print,
    which are among the 8192, not more of them."""
    r = read("initcheck_host_api.txt", "initcheck")
    assert r.errors == 8192
    first = r.errors_found[0]
    assert first.kind == "Host API memory access error at host access to 0x7f6e3b000000 of size 262,144 bytes"
    assert outcome(ToolRun("initcheck", r, returncode=0)) == (
        "unsafe", "Host API memory access error at host access to 0x7f6e3b000000 of size 262,144 bytes "
                  "(8192 errors)")


def test_initcheck_and_synccheck_findings():
    init = read("initcheck_uninit.txt", "initcheck").errors_found[0]
    assert init.kind == "Uninitialized __global__ memory read of size 4 bytes"
    assert (init.kernel, init.location) == ("stencil(const float *, float *, int)", "stencil.cu:17")
    sync = read("synccheck_barrier.txt", "synccheck")
    assert sync.errors == 2 and len(sync.errors_found) == 2
    assert sync.errors_found[0].describe() == ("Barrier error detected. Divergent thread(s) in block in "
                                               "tile_sum(const float *, float *) at tile_sum.cu:31 "
                                               "(thread (32,0,0) block (0,0,0))")


def test_a_run_without_a_summary_or_a_tool_that_could_not_attach_is_incomplete_not_unsafe():
    killed = read("memcheck_killed.txt", "memcheck")
    assert not killed.summary_seen and not killed.findings
    assert outcome(ToolRun("memcheck", killed, timed_out=True, timeout=30))[0] == "incomplete"
    assert outcome(ToolRun("memcheck", killed, returncode=-9))[0] == "incomplete"
    attach = read("no_attach.txt", "memcheck")
    assert attach.tool_failure.startswith("Error: No attachable process found") and not attach.findings
    assert outcome(ToolRun("memcheck", attach, returncode=1))[0] == "incomplete"
    # a program that fails under the tool, the tool finding nothing: not a clean bill either
    clean = read("memcheck_clean.txt", "memcheck")
    assert outcome(ToolRun("memcheck", clean, returncode=0))[0] == "clean"
    assert outcome(ToolRun("memcheck", clean, returncode=3))[0] == "incomplete"


def test_racecheck_that_failed_on_a_hardware_exception_is_incomplete_not_a_finding():
    """racecheck (2025.3) on the Hopper GEMM's CUTLASS kernel: it could not handle a hardware
    exception, and its summary counts that as an error. The tool failed; nothing was found in
    the config (memcheck, on the same program, was clean): no UNSAFE."""
    r = read("racecheck_internal_error.txt", "racecheck")
    assert r.errors == 1 and not r.findings and r.program_failed
    assert r.tool_failure == "Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception."
    assert outcome(ToolRun("racecheck", r, returncode=1)) == (
        "incomplete", "could not check the program: Internal Sanitizer Error: The Sanitizer failed to handle a "
                      "hardware exception.")
    clean = ToolRun("memcheck", read("memcheck_clean.txt", "memcheck"), returncode=0)
    v = verdict([clean, ToolRun("racecheck", r, returncode=1)])
    assert v.verdict == "incomplete" and v.status is None and v.message.startswith("racecheck: could not check")
    # more errors than the failure, or an entry no pattern reads: not explained by it, a finding
    text = (DATA / "racecheck_internal_error.txt").read_text()
    more = parse(text.replace("1 hazard displayed (1 error,", "2 hazards displayed (2 errors,"), "racecheck")
    assert outcome(ToolRun("racecheck", more, returncode=1)) == (
        "unsafe", "2 errors (ksweep harden --output DIR keeps the tool's report)")
    other = parse(text.replace("========= \n", "========= Error: A hazard of a new kind\n=========\n", 1), "racecheck")
    assert outcome(ToolRun("racecheck", other, returncode=1)) == (
        "unsafe", "1 error; the tool's first entry: Error: A hazard of a new kind")


def test_the_verdict_is_unsafe_on_any_finding_and_clean_only_when_every_tool_was():
    clean = {t: read(f, t) for t, f in (("memcheck", "memcheck_clean.txt"), ("racecheck", "racecheck_clean.txt"))}
    runs = [ToolRun(t, r, returncode=0) for t, r in clean.items()]
    v = verdict(runs)
    assert v.verdict == "clean" and v.status is None and set(v.tools) == {"memcheck", "racecheck"}
    race = ToolRun("racecheck", read("racecheck_race.txt", "racecheck"), returncode=0)
    v = verdict([runs[0], race])
    assert v.verdict == "unsafe" and v.status is Status.UNSAFE
    assert v.message.startswith("racecheck: Race reported between Write access at reduce(")
    assert v.tools["memcheck"] == "clean"
    half = verdict([runs[0], ToolRun("racecheck", None, timed_out=True, timeout=60)])
    assert half.verdict == "incomplete" and half.status is None
    assert half.message == "racecheck: no summary within 60 s (timed out)"


def test_a_summary_counting_errors_it_did_not_list_is_still_a_finding():
    r = parse("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 4 errors\n", "memcheck")
    assert outcome(ToolRun("memcheck", r, returncode=0)) == (
        "unsafe", "4 errors (ksweep harden --output DIR keeps the tool's report)")


def test_an_entry_of_a_kind_the_parser_does_not_know_is_quoted_when_the_summary_counts_errors():
    """A finding of a form no pattern here reads (a newer tool's) is not lost behind "1 error":
    the verdict quotes the tool's first entry that is not its banner or summary."""
    text = ("========= COMPUTE-SANITIZER\n"
            "========= Error: Some new hazard kind on an mbarrier in k(int *)\n"
            "=========     at k(int *)+0x70 in f.cu:12\n"
            "=========\n"
            "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    r = parse(text, "racecheck")
    assert r.errors == 1 and not r.errors_found
    assert outcome(ToolRun("racecheck", r, returncode=0)) == (
        "unsafe", "1 error; the tool's first entry: Error: Some new hazard kind on an mbarrier in k(int *)")
    assert verdict([ToolRun("racecheck", r, returncode=0)]).message.startswith("racecheck: 1 error; the tool's")


def test_the_harden_table_is_checked_when_the_spec_loads():
    from ksweep.errors import SpecError
    from ksweep.spec.load import spec_from_dict

    base = {"params": {"X": [1, 2]}, "shapes": {"s": {"defines": {"N": 4096}}}}
    spec = spec_from_dict({**base, "harden": {"tools": ["memcheck", "racecheck"], "timeout": 30,
                                              "deterministic": True, "special": ["zeros", "nan"],
                                              "edge": {"N": 4099}, "sizes": {"N": 1024}}})
    h = spec.harden
    assert (h.enabled, h.tools, h.timeout, h.deterministic, h.special, dict(h.edge), dict(h.sizes)) == \
        (True, ("memcheck", "racecheck"), 30.0, True, ("zeros", "nan"), {"N": 4099}, {"N": 1024})
    assert spec_from_dict(base).harden.tools == ("memcheck", "racecheck", "initcheck", "synccheck")
    for table, fragment in (({"tools": ["memchek"]}, "harden.tools: unknown tool 'memchek' — did you mean 'memcheck'"),
                            ({"special": ["huge"]}, "harden.special: unknown input 'huge'"),
                            ({"timeout": -1}, "harden.timeout"), ({"enabled": "yes"}, "harden.enabled"),
                            ({"tool": ["memcheck"]}, "harden.tool: unknown key"),
                            ({"edge": {"N": [1, 2]}}, "harden.edge.N: expected a number or a string"),
                            ({"edge": {"2N": 3}}, "harden.edge.2N: '2N' is not a valid name"),
                            # a name no shape defines would replace nothing: the tools would run the full size
                            ({"sizes": {"NN": 1024}}, "harden.sizes.NN: no shape defines it, nor is it a constant: "
                                                      "it would replace nothing — did you mean 'N'?"),
                            ({"edge": {"M": 7}}, "harden.edge.M: no shape defines it")):
        with pytest.raises(SpecError) as err:
            spec_from_dict({**base, "harden": table})
        assert fragment in str(err.value), str(err.value)
