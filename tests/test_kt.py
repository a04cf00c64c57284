"""ksweep.kt.tune_kernel: Kernel Tuner's keywords and (results, env) on kernel mode, driven by
calling code modelled on Kernel Tuner's CUDA examples (matmul, convolution, pnpoly), with real
nvcc builds and the stand-in GPU backend (tests/kernels/fake_kt.py)."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ksweep.kt import CompilationFailedConfig, KtUnsupported, tune_kernel
from ksweep.store.sqlite import Store

from conftest import KERNELS, needs_nvrtc

FAKE = f"fake:{KERNELS / 'fake_kt.py'}"
nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture
def here(tmp_path, monkeypatch):
    shutil.copy(KERNELS / "kt_examples.cu", tmp_path / "kt_examples.cu")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def kt(*args, **kwargs):
    return tune_kernel(*args, backend=FAKE, jobs=2, quiet=True, **kwargs)


@nvcc
def test_matmul_example(here):
    n = 64
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    C = np.zeros_like(A)
    tune_params = {"block_size_x": [16, 32], "block_size_y": [2, 4, 8], "tile_size_x": [1, 2], "tile_size_y": [4]}
    metrics = {"GFLOP/s": lambda p: (2 * n ** 3 / 1e9) / (p["time"] / 1e3)}
    results, env = kt("matmul_kernel", "kt_examples.cu", (n, n), [C, A, B], tune_params,
                      grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
                      restrictions=["block_size_x==block_size_y*tile_size_y"], answer=[A @ B, None, None],
                      atol=1e-3, iterations=5, metrics=metrics)
    # the restriction leaves (16, 4) and (32, 8) × tile_size_x: 4 configs, each checked and timed
    assert sorted((r["block_size_x"], r["block_size_y"], r["tile_size_x"]) for r in results) == [
        (16, 4, 1), (16, 4, 2), (32, 8, 1), (32, 8, 2)]
    for r in results:
        assert set(tune_params) <= set(r) and r["time"] > 0 and "__error__" not in r
        assert r["GFLOP/s"] == pytest.approx((2 * n ** 3 / 1e9) / (r["time"] / 1e3))
        assert r["compile_time"] > 0 and r["benchmark_time"] > 0 and "timestamp" in r
    assert env["best_config"] in results and env["confirmed_time"] > 0  # the confirmation's pick (below)
    assert env["problem_size"] == (n, n) and env["iterations"] == 5 and isinstance(env["device_name"], str)
    assert env["total_compile_time"] == pytest.approx(sum(r["compile_time"] for r in results))
    json.dumps(results)  # as Kernel Tuner's examples save them
    with Store(env["ksweep_db"]) as store:
        argv = store.results()[0].build_argv
    assert "-Dgrid_size_x=2" in argv or "-Dgrid_size_x=4" in argv  # 64 / (32 * 1|2) or 64 / (16 * 1|2)
    assert "-Dkernel_tuner=1" in argv and "-Dblock_size_z=1" in argv


@nvcc
def test_a_wrong_grid_divisor_is_caught_by_the_answer(here):
    n = 64
    A = np.ones((n, n), np.float32)
    results, env = kt("matmul_kernel", "kt_examples.cu", (n, n), [np.zeros_like(A), A, A],
                      {"block_size_x": [16], "block_size_y": [4], "tile_size_x": [2], "tile_size_y": [4]},
                      grid_div_x=["block_size_x"], grid_div_y=["block_size_y", "tile_size_y"],  # tile_size_x left out
                      answer=[A @ A, None, None], atol=1e-3)
    # Kernel Tuner would launch twice the blocks needed in x: enough; ksweep launches what it is told
    assert results[0]["time"] > 0
    results, _ = kt("matmul_kernel", "kt_examples.cu", (n, n), [np.zeros_like(A), A, A],
                    {"block_size_x": [16], "block_size_y": [4], "tile_size_x": [2], "tile_size_y": [4]},
                    grid_div_x=["block_size_x", "tile_size_x", 2], grid_div_y=["block_size_y", "tile_size_y"],
                    answer=[A @ A, None, None], atol=1e-3)
    assert "time" not in results[0] and str(results[0]["__error__"]) == "RuntimeFailedConfig"


@nvcc
def test_an_answer_of_nones_checks_nothing_as_kernel_tuner_takes_it(here):
    """answer=[None, None, None] made every config a RuntimeFailedConfig (each argument was
    an input the kernel must not change); Kernel Tuner checks nothing then."""
    n = 64
    A = np.ones((n, n), np.float32)
    results, env = kt("matmul_kernel", "kt_examples.cu", (n, n), [np.zeros_like(A), A, A],
                      {"block_size_x": [16], "block_size_y": [4], "tile_size_x": [1, 2], "tile_size_y": [4]},
                      grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
                      answer=[None, None, None])
    assert len(results) == 2 and all(r["time"] > 0 and "__error__" not in r for r in results)


@nvcc
@pytest.mark.slow
def test_convolution_example_with_constant_memory(here):
    n = 32
    rng = np.random.default_rng(2)
    image = rng.standard_normal((n + 2) * (n + 2)).astype(np.float32)
    weights = rng.standard_normal(9).astype(np.float32)
    expected = np.zeros((n, n), np.float32)
    padded = image.reshape(n + 2, n + 2)
    for j in range(3):
        for i in range(3):
            expected += weights[j * 3 + i] * padded[j:j + n, i:i + n]
    tune_params = {"block_size_x": [16, 32], "block_size_y": [1, 2], "tile_size_x": [1], "tile_size_y": [1, 2],
                   "use_padding": [0, 1]}
    results, env = kt("convolution_kernel", (here / "kt_examples.cu").read_text(), (n, n),
                      [np.zeros(n * n, np.float32), image, weights], tune_params,
                      grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
                      restrictions=["use_padding==0 or (block_size_x % 32 != 0)"], cmem_args={"d_filter": weights},
                      answer=[expected.ravel(), None, None], atol=1e-4, verbose=False)
    assert len(results) == 12  # 16 configs, 4 of them padded with block_size_x 32
    assert all(r["time"] > 0 for r in results), [r.get("__error__") for r in results]
    # without the constant memory the module's d_filter stays zero: every config fails its check
    results, env = kt("convolution_kernel", (here / "kt_examples.cu").read_text(), (n, n),
                      [np.zeros(n * n, np.float32), image, weights], {"block_size_x": [32], "block_size_y": [2]},
                      grid_div_y=["block_size_y"], answer=[expected.ravel(), None, None], atol=1e-4)
    assert [str(r["__error__"]) for r in results] == ["RuntimeFailedConfig"] and "best_config" not in env


def polygon(vertices=16):
    angles = np.sort(np.random.default_rng(3).uniform(0, 2 * np.pi, vertices))[::-1]
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


@nvcc
@pytest.mark.slow
def test_pnpoly_example(here):
    size = np.int32(5000)
    points = np.random.default_rng(4).standard_normal(2 * int(size)).astype(np.float32)
    vertices = polygon()
    # the answer by another method: a convex polygon holds a point on one side of every edge
    p = points.reshape(-1, 2)
    edges = np.roll(vertices, -1, axis=0) - vertices
    side = edges[:, 0][None] * (p[:, 1][:, None] - vertices[:, 1][None]) - \
        edges[:, 1][None] * (p[:, 0][:, None] - vertices[:, 0][None])
    inside = ((side > 0).all(axis=1) | (side < 0).all(axis=1)).astype(np.int32)
    tune_params = {"block_size_x": [32, 64], "tile_size": [1, 2, 3], "between_method": [0, 1]}
    results, env = kt("cn_pnpoly", "kt_examples.cu", (size, 1), [np.zeros(int(size), np.int32), points, size],
                      tune_params, grid_div_x=["block_size_x", "tile_size"],
                      cmem_args={"d_vertices": vertices.ravel()}, answer=[inside, None, None])
    by_tile = {}
    for r in results:
        by_tile.setdefault(r["tile_size"], set()).add("time" if "time" in r else str(r["__error__"]))
    assert by_tile == {1: {"time"}, 2: {"time"}, 3: {"CompilationFailedConfig"}}
    failed = next(r for r in results if r["tile_size"] == 3)
    assert isinstance(failed["__error__"], CompilationFailedConfig)
    assert env["best_config"]["tile_size"] in (1, 2)


@nvcc
def test_block_size_names_strategy_and_a_function_restriction(here):
    n = 32
    A = np.ones((n, n), np.float32)
    tune_params = {"bx": [8, 16, 32], "by": [2, 4], "tile_size_y": [1]}
    results, env = kt("matmul_kernel", "kt_examples.cu", (n, n), [np.zeros_like(A), A, A], tune_params,
                      block_size_names=["bx", "by"], restrictions=lambda p: p["bx"] * p["by"] <= 64,
                      strategy="random_sample", strategy_options={"fraction": 0.5}, answer=[A @ A, None, None],
                      compiler_options=["-use_fast_math"], atol=1e-3)
    assert len(results) == 3  # half of the 5 configs the restriction leaves, rounded up
    assert all(r["bx"] * r["by"] <= 64 and r["time"] > 0 for r in results)
    with Store(env["ksweep_db"]) as store:
        argv = store.results()[0].build_argv
    assert "-use_fast_math" in argv and "-Dblock_size_z=1" in argv and "-Dbx=" in " ".join(argv)
    assert env["compiler_options"] == ["-use_fast_math"]


def _refused(here, keywords) -> str:
    """The one line a matmul call with ``keywords`` changed is refused with; nothing was built
    or written before it."""
    call = {"kernel_name": "matmul_kernel", "kernel_source": "kt_examples.cu", "problem_size": (32, 32),
            "arguments": [np.zeros(4, np.float32)] * 3, "tune_params": {"block_size_x": [16]}}
    call.update(keywords)
    with pytest.raises(KtUnsupported) as caught:
        kt(**call)
    text = str(caught.value)
    assert "\n" not in text, text
    assert not (here / ".ksweep").exists()  # refused before anything was built or written
    return text


@pytest.mark.parametrize("keywords, message", [
    ({"lang": "OpenCL"}, "lang='OpenCL': ksweep tunes CUDA kernels only"),
    ({"texmem_args": {"t": np.zeros(4)}}, "texmem_args: textures are not supported"),
    ({"simulation_mode": True}, "simulation_mode: replay a recorded cache with `ksweep replay` instead"),
    ({"strategy": "genetic_algorithm"}, "strategy 'genetic_algorithm': ksweep.kt runs brute_force, random_sample"),
    ({"strategy_options": {"popsize": 4}}, "strategy_options popsize: ksweep.kt takes fraction, max_fevals"),
    ({"verify": lambda *a: True}, "verify: ksweep compares outputs with answer itself"),
    ({"compiler": "clang"}, "compiler='clang': ksweep builds with 'nvcc' (the default) or 'nvrtc'"),
    ({"objective": "GFLOP/s"}, "objective 'GFLOP/s': ksweep measures time"),
    ({"observers": [object()]}, "observers: ksweep records the GPU's clocks"),
    ({"defines": {"N": 4}}, "defines: ksweep passes each tunable parameter"),
    ({"problem_size": lambda p: (4, 4)}, "problem_size as a function"),
    ({"grid_div_x": lambda p: 4}, "grid_div_x as a function"),
    ({"restrictions": ["block_size_x ** 2 < 100 if True"]}, "restriction 'block_size_x ** 2 < 100 if True'"),
    ({"answer": [None]}, "answer has 1 entries for 3 arguments"),
    ({"race": 0.5}, "race=0.5: give 0 (time every config `iterations` times) or a factor of at least 1"),
    ({"race": "fast"}, "race='fast': give 0"),
    ({"race": "1.5"}, "race='1.5': give 0"),
    ({"race": True}, "race=True: give 0"),
    ({"metrics": {"GB/s": "bytes / time"}}, "metric GB/s 'bytes / time': bytes is not a parameter, time or a metric"),
    ({"metrics": {"GB/s": "1 / (time"}}, "metric GB/s '1 / (time'"),
    ({"metrics": {"GB/s": 4}}, "metric GB/s: give a function of the result's dict or an expression, not 4"),
    ({"metrics": [("GB/s", "1 / time")]}, "metrics: give a dict of name"),
    ({"objective": ["time", "GFLOP/s"]}, "objective ['time', 'GFLOP/s']: ksweep.kt tunes one objective"),
    ({"objective_higher_is_better": [False, True]}, "objective_higher_is_better [False, True]: give one True"),
    ({"objective": "speed", "metrics": {"speed": "1 / time"}}, "objective 'speed': say objective_higher_is_better"),
    ({"seed": -1}, "seed -1: give a whole number of at least 0"),
    ({"seed": "7"}, "seed '7': give a whole number of at least 0"),
    ({"seed": 1.5}, "seed 1.5: give a whole number of at least 0"),
    ({"strategy_options": {"max_fevals": "10"}}, "strategy_options max_fevals '10': give a whole number"),
    ({"strategy_options": {"max_fevals": float("inf")}}, "strategy_options max_fevals inf: give a whole number"),
    ({"strategy_options": {"max_fevals": 2.5}}, "strategy_options max_fevals 2.5: give a whole number"),
    ({"strategy_options": {"fraction": float("nan")}}, "strategy_options fraction nan: give a number above 0"),
    ({"strategy_options": {"fraction": "half"}}, "strategy_options fraction 'half': give a number above 0"),
    ({"strategy": "random_sample", "strategy_options": {"max_fevals": 0}},
     "strategy_options max_fevals 0: give a whole number of at least 1"),
    ({"strategy": "random_sample", "strategy_options": {"time_limit": -5}},
     "strategy_options time_limit -5: give a number of seconds"),
    # Kernel Tuner refuses these too ("Unrecognized option"): brute_force measures everything
    ({"strategy_options": {"max_fevals": 5}}, "strategy_options max_fevals: brute_force measures every config"),
    ({"strategy": "brute_force", "strategy_options": {"fraction": 0.5, "time_limit": 9}},
     "strategy_options fraction, time_limit: brute_force measures every config"),
    ({"strategy": "bayes_opt", "strategy_options": {"fraction": 0.5}}, "strategy_options fraction: bayes_opt takes"),
    ({"seed": 2**32}, "seed 4294967296: give a whole number of at least 0 and at most 4294967295"),
])
def test_what_cannot_be_honoured_is_one_line(here, keywords, message):
    assert _refused(here, keywords).startswith(message)


@pytest.mark.parametrize("keywords, message", [
    ({"iterations": 0}, "iterations 0: give a whole number of at least 1"),
    ({"iterations": "7"}, "iterations '7': give a whole number of at least 1"),
    ({"iterations": True}, "iterations True: give a whole number"),
    ({"arguments": np.zeros(4, np.float32)}, "arguments: give a list of the kernel's arguments (numpy arrays and "
                                             "scalars), not a ndarray"),
    ({"arguments": "args.py:make"}, "arguments: give a list of the kernel's arguments"),
    ({"arguments": [np.zeros(4, np.float32), [1.0, 2.0], np.zeros(4, np.float32)]},
     "arguments[1] is a list: give a numpy array or a numpy scalar"),
    ({"arguments": [np.array(["a"]), np.zeros(4), np.zeros(4)]}, "arguments[0]: a numpy array of dtype <U1: give "
                                                                  "numbers"),
    ({"problem_size": 0}, "problem_size entry 0: give sizes of at least 1"),
    ({"problem_size": (32, -1)}, "problem_size entry -1: give sizes of at least 1"),
    ({"block_size_names": "bx"}, "block_size_names 'bx': give a list of 1 to 3 distinct names"),
    ({"block_size_names": ["bx", 3]}, "block_size_names ['bx', 3]: give a list"),
    ({"block_size_names": ["a", "b", "c", "d"]}, "block_size_names ['a', 'b', 'c', 'd']: give a list"),
    ({"kernel_name": "no_such_kernel"}, "kernel_name 'no_such_kernel': '{here}/kt_examples.cu' does not name "
                                        "no_such_kernel: give the name of a __global__ function it defines"),
    ({"kernel_name": None}, "kernel_name None: give the kernel's name"),
    ({"kernel_source": ""}, "kernel_source is empty: give the kernel's file or its code"),
    ({"kernel_source": "  \n"}, "kernel_source is empty"),
    ({"kernel_source": "empty.cu"}, "kernel_source 'empty.cu' is empty: give the file that defines the kernel"),
    ({"kernel_source": "sub"}, "kernel_source 'sub' is a folder: give the kernel's file"),
    ({"kernel_source": "latin1.cu"}, "kernel_source 'latin1.cu' is not UTF-8 text (byte 0xe9 at offset 3): save it "
                                     "as UTF-8"),
    ({"kernel_source": "__global__ void other(float *x) {}\n"},
     "kernel_name 'matmul_kernel': the code given as kernel_source does not name matmul_kernel"),
    ({"cache": "nowhere/cache.json"}, "cache 'nowhere/cache.json': its folder nowhere does not exist"),
    ({"cache": "sub"}, "cache 'sub' is a folder: give a file name, e.g. 'sub/cache.json'"),
])
def test_bad_inputs_are_one_line_before_anything_is_built_or_written(here, keywords, message):
    """What Kernel Tuner would fail on (or ksweep would build every config for, and return as
    failures) is refused first, each in one line naming the keyword."""
    (here / "sub").mkdir()
    (here / "empty.cu").write_text("")
    (here / "latin1.cu").write_bytes("// \u00e9t\u00e9\n".encode("latin-1") + (here / "kt_examples.cu").read_bytes())
    text = _refused(here, keywords)
    assert text.startswith(message.format(here=here)), text


def test_a_cache_in_a_folder_that_cannot_be_written_is_refused(here, monkeypatch):
    import ksweep.kt._inputs as inputs

    monkeypatch.setattr(inputs.os, "access", lambda path, mode: Path(path).name != "locked")
    (here / "locked").mkdir()
    with pytest.raises(KtUnsupported, match=r"^cache 'locked/c.json': its folder locked is not writable: give a "
                                            r"cache in a folder you can write$"):
        kt("matmul_kernel", "kt_examples.cu", (32, 32), [np.zeros(4, np.float32)] * 3, {"block_size_x": [16]},
           cache="locked/c.json")
    assert not (here / ".ksweep").exists()


def test_the_kernels_name_may_be_defined_in_a_header_the_source_includes(tmp_path):
    from ksweep.kt._inputs import check_names_kernel, include_dirs

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "k.cuh").write_text("template <int B> __global__ void scale(float *x) {}\n")
    (tmp_path / "near.cuh").write_text('#include "k.cuh"\n')
    main = tmp_path / "main.cu"
    main.write_text('#include "near.cuh"\n')
    check_names_kernel("scale<128>", main, main.read_text(), include_dirs(["-O3", "-I", str(tmp_path / "inc")]))
    check_names_kernel("scale", main, main.read_text(), include_dirs([f"--include-path={tmp_path / 'inc'}"]))
    with pytest.raises(KtUnsupported, match=r"does not name scale \(nor do the headers it includes\)"):
        check_names_kernel("scale", main, main.read_text())  # k.cuh is found through -I only
    with pytest.raises(KtUnsupported, match="does not name scale:"):
        check_names_kernel("scale", main, "__global__ void scale_all(float *x) {}\n")  # a longer name is another


def test_a_host_without_a_gpu_is_refused_before_building_with_no_option_of_the_command(here, monkeypatch):
    """cuda-python installed but no GPU (nor driver): every config was built and returned as a
    failure, with no exception; ksweep.tune_kernel refused it. Both are now refused by the
    sweep's check of the host (the GPU given by its index, device=0, is of no model when
    nvidia-smi lists none), in words for a library's caller."""
    import importlib.util

    import ksweep.app.wiring as wiring
    from ksweep.errors import EnvironmentProblem
    from ksweep.kernel.executor import KernelExecutor

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # cuda-python is installed, for this test
                        lambda name, *a: importlib.machinery.ModuleSpec("cuda", None) if name == "cuda"
                        else real(name, *a))
    monkeypatch.setattr(wiring, "detect_gpus", lambda: [])  # nvidia-smi lists no GPU
    started = []
    monkeypatch.setattr(KernelExecutor, "_warm", lambda self, gpu, shape: started.append(gpu))  # no worker process
    with pytest.raises(EnvironmentProblem) as caught:
        tune_kernel("matmul_kernel", "kt_examples.cu", (32, 32), [np.zeros(4, np.float32)] * 3,
                    {"block_size_x": [16, 32]}, quiet=True, jobs=1)
    text = str(caught.value)
    assert "this host has no NVIDIA GPU" in text and "--" not in text and "\n" not in text, text
    cache = here / ".ksweep" / "kt-runs" / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]  # nothing was built


def test_arrays_given_directly_are_saved_by_content_and_key_the_results(tmp_path):
    """Arguments, answers and cmem values passed as arrays: another call with other data gets
    other files (no overwriting), and the stored results' key covers their contents."""
    from ksweep.app.kernel import kernel_tuning_spec
    from ksweep.kernel.mode import KernelMode

    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float *y, const float *x) {}\n')

    def spec(value):
        x = np.full(8, value, np.float32)
        return kernel_tuning_spec("k", tmp_path / "k.cu", {"N": 8}, [np.zeros(8, np.float32), x], {"B": [32]},
                                  grid=["1"], block=["B"], outputs=[0], reference=[2 * x],
                                  cmem={"d_c": x[:2]})

    one, two, again = spec(1.0), spec(2.0), spec(1.0)
    for field in ("args", "reference", "cmem"):
        assert getattr(one.kernel, field) != getattr(two.kernel, field)
        assert getattr(one.kernel, field) == getattr(again.kernel, field)
    keys = [KernelMode().key_parts(s)["kernel_files"] for s in (one, two, again)]
    assert len(keys[0]) == 3 and keys[0] != keys[1] and keys[0] == keys[2]


@pytest.mark.parametrize("lang, compiler, options, expected", [
    # Kernel Tuner's CuPy backend: NVRTC, its --std=c++11 and CuPy's -ftz=true before the user's
    ("cupy", None, [], ("nvrtc", ("--std=c++11", "-ftz=true"))),
    ("CuPy", None, ["-use_fast_math"], ("nvrtc", ("--std=c++11", "-ftz=true", "-use_fast_math"))),
    ("cupy", None, ["-std=c++17", "-ftz=false"], ("nvrtc", ("-std=c++17", "-ftz=false"))),
    # its nvcuda backend: NVRTC and --std=c++11; PyCUDA (lang "CUDA", Kernel Tuner's default): nvcc
    ("nvcuda", None, [], ("nvrtc", ("--std=c++11",))),
    ("CUDA", None, [], ("nvcc", ("-O3",))),
    (None, None, [], ("nvcc", ("-O3",))),
    # a compiler given wins, and then nothing of the other backend is added
    ("cupy", "nvcc", [], ("nvcc", ("-O3",))),
    (None, "nvrtc", ["--maxrregcount=64"], ("nvrtc", ("--maxrregcount=64",))),
])
def test_lang_builds_as_kernel_tuners_backend_does(lang, compiler, options, expected):
    from ksweep.kt import lang_build

    assert lang_build(lang, compiler, options) == expected


@needs_nvrtc
def test_lang_cupy_builds_with_nvrtc_and_cupys_options(here):
    """One changed import: a script written for Kernel Tuner's CuPy backend builds the
    binaries CuPy would (NVRTC with -ftz=true), not nvcc's."""
    size = np.int32(2000)
    points = np.random.default_rng(4).standard_normal(2 * int(size)).astype(np.float32)
    results, env = kt("cn_pnpoly", "kt_examples.cu", (size, 1), [np.zeros(int(size), np.int32), points, size],
                      {"block_size_x": [32], "tile_size": [1]}, grid_div_x=["block_size_x", "tile_size"],
                      cmem_args={"d_vertices": polygon().ravel()}, lang="cupy")
    assert env["compiler"] == "nvrtc" and "time" in results[0]
    with Store(env["ksweep_db"]) as store:
        argv = store.results()[0].build_argv
    assert "-ftz=true" in argv and "--std=c++11" in argv and "-O3" not in argv


@pytest.fixture(scope="module")
def vadd_folder(tmp_path_factory):
    """A folder holding tests/kernels/vadd.cu, where this module's calls that tune vadd over
    BLOCK run: each call has a database of its own (kt-runs/, as every call without a cache),
    and they share the build cache beside those, so that a BLOCK's cubin is built once."""
    folder = tmp_path_factory.mktemp("vadd")
    shutil.copy(KERNELS / "vadd.cu", folder / "vadd.cu")
    return folder


def vadd_on(module, blocks, **keywords):
    """tune_kernel of tests/kernels/vadd.cu (copied into the working directory) over BLOCK on
    the stand-in GPU of ``module``, one build at a time (so built and swept in BLOCK's order)."""
    shutil.copy(KERNELS / "vadd.cu", "vadd.cu")
    n = 4096
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    return tune_kernel("vadd", "vadd.cu", n, [np.zeros(n, np.float32), a, b, np.int32(n)], {"BLOCK": blocks},
                       block_size_names=["BLOCK"], answer=[a + b, None, None, None], quiet=True, jobs=1,
                       backend=f"fake:{KERNELS / module}", **keywords)


@nvcc
@pytest.mark.slow
def test_iterations_is_every_configs_floor_with_race_0_and_far_behind_configs_stop_at_3(vadd_folder, monkeypatch):
    """On the stand-in GPU of fake_energy.py (BLOCK 256: 1.0 ms, 512: 1.5, 128: 2.0, 64: 4.0,
    built and swept in that order), iterations=9: by default 128 and 64, more than 1.5 times
    the best so far, are timed 3 times (their time still theirs); with race=0 every config is
    timed 9 times."""
    monkeypatch.chdir(vadd_folder)

    def reps(**keywords):
        results, env = vadd_on("fake_energy.py", [256, 512, 128, 64], iterations=9, **keywords)
        assert {r["BLOCK"]: r["time"] for r in results} == pytest.approx({256: 1.0, 512: 1.5, 128: 2.0, 64: 4.0})
        with Store(env["ksweep_db"]) as store:
            return {r.params["BLOCK"]: r.metrics["reps"] for r in store.results()}

    assert reps() == {256: 9, 512: 9, 128: 3, 64: 3}
    assert reps(race=0) == {256: 9, 512: 9, 128: 9, 64: 9}


@nvcc
def test_best_config_is_the_confirmations_pick_not_a_lucky_sweep_measurement(vadd_folder, monkeypatch):
    """fake_lucky.py: BLOCK 128 runs its first 25 launches at 0.9 ms, then 1.5 ms; 256 always
    1.0. The sweep's one measurement of 128 is lucky (0.9 ms); the leaders' confirmation runs
    find 256 faster, and best_config is 256's row. With confirm=False, the sweep's minimum."""
    monkeypatch.chdir(vadd_folder)

    def best(**keywords):
        results, env = vadd_on("fake_lucky.py", [128, 256], **keywords)
        assert {r["BLOCK"]: r["time"] for r in results} == pytest.approx({128: 0.9, 256: 1.0})
        return env

    env = best()
    assert env["best_config"]["BLOCK"] == 256 and env["confirmed_time"] == pytest.approx(1.0)
    shutil.copy(KERNELS / "vadd.cu", "vadd.cu")  # the printed line says the pick's confirmed time, not one run's
    n = 4096
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tune_kernel("vadd", "vadd.cu", n, [np.zeros(n, np.float32), a, b, np.int32(n)], {"BLOCK": [128, 256]},
                    block_size_names=["BLOCK"], answer=[a + b, None, None, None], jobs=1,
                    backend=f"fake:{KERNELS / 'fake_lucky.py'}")
    assert "BLOCK=256" in out.getvalue() and "confirmed: median 1 ms" in out.getvalue(), out.getvalue()
    env = best(confirm=False)
    assert env["best_config"]["BLOCK"] == 128 and "confirmed_time" not in env


@nvcc
def test_metrics_may_be_expressions_of_the_parameters_time_and_earlier_metrics(vadd_folder, monkeypatch):
    """Kernel Tuner's metrics dict takes expressions (strings) as well as functions, each
    computed in order on the result's dict: a later one may use an earlier one."""
    monkeypatch.chdir(vadd_folder)
    metrics = {"GB/s": "3 * 4 * 4096 / 1e6 / time", "per_block": lambda p: p["GB/s"] / p["BLOCK"],
               "twice": "2 * per_block"}
    results, env = vadd_on("fake_energy.py", [256, 512], metrics=metrics, confirm=False)
    for r in results:
        assert r["GB/s"] == pytest.approx(3 * 4 * 4096 / 1e6 / r["time"])
        assert r["twice"] == pytest.approx(2 * r["GB/s"] / r["BLOCK"])
    assert env["best_config"]["BLOCK"] == 256


@nvcc
@pytest.mark.parametrize("keywords", [
    {"objective": "GB/s"},  # a name whose direction Kernel Tuner knows: higher is better
    {"objective": ["GB/s"], "objective_higher_is_better": [True]},  # Kernel Tuner 1.5's lists of one
    {"objective": ["GB/s"]},
])
def test_an_objective_as_kernel_tuner_takes_it(vadd_folder, monkeypatch, keywords):
    monkeypatch.chdir(vadd_folder)
    results, env = vadd_on("fake_energy.py", [512, 256, 128], metrics={"GB/s": "3 * 4 * 4096 / 1e6 / time"},
                           **keywords)
    assert len(results) == 3 and env["best_config"]["BLOCK"] == 256  # the most GB/s: the fastest


@nvcc
def test_time_as_a_list_of_one_is_time(vadd_folder, monkeypatch):
    monkeypatch.chdir(vadd_folder)
    results, env = vadd_on("fake_energy.py", [512, 256], objective=["time"], objective_higher_is_better=[False])
    assert env["best_config"]["BLOCK"] == 256 and env["confirmed_time"] == pytest.approx(1.0)


@nvcc
def test_a_templated_kernel_name_takes_the_parameters_it_names(tmp_path, monkeypatch):
    """Kernel Tuner's templated names: "vscale<TILE>" instantiates vscale<128> for TILE 128,
    and the parameters are defined for the source as well (with a stand-in GPU whose 'kernels'
    are those instantiations' mangled names). As with Kernel Tuner's #defines, the template's
    own parameter needs a name other than the tunable parameter's."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vscale.cu").write_text(
        "template <int tile>\n"
        "__global__ void vscale(float *c, const float *a, float s, int n) {\n"
        "    int i = blockIdx.x * tile + threadIdx.x;\n"
        "    if (i < n && TILE == tile) c[i] = s * a[i];\n"
        "}\n")
    (tmp_path / "fake_vscale.py").write_text(
        "def scale(params, grid, block, smem, c, a, s, n):\n"
        "    c[:] = s * a\n\n\n"
        "_Z6vscaleILi128EEvPfPKffi = _Z6vscaleILi256EEvPfPKffi = scale\n")
    n = 4096
    a = np.arange(n, dtype=np.float32)
    results, env = tune_kernel("vscale<TILE>", "vscale.cu", n, [np.zeros(n, np.float32), a, np.float32(2), np.int32(n)],
                               {"TILE": [128, 256]}, block_size_names=["TILE"], answer=[2 * a, None, None, None],
                               quiet=True, jobs=1, backend=f"fake:{tmp_path / 'fake_vscale.py'}")
    assert [r.get("__error__") for r in results] == [None, None] and all(r["time"] > 0 for r in results)
    with Store(env["ksweep_db"]) as store:
        argv = {r.params["TILE"]: r.build_argv for r in store.results()}
    assert "-DTILE=128" in argv[128] and "-Dgrid_size_x=32" in argv[128] and "-DTILE=256" in argv[256]
    # its Kernel Tuner cache names the kernel as the call did: Kernel Tuner's simulation mode,
    # given the same name, loads it (it refused 'vscale' for 'vscale<TILE>')
    import warnings

    import kernel_tuner

    from ksweep.cli.main import main

    assert main(["export", str(env["ksweep_db"]), "--format", "kt-cache", "-o", "kt.json"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replayed, _ = kernel_tuner.tune_kernel("vscale<TILE>", "", n, [], {"TILE": [128, 256]},
                                               block_size_names=["TILE"], cache="kt.json", simulation_mode=True,
                                               strategy="brute_force", quiet=True)
    assert sorted(r["TILE"] for r in replayed) == [128, 256]


@nvcc
@pytest.mark.parametrize("problem_size, grid_div_x, grid_size_x", [
    (4096, ["BLOCK/3"], 49),  # Kernel Tuner: 4096 / int(256 / 3) = 4096 / 85, rounded up
    (("4097 / 2",), None, 8),  # int(2048.5) / 256 = 8; untruncated, 2048.5 / 256 rounds up to 9
    (4096, ["BLOCK/2", 2], 16),
])
def test_string_sizes_and_divisors_are_integers_as_kernel_tuner_takes_them(tmp_path, monkeypatch, problem_size,
                                                                           grid_div_x, grid_size_x):
    monkeypatch.chdir(tmp_path)
    shutil.copy(KERNELS / "vadd.cu", "vadd.cu")
    n = 4096
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    results, env = tune_kernel("vadd", "vadd.cu", problem_size, [np.zeros(n, np.float32), a, b, np.int32(n)],
                               {"BLOCK": [256]}, block_size_names=["BLOCK"], grid_div_x=grid_div_x, quiet=True,
                               jobs=1, backend=f"fake:{KERNELS / 'fake_energy.py'}")
    with Store(env["ksweep_db"]) as store:
        argv = store.results()[0].build_argv
    assert f"-Dgrid_size_x={grid_size_x}" in argv, argv


def test_the_keywords_come_in_kernel_tuners_order():
    """A call that passes Kernel Tuner 1.5's arguments by position means the same here."""
    import inspect

    kernel_tuner_1_5 = [
        "kernel_name", "kernel_source", "problem_size", "arguments", "tune_params", "grid_div_x", "grid_div_y",
        "grid_div_z", "restrictions", "answer", "atol", "verify", "verbose", "lang", "device", "platform",
        "smem_args", "cmem_args", "texmem_args", "compiler", "compiler_options", "defines", "log", "iterations",
        "block_size_names", "quiet", "strategy", "strategy_options", "cache", "metrics", "simulation_mode",
        "parallel", "observers", "objective", "objective_higher_is_better", "objectives", "seed"]
    positional = [p.name for p in inspect.signature(tune_kernel).parameters.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert positional == kernel_tuner_1_5


@nvcc
def test_a_shared_cache_returns_this_calls_configs_only(vadd_folder, monkeypatch):
    """Two calls with one cache: the second (of other tune_params, or restricted) returns its
    own configs, resumed from the cache, and its best among them, not the first call's."""
    monkeypatch.chdir(vadd_folder)
    results, env = vadd_on("fake_energy.py", [128, 256, 512], cache="shared.json")
    assert sorted(r["BLOCK"] for r in results) == [128, 256, 512] and env["best_config"]["BLOCK"] == 256
    results, env = vadd_on("fake_energy.py", [128, 512], cache="shared.json")
    assert sorted(r["BLOCK"] for r in results) == [128, 512] and env["best_config"]["BLOCK"] == 512
    results, env = vadd_on("fake_energy.py", [128, 256, 512], cache="shared.json", restrictions=["BLOCK != 256"])
    assert sorted(r["BLOCK"] for r in results) == [128, 512] and env["best_config"]["BLOCK"] == 512
    assert env["ksweep_db"] == "shared.db"


@nvcc
def test_an_exported_kt_cache_holds_the_problem_size_kernel_tuner_compares(here, capsys):
    """export --format kt-cache wrote problem_size []: Kernel Tuner's simulation mode, given the
    call's own problem size, refused the cache ("different problem_size")."""
    from kernel_tuner.util import check_matching_problem_size

    from ksweep.cli.main import main

    n = 64
    A = np.ones((n, n), np.float32)
    _, env = kt("matmul_kernel", "kt_examples.cu", (n, n), [np.zeros_like(A), A, A],
                {"block_size_x": [16], "block_size_y": [4], "tile_size_x": [1, 2], "tile_size_y": [4]},
                grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
                answer=[A @ A, None, None], atol=1e-3)
    out = here / "kt.json"
    assert main(["export", str(env["ksweep_db"]), "--format", "kt-cache", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["problem_size"] == [n, n]
    check_matching_problem_size(doc["problem_size"], (n, n))  # raises when they differ


@nvcc
@pytest.mark.parametrize("answer", [None, [None, None, None]])
def test_with_nothing_to_check_the_kernel_runs_on_the_arguments_as_given(tmp_path, monkeypatch, answer):
    """With nothing to check, every array counted as an output and was filled with 0xFF before
    the check launch: a gather kernel's index array became -1 and every config read out of
    bounds. Kernel Tuner runs the kernel on the arguments it was given."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gather.cu").write_text(
        'extern "C" __global__ void gather(float *out, const float *a, const int *idx) {\n'
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    out[i] = a[idx[i]];\n"
        "}\n")
    (tmp_path / "fake_gather.py").write_text(
        "def gather(params, grid, block, smem, out, a, idx):\n"
        "    assert ((0 <= idx) & (idx < a.size)).all(), 'out of bounds'\n"
        "    out[:] = a[idx]\n")
    n = 1024
    idx = np.arange(n, dtype=np.int32)[::-1].copy()
    results, _ = tune_kernel("gather", "gather.cu", n, [np.zeros(n, np.float32), np.ones(n, np.float32), idx],
                             {"block_size_x": [128, 256]}, answer=answer, quiet=True, jobs=1,
                             backend=f"fake:{tmp_path / 'fake_gather.py'}")
    assert [r.get("__error__") for r in results] == [None, None] and all(r["time"] > 0 for r in results)


@nvcc
@pytest.mark.parametrize("options, evaluated", [
    (None, 2),  # Kernel Tuner's random_sample covers 10% of the space by default: 20 configs, 2
    ({"fraction": 0.1, "max_fevals": 5}, 5),  # max_fevals decides (the fraction decided)
    pytest.param({"max_fevals": 50}, 20, marks=pytest.mark.slow),  # at most the space
    ({"fraction": np.float32(0.25)}, 5),  # a numpy float, as a script computes it (refused)
])
def test_random_sample_budget_as_kernel_tuner_sets_it(vadd_folder, monkeypatch, options, evaluated):
    """random_sample measured every config when given no options (Kernel Tuner: a tenth), and
    its fraction won over max_fevals (Kernel Tuner: max_fevals)."""
    monkeypatch.chdir(vadd_folder)
    shutil.copy(KERNELS / "vadd.cu", "vadd.cu")
    n = 4096
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    results, _ = tune_kernel("vadd", "vadd.cu", n, [np.zeros(n, np.float32), a, b, np.int32(n)],
                             {"BLOCK": [32 * i for i in range(1, 21)]}, block_size_names=["BLOCK"],
                             strategy="random_sample", strategy_options=options, answer=[a + b, None, None, None],
                             quiet=True, jobs=2, backend=f"fake:{KERNELS / 'fake_energy.py'}", confirm=False)
    assert len(results) == evaluated


def test_kernel_tuners_strategy_names_get_its_default_budgets():
    from ksweep.kt._keywords import strategy_of as _strategy

    assert _strategy("bayes_opt", {}) == ("bayes", 100, None, None)  # Kernel Tuner's max_fevals default
    assert _strategy("bayes_opt", {"max_fevals": 7, "time_limit": 3}) == ("bayes", 7, 3, None)
    assert _strategy(None, {}) == ("grid", None, None, None)
