"""Issue 13, a newcomer's first hour: what the compiler tells a user who did not ask.

Per-target dump folders and dynamic shared memory in the ptxas summary; a note when a kernel
is built twice; warnings for silent surprises (a T.Pipelined loop that is not pipelined, a
Python print in a kernel body); errors (T.Tensor without dtype, mixed gemm operand dtypes,
too much shared memory at the allocations); tracebacks without tilec's frames; sm_100 refused.
"""
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import tilec
import tilec.language as T
from tilec import TilecNote, TilecWarning

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples"))

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available(), reason="NVRTC not found")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    tilec._tilec.clear_memory_cache()
    tilec.errors._registry.clear()
    return tmp_path


def _line_of(func, text):
    import inspect

    lines, start = inspect.getsourcelines(func)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


# ---------------------------------------------------------------- dumps and the ptxas summary
@needs_nvrtc
def test_dump_dir_keeps_one_folder_per_target(fresh_cache, monkeypatch):
    from gemm import matmul

    dump = fresh_cache / "dump"
    monkeypatch.setenv("TILEC_DUMP_DIR", str(dump))
    func = matmul(256, 256, 256)
    kernels = {t: tilec.compile(func, out_idx=[2], target=t) for t in ("sm_80", "sm_90a")}
    for target, kernel in kernels.items():
        folder = dump / "gemm" / target
        assert (folder / "gemm.cu").read_text() == kernel.get_kernel_source()
        assert (folder / f"gemm.{target}.cubin").stat().st_size > 0
        assert (folder / "00_input.py").exists()
        log = (folder / "gemm.ptxas.log").read_text()
        # ptxas sees only static shared memory; the arena the kernel uses is dynamic.
        dyn = kernel.ptxas_info["dynamic_shared_bytes"]
        assert dyn >= 3 * (128 * 32 + 32 * 128) * 2  # three stages of A and B tiles, fp16
        assert f"tilec: shared memory: {dyn} bytes dynamic" in log


# ---------------------------------------------------------------- a kernel built twice
@needs_nvrtc
def test_a_kernel_built_twice_says_so_once(fresh_cache):
    from gemm import matmul

    # 128x160 fp32 accumulators on 128 threads: with the overlapped main loop ptxas spills (CUDA
    # 13.0), without it not; tilec builds both and keeps the plain one, and says so once.
    func = matmul(1024, 1024, 1024, 128, 160, 32, dtype="bfloat16", num_stages=2, threads=128)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilec.compile(func, target="sm_80")
    notes = [w for w in caught if issubclass(w.category, TilecNote)]
    if "gemm_ss_overlap" in kernel.get_kernel_source():  # another ptxas: the overlapped one did not spill
        assert not notes
        return
    assert len(notes) == 1, [str(w.message) for w in caught]
    text = str(notes[0].message)
    assert "kernel 'gemm' (sm_80) built twice" in text and "tl.disable_gemm_overlap" in text
    # Asking for the plain loop builds once, with no note.
    tilec._tilec.clear_memory_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilec.compile(func, target="sm_80", pass_configs={"tl.disable_gemm_overlap": True})
    assert not [w for w in caught if issubclass(w.category, TilecNote)]


@needs_nvrtc
def test_a_certain_spill_is_built_once(fresh_cache):
    from gemm import matmul
    from tilec.kernel import PerformanceWarning

    # 128x192 fp32 accumulators on 128 threads: 192 registers, plus the carried fragments, is
    # more than 255, so the overlapped loop is not even tried (one NVRTC build, no note).
    func = matmul(1024, 1024, 1024, 128, 192, 32, dtype="bfloat16", num_stages=2, threads=128)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilec.compile(func, target="sm_80")
    assert not [w for w in caught if issubclass(w.category, TilecNote)]
    assert "gemm_ss_overlap" not in kernel.get_kernel_source()
    # The spill warning names the user's call, not a tilec file.
    spills = [w for w in caught if issubclass(w.category, PerformanceWarning)]
    assert spills and spills[0].filename == __file__, [(w.filename, w.lineno) for w in spills]


# ---------------------------------------------------------------- silent surprises
def _pipelined_into_fragments():
    @T.prim_func
    def colsum(A: T.Tensor((1024, 128), "float32"), B: T.Tensor((32, 128), "float32")):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((32, 128), "float32")
            tile = T.alloc_fragment((32, 128), "float32")
            T.clear(acc)
            for k in T.Pipelined(32, num_stages=2):  # not pipelined
                T.copy(A[k * 32, 0], tile)
                for i, j in T.Parallel(32, 128):
                    acc[i, j] += tile[i, j]
            T.copy(acc, B)

    return colsum


@needs_nvrtc
def test_pipelined_loop_that_is_not_pipelined_warns_once_at_the_loop(fresh_cache):
    func = _pipelined_into_fragments()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        tilec.compile(func, target="sm_80")
        tilec._tilec.clear_memory_cache()
        tilec.compile(func, target="sm_90a")
    found = [w for w in caught if issubclass(w.category, TilecWarning)]
    assert len(found) == 1, [str(w.message) for w in caught]
    w = found[0]
    assert w.filename == __file__ and w.lineno == _line_of(_pipelined_into_fragments, "# not pipelined")
    assert "T.Pipelined(num_stages=2) runs as a plain serial loop" in str(w.message)
    assert "'tile', which is not in shared memory" in str(w.message)
    assert "hint: stage the loads through T.alloc_shared" in str(w.message)


def test_print_in_a_kernel_body_warns_at_parse_time():
    tilec.errors._registry.clear()

    def make():
        @T.prim_func
        def k(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                for i in T.serial(4):
                    print(i)  # runs in Python
                    A[i] = 0.0

        return k

    with pytest.warns(TilecWarning, match=r"print\(\.\.\.\) in a kernel body runs once, in Python") as caught:
        make()
    assert caught[0].lineno == _line_of(make, "# runs in Python") and caught[0].filename == __file__


def test_tensor_without_dtype_is_an_error_with_a_hint():
    with pytest.raises(tilec.CompileError) as info:
        @T.prim_func
        def k(A: T.Tensor((64, 128))):  # no dtype
            with T.Kernel(1, threads=128) as bx:
                A[0, 0] = 0.0
    e = info.value
    assert e.message == "T.Tensor needs a dtype: the element type of the tensor is not assumed"
    assert e.hint.startswith('write T.Tensor((64, 128), "float16")')
    assert e.file == __file__ and "# no dtype" in e.source_line()
    with pytest.raises(tilec.CompileError, match="T.Tensor needs a dtype"):
        T.Tensor[(64, 128)]
    assert T.Tensor((64, 128), "float16").dtype == "float16"


# ---------------------------------------------------------------- errors
def _mixed_dtype_gemm():
    @T.prim_func
    def mixed(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 128), "bfloat16"),
              C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "bfloat16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)  # mixed
            T.copy(C_l, C)

    return mixed


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_mixed_gemm_operand_dtypes_say_so(fresh_cache, target):
    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(_mixed_dtype_gemm(), target=target)
    e = info.value
    assert e.message == "T.gemm: the operands A and B must have the same dtype, got A float16 and B bfloat16"
    assert "tcgen05" not in str(e) and "wgmma" not in str(e)
    assert e.hint and e.line == _line_of(_mixed_dtype_gemm, "# mixed")


def _too_much_shared():
    @T.prim_func
    def big(A: T.Tensor((1024, 1024), "float32"), B: T.Tensor((1024, 1024), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((256, 256), "float32")  # 256 KiB
            R = T.alloc_shared((16, 16), "float32")
            T.copy(A[0, 0], S)
            T.copy(A[0, 0], R)
            T.copy(S, B[0, 0])
            T.copy(R, B[512, 512])

    return big


@needs_nvrtc
def test_shared_memory_too_large_points_at_the_allocations(fresh_cache):
    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(_too_much_shared(), target="sm_90a")
    e = info.value
    line_s = _line_of(_too_much_shared, "# 256 KiB")
    assert e.line == line_s and "S = T.alloc_shared" in e.source_line()
    assert f"S 262144 bytes (line {line_s})" in e.message
    assert f"R 1024 bytes (line {line_s + 1})" in e.message


def test_uncaught_compile_error_prints_no_tilec_frame(tmp_path):
    script = tmp_path / "user_kernel.py"
    script.write_text(textwrap.dedent("""\
        import tilec.language as T

        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                A[0] = undefined_thing
    """))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert out.returncode == 1
    assert "Traceback" in out.stderr and str(script) in out.stderr
    assert "function.py" not in out.stderr and "with_traceback" not in out.stderr, out.stderr
    assert "user_kernel.py:6:" in out.stderr and "undefined_thing" in out.stderr


def test_sm100_is_refused():
    with pytest.raises(tilec.CompileError, match=r"tilec does not support sm_100 \(Blackwell\) yet"):
        tilec.compile(_mixed_dtype_gemm(), target="sm_100a")


def test_pytest_failure_report_shows_no_tilec_frame(tmp_path):
    # The frames that re-raise a CompileError set __tracebackhide__ (pytest and IPython).
    test = tmp_path / "test_user.py"
    test.write_text(textwrap.dedent("""\
        import tilec.language as T

        def test_kernel():
            @T.prim_func
            def main(A: T.Tensor((128,), "float32")):
                with T.Kernel(1, threads=128) as bx:
                    A[0] = undefined_thing
    """))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 1
    assert "name 'undefined_thing' is not defined" in out.stdout
    assert "with_traceback" not in out.stdout and "function.py" not in out.stdout, out.stdout


def test_ipython_traceback_shows_no_tilec_frame(tmp_path):
    pytest.importorskip("IPython")
    (tmp_path / "user_kernel.py").write_text(textwrap.dedent("""\
        import tilec.language as T

        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                A[0] = undefined_thing
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"), str(tmp_path)]))
    out = subprocess.run([sys.executable, "-m", "IPython", "--colors=NoColor", "-c", "import user_kernel"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    text = out.stdout + out.stderr
    assert "name 'undefined_thing' is not defined" in text
    assert "function.py" not in text and "with_traceback" not in text, text


@needs_nvrtc
def test_reduce_across_warps_prints_no_if_true(fresh_cache):
    # The scratch writer guard folds to true when every thread writes: no `if (true)`.
    @T.prim_func
    def colsum(A: T.Tensor((1024, 128), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_fragment((32, 128), "float32")
            part = T.alloc_fragment((128,), "float32")
            T.copy(A[0, 0], tile)
            T.reduce_sum(tile, part, dim=0)
            T.copy(part, B)

    src = tilec.compile(colsum, target="sm_80").get_kernel_source()
    assert "_red_shared" in src and "if (true)" not in src


@needs_nvrtc
def test_column_sum_loop_takes_two_barriers_per_step(fresh_cache):
    # Issue 13's column sum: a cross-warp reduction in a loop. Its shared scratch is written and
    # read every step: one barrier before the write (the last step's readers) and one before
    # the read — the minimum for one scratch buffer (it once took four).
    @T.prim_func
    def colsum(A: T.Tensor((1024, 128), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_fragment((32, 128), "float32")
            part = T.alloc_fragment((128,), "float32")
            acc = T.alloc_fragment((128,), "float32")
            T.clear(acc)
            for k in T.serial(32):
                T.copy(A[k * 32, 0], tile)
                T.reduce_sum(tile, part, dim=0)
                for j in T.Parallel(128):
                    acc[j] += part[j]
            T.copy(acc, B)

    # (tilec.defer_row_sums off: the per-step reduction as written)
    src = tilec.compile(colsum, target="sm_80", pass_configs={"tilec.defer_row_sums": False}).get_kernel_source()
    loop = src[src.index("for (int k = 0; k < 32; ++k) {"):src.index("if (tx / 32 == 0)")]
    assert loop.count("__syncthreads();") == 2, loop
    # By default acc (cleared, then acc += part every step) keeps per-thread partials: no barrier
    # in the loop, one cross-warp reduction after it.
    src = tilec.compile(colsum, target="sm_80").get_kernel_source()
    loop = src[src.index("for (int k = 0; k < 32; ++k) {"):src.index("acc_red")]
    assert "__syncthreads" not in loop and "acc_red_shared" in src, src
