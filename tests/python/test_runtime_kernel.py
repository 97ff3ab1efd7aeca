"""The runtime's Python side without a GPU: compiling hand-written CUDA C with NVRTC,
the kernel object's introspection, argument validation (numpy arrays stand in for
tensors: they pass every check but the device one), launch plan text, the disk cache.
"""
import importlib
import sys

import pytest

np = pytest.importorskip("numpy")
kernel_mod = importlib.import_module("tilec.kernel")
_tilec = importlib.import_module("tilec._tilec")

nvrtc_ok, nvrtc_why = _tilec.nvrtc_available()
needs_nvrtc = pytest.mark.skipif(not nvrtc_ok, reason=f"NVRTC not found: {nvrtc_why}")

ADD_SOURCE = """
extern "C" __global__ void __launch_bounds__(256) add(const float* a, const float* b, float* c, float alpha, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) c[i] = a[i] + alpha * b[i];
}
"""

ADD_PLAN = """tilec-launch-plan 1
kernel add
symbol n int32
tensor A float32 shape=[n] align=16
tensor B float32 shape=[n] align=16
tensor C float32 shape=[n] output=1
scalar alpha float32
param tensor 0
param tensor 1
param scalar 0
param tensor 2
arg tensor 0
arg tensor 1
arg tensor 2
arg scalar 0
arg symbol n int32
grid (// (+ n 255) 256)
block 256 1 1
"""

SIGNATURE = "add(A: float32[n], B: float32[n], alpha: float32) -> C: float32[n]"


@pytest.fixture(scope="module")
def add_kernel(tmp_path_factory):
    return kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_90a",
                                   cache_dir=str(tmp_path_factory.mktemp("cache")))


@needs_nvrtc
def test_kernel_introspection(add_kernel):
    k = add_kernel
    assert isinstance(k, kernel_mod.Kernel)
    assert k.signature == SIGNATURE
    assert k.kernel_name == "add"
    assert k.target == "sm_90a"
    assert k.get_kernel_source() == ADD_SOURCE
    assert ".entry add" in k.get_ptx()
    info = k.ptxas_info
    assert info["registers"] > 0
    assert info["spill_stores_bytes"] == 0
    assert "ptxas" in info["log"]
    assert "grid ((n + 255) // 256), block (256, 1, 1)" in k.launch_plan_summary()
    assert k.symbols == ["n"]
    params = k.params()
    assert [p["name"] for p in params] == ["A", "B", "alpha", "C"]
    assert params[3]["is_output"] and params[3]["shape"] == ["n"]
    assert params[2] == {"name": "alpha", "kind": "scalar", "dtype": "float32", "is_output": False}
    assert repr(k) == f"<tilec.Kernel {SIGNATURE}>"
    assert kernel_mod.param_shapes(k, {"n": 7}) == [(7,), (7,), None, (7,)]


@needs_nvrtc
def test_param_shapes_needs_every_symbol(add_kernel):
    with pytest.raises(kernel_mod.KernelArgumentError, match=r"symbolic dimension 'n'; give its value"):
        kernel_mod.param_shapes(add_kernel, {})


@needs_nvrtc
@pytest.mark.parametrize("args,message", [
    ((), "takes 3 arguments (or 4 with the outputs), got 0"),
    (("A", "B", 1.0, "C", 5), "takes 3 arguments (or 4 with the outputs), got 5"),
    ((np.zeros(8, np.float64), np.zeros(8, np.float32), 1.0),
     f"argument 'A' of kernel {SIGNATURE}: expected dtype float32, got float64"),
    ((np.zeros((2, 4), np.float32), np.zeros(8, np.float32), 1.0),
     "expected a 1-d tensor (A: float32[n]), got a 2-d tensor of shape [2, 4]"),
    ((np.zeros(8, np.float32), np.zeros(9, np.float32), 1.0),
     "argument 'B' of kernel " + SIGNATURE + ": dimension 0 is the symbol 'n' = 8 (set by argument 'A' dimension 0), "
     "got 9 (shape [9])"),
    ((np.zeros(16, np.float32)[::2], np.zeros(8, np.float32), 1.0),
     "expected a contiguous (row-major) tensor, got strides [2] for shape [8]"),
    ((np.zeros(8, np.float32), np.zeros(8, np.float32), "x"), "argument 'alpha' of kernel " + SIGNATURE +
     ": expected a scalar of type float32, got str"),
    ((np.zeros(8, np.float32), 3, 1.0), "argument 'B' of kernel " + SIGNATURE + ": expected a tensor, got an int"),
    ((np.zeros(8, np.float32), np.zeros(8, np.float32), 1.0),
     f"argument 'A' of kernel {SIGNATURE}: expected a CUDA tensor, got a tensor on cpu"),
])
def test_argument_errors(add_kernel, args, message):
    with pytest.raises(kernel_mod.KernelArgumentError) as info:
        add_kernel(*args)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


@needs_nvrtc
def test_unknown_keyword_is_a_type_error(add_kernel):
    with pytest.raises(TypeError, match="unexpected keyword argument 'streem'"):
        add_kernel(np.zeros(8, np.float32), np.zeros(8, np.float32), 1.0, streem=0)


@needs_nvrtc
def test_disk_cache_hit_after_memory_cache_is_cleared(tmp_path):
    _tilec.clear_memory_cache()  # other tests may have compiled the same source in this process
    first = kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", cache_dir=str(tmp_path))
    assert not first.from_cache
    assert kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", cache_dir=str(tmp_path)).from_cache
    _tilec.clear_memory_cache()
    again = kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", cache_dir=str(tmp_path))
    assert again.from_cache
    assert again.cache_key == first.cache_key
    assert again.ptxas_info == first.ptxas_info
    entries = list(tmp_path.rglob("*.tkc"))
    assert [e.name for e in entries] == [first.cache_key + ".tkc"]
    uncached = kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", use_cache=False)
    assert not uncached.from_cache


@needs_nvrtc
def test_a_fresh_process_hits_the_disk_cache_however_tilec_was_imported(tmp_path):
    """The key names the build by its canonical path: a process that imported tilec through a
    sys.path entry with '..' in it (as tests/gpu's harness does) shares entries with one that
    did not (it missed them on the H200, 2026-12-02)."""
    import os
    import subprocess
    import textwrap

    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, sys.argv[1])
        import tilec.kernel as K
        k = K.compile_cuda({ADD_SOURCE!r}, {ADD_PLAN!r}, target="sm_80", cache_dir={str(tmp_path)!r})
        print(k.from_cache, k.cache_key)
    """)
    keys = []
    for path in (os.path.join(root, "tests", "python", "..", "..", "python"), os.path.join(root, "python")):
        env = dict(os.environ, PYTHONPATH="")
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        keys.append(out.stdout.split())
    assert keys[0][0] == "False" and keys[1] == ["True", keys[0][1]], keys


@needs_nvrtc
def test_disable_cache_turns_off_the_memory_cache_too(tmp_path, monkeypatch):
    # TILEC_DISABLE_CACHE=1 means every compile is cold (compile-time measurements rely on it).
    kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", cache_dir=str(tmp_path))  # now in memory
    monkeypatch.setenv("TILEC_DISABLE_CACHE", "1")
    assert not kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", cache_dir=str(tmp_path)).from_cache


@needs_nvrtc
def test_out_idx_overrides_plan(tmp_path):
    plan = ADD_PLAN.replace("shape=[n] output=1", "shape=[n]")
    k = kernel_mod.compile_cuda(ADD_SOURCE, plan, target="sm_80", out_idx=[-1], cache_dir=str(tmp_path))
    assert k.signature == SIGNATURE
    with pytest.raises(Exception, match="out_idx 2 refers to the scalar parameter 'alpha'"):
        kernel_mod.compile_cuda(ADD_SOURCE, plan, target="sm_80", out_idx=[2], cache_dir=str(tmp_path))


@needs_nvrtc
def test_compile_error_shows_the_source_line(tmp_path):
    bad = ADD_SOURCE.replace("alpha * b[i]", "alpha * missing_thing")
    with pytest.raises(Exception) as info:
        kernel_mod.compile_cuda(bad, ADD_PLAN, target="sm_80", cache_dir=str(tmp_path))
    text = str(info.value)
    assert "NVRTC failed to compile kernel 'add' for sm_80" in text
    assert "missing_thing" in text
    assert "c[i] = a[i] + alpha * missing_thing;" in text


@needs_nvrtc
def test_compile_flags_reach_the_compiler(tmp_path):
    src = ADD_SOURCE.replace("alpha * b[i]", "SCALE * b[i]")
    k = kernel_mod.compile_cuda(src, ADD_PLAN, target="sm_80", compile_flags=["-DSCALE=3.0f"],
                                cache_dir=str(tmp_path))
    assert k.ptxas_info["registers"] > 0


def test_launch_plan_text_round_trip():
    text = _tilec.normalize_launch_plan(ADD_PLAN)
    assert _tilec.normalize_launch_plan(text) == text
    assert "param scalar 0" in text and "grid (// (+ n 255) 256)" in text
    minimal = _tilec.normalize_launch_plan("tilec-launch-plan 1\nkernel k\ntensor X float16 shape=[4,8]\ngrid 2\n")
    assert "arg tensor 0" in minimal and "block 1 1 1" in minimal
    # a pointer parameter (a: T.ptr) is a scalar of type handle
    pointer = _tilec.normalize_launch_plan("tilec-launch-plan 1\nkernel k\nscalar a_ptr handle\narg scalar 0\ngrid 1\n")
    assert "scalar a_ptr handle" in pointer and _tilec.normalize_launch_plan(pointer) == pointer


def test_launch_plan_text_errors():
    with pytest.raises(Exception, match=r"line 3: unknown item 'grd'"):
        _tilec.normalize_launch_plan("tilec-launch-plan 1\nkernel k\ngrd 1\n")


def test_modules_import_without_torch():
    code = "import sys, tilec.kernel, tilec.profiler; print('torch' in sys.modules)"
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=None)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_driver_probe_never_raises():
    ok, why = _tilec.driver_available()
    assert isinstance(ok, bool)
    assert ok or "libcuda" in why or "cuInit" in why
