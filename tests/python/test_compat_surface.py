"""The tilelang API surface upstream programs use: autotuner (CPU semantics), PassConfigKey,
`python -m tilec.run`, the `tvm` stand-in, carver/testing/math helpers. CPU only, no torch."""

import logging
import os
import subprocess
import sys
import textwrap

import pytest

import tilec
import tilec.language as T
from tilec import CompileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _copy_factory(threads_ok=(64, 128)):
    @tilec.autotune(configs=[{"threads": 2048}, {"threads": 128}, {"threads": 64}])
    @tilec.jit(out_idx=[-1], target="sm_90a")
    def copy(n, threads=None):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(T.ceildiv(n, threads), threads=threads) as bx:
                for i in T.Parallel(threads):
                    B[bx * threads + i] = A[bx * threads + i]
        return main

    return copy


def test_autotune_without_a_gpu_takes_the_first_config_that_compiles(monkeypatch, caplog):
    import tilec.autotuner as autotuner

    monkeypatch.setattr(autotuner, "gpu_available", lambda: False)
    copy = _copy_factory()
    with caplog.at_level(logging.INFO, logger="tilec.autotuner"):
        kernel = copy(1024)
    assert "threads=128" in kernel.launch_plan_summary() or "128" in kernel.launch_plan_summary()
    assert "does not compile" in caplog.text  # threads=2048 is refused and logged
    assert "no CUDA GPU" in caplog.text
    # as TileLang's tuned kernels (upstream's examples read best_kernel.config)
    assert kernel.config == {"threads": 128} and hasattr(kernel, "latency") and hasattr(kernel, "ref_latency")


def test_autotune_with_every_tuned_parameter_given_is_a_plain_jit_call(monkeypatch):
    import tilec.autotuner as autotuner

    monkeypatch.setattr(autotuner, "gpu_available", lambda: False)
    copy = _copy_factory()
    kernel = copy(1024, threads=64)
    assert [p["name"] for p in kernel.params()] == ["A", "B"]


def test_autotuner_object_form(monkeypatch):
    import tilec.autotuner as autotuner

    monkeypatch.setattr(autotuner, "gpu_available", lambda: False)

    def kernel(threads=None):
        @T.prim_func
        def main(A: T.Tensor((256,), T.float32)):
            with T.Kernel(1, threads=threads) as _:
                for i in T.Parallel(256):
                    A[i] = 1.0
        return main

    result = autotuner.AutoTuner.from_kernel(kernel, [{"threads": 4096}, {"threads": 256}]) \
        .set_compile_args(target="sm_90a").set_profile_args(skip_check=True).run(warmup=1, rep=1)
    assert result.config == {"threads": 256}
    assert "__global__" in result.libcode


def test_autotune_reports_when_nothing_compiles(monkeypatch):
    import tilec.autotuner as autotuner

    monkeypatch.setattr(autotuner, "gpu_available", lambda: False)

    def kernel(threads=None):
        @T.prim_func
        def main(A: T.Tensor((256,), T.float32)):
            with T.Kernel(1, threads=threads) as _:
                A[0] = 1.0
        return main

    with pytest.raises(CompileError, match="none of the 1 configurations compiled"):
        autotuner.AutoTuner.from_kernel(kernel, [{"threads": 4096}]).set_compile_args(target="sm_90a").run()


def test_pass_config_keys_without_a_counterpart_are_dropped():
    from tilec.transform import split_pass_configs

    kept = split_pass_configs({tilec.PassConfigKey.TL_ENABLE_FAST_MATH: True,
                               tilec.PassConfigKey.TL_LAYOUT_VISUALIZATION_ENABLE: True,
                               "tl.disable_tma_lower": True})
    assert kept == {"tl.enable_fast_math": True, "tl.disable_tma_lower": True}


def test_unknown_pass_config_strings_still_reach_the_pass_context():
    from tilec.transform import split_pass_configs

    assert split_pass_configs({"tl.no_such_key": 1}) == {"tl.no_such_key": 1}


def test_math_and_arch_helpers():
    assert tilec.cdiv(10, 4) == 3
    assert tilec.next_power_of_2(33) == 64
    assert tilec.math.prev_power_of_2(33) == 32
    from tilec.carver.arch import driver

    assert driver.get_num_sms() > 0


def test_tilec_run_runs_a_program_with_tilelang_and_tvm_aliased(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent("""
        import sys
        import tilelang
        import tilelang.language as T
        from tilelang import tvm as tvm
        from tvm import DataType, tirx

        assert tilelang.PassConfigKey.TL_ENABLE_FAST_MATH == "tl.enable_fast_math"
        assert DataType("float16").bits == 16
        assert tvm.tirx is tirx
        print("ran", sys.argv[1:])
    """))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-m", "tilec.run", str(program), "x", "--y"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert out.returncode == 0, out.stdout.decode()
    assert "ran ['x', '--y']" in out.stdout.decode()


def test_tvm_names_outside_the_stand_in_say_so():
    import tilec.tvm as tvm

    with pytest.raises(AttributeError, match="not built on TVM"):
        tvm.relax  # noqa: B018


def test_not_provided_tools_raise_with_an_alternative():
    from tilec.carver.template import MatmulTemplate
    from tilec.errors import CompileError
    from tilec.tools import plot_layout

    with pytest.raises(NotImplementedError, match="tilec.autotune"):
        MatmulTemplate(M=1, N=1, K=1)
    # plot_layout is provided (tilec.layout_plot); what it cannot draw, it names.
    with pytest.raises(CompileError, match="plot_layout takes a layout"):
        plot_layout(None)


def test_autotune_over_an_eager_function_tunes_a_parameter_without_default(monkeypatch):
    import tilec.autotuner as autotuner

    monkeypatch.setattr(autotuner, "gpu_available", lambda: False)

    @tilec.autotune(configs=[{"block": 4096}, {"block": 64}])
    @tilec.jit(target="sm_90a")
    def ones(A, block):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                A[bx * block + i] = 1.0

    class Fake:
        shape = (256,)
        dtype = "float32"

    kernel = ones.compile(Fake())
    assert kernel.params()[0]["shape"] == [256]


def _add_one_kernel():
    @T.prim_func
    def add_one(A: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = A[i] + 1.0

    return tilec.compile(add_one, target="sm_90a")


def test_profiler_func_is_the_kernel():
    from tilec.profiler import Profiler

    kernel = _add_one_kernel()
    profiler = Profiler(kernel)
    assert profiler.func is kernel and profiler.adapter is kernel


def test_get_profiler_takes_the_supply_type_positionally():
    # Upstream examples write kernel.get_profiler(tilelang.TensorSupplyType.Auto).
    kernel = _add_one_kernel()
    assert kernel.get_profiler(tilec.TensorSupplyType.Normal).supply == tilec.TensorSupplyType.Normal
    assert kernel.get_profiler(tensor_supply_type=tilec.TensorSupplyType.Integer).supply == \
        tilec.TensorSupplyType.Integer


def test_do_bench_of_a_function_takes_its_own_inputs(monkeypatch):
    # The autotuner of an eager-JIT function times `lambda *_: kernel(*args)` with input_tensors=[]:
    # those are the function's arguments, not the kernel's (upstream topk example).
    from tilec import profiler as prof

    calls = []
    monkeypatch.setattr(prof, "do_bench", lambda call, **kw: (call(), 1.5)[1])
    p = prof.Profiler(_add_one_kernel())
    assert p.do_bench(lambda *a: calls.append(a), input_tensors=[]) == 1.5
    assert calls == [()]
    with pytest.raises(tilec.kernel.KernelArgumentError, match="takes 1 inputs, got 0 input_tensors"):
        p.do_bench(input_tensors=[])  # the kernel itself still checks its inputs


@pytest.mark.parametrize("supply, dtype, lo, hi, mean", [
    ("Normal", "float16", -7.0, 5.0, -1.0),     # TileLang: normal_(-1.0, 1.0)
    ("Randn", "float32", -7.0, 7.0, 0.0),
    ("Uniform", "bfloat16", -1.0, 1.0, 0.0),
    ("Auto", "float32", -1.0, 1.0, 0.0),        # Auto floats are uniform, not normal
    ("Auto", "float8_e4m3", -128.0, 128.0, 0.0),  # float8 from the int8 range
    ("Auto", "uint8", 0, 2, 1.0),
    ("Integer", "int32", -2, 2, 0.0),
    ("Normal", "int8", 1, 1, 1.0),               # TileLang gives int8 ones under Normal / Uniform
])
def test_tensor_supply_draws_as_tilelang_does(supply, dtype, lo, hi, mean):
    # An upstream example's tolerance was chosen for these distributions (the mamba chunk
    # examples fail at rtol 1e-2 with N(0, 1) inputs and pass with TileLang's N(-1, 1)).
    torch = pytest.importorskip("torch")
    from tilec.profiler import TensorSupplyType, _random_tensor

    t = _random_tensor((64, 256), dtype, getattr(TensorSupplyType, supply), "cpu").double()
    assert lo <= float(t.min()) and float(t.max()) <= hi
    assert abs(float(t.mean()) - mean) < 0.25 * max(1.0, abs(lo), abs(hi)) / 4
    assert float(t.std()) > 0 or lo == hi
    assert torch.count_nonzero(t) > 0


def test_eager_autotune_times_the_set_autotune_inputs(monkeypatch):
    # Upstream's mHC backward tunes `f.compile(n_stream=16)` (no tensors in the call) inside
    # `with set_autotune_inputs(R, dR):`: those tensors are the kernel's inputs when timing.
    import tilec.autotuner as autotuner

    seen = []
    monkeypatch.setattr(autotuner, "gpu_available", lambda: True)
    monkeypatch.setattr(autotuner, "_tuning_key", lambda *a: None)  # no disk cache, no torch.cuda
    monkeypatch.setattr(autotuner, "_profile_measure",
                        lambda profile, run_args=None: lambda k, c, ref: (seen.append(run_args(c)), c["block"])[1])

    @tilec.autotune(configs=[{"block": 128}, {"block": 64}])
    @tilec.jit(target="sm_90a")
    def ones(A, block):
        N = T.dynamic("N")
        A: T.Tensor((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                A[bx * block + i] = 1.0

    marker = object()
    with autotuner.set_autotune_inputs(marker):
        ones.compile()
    assert seen == [[marker], [marker]]


def _seen_run_args(monkeypatch):
    import tilec.autotuner as autotuner

    seen = []
    monkeypatch.setattr(autotuner, "gpu_available", lambda: True)
    monkeypatch.setattr(autotuner, "_tuning_key", lambda *a: None)  # no disk cache, no torch.cuda
    monkeypatch.setattr(autotuner, "_profile_measure",
                        lambda profile, run_args=None: lambda k, c, ref: (seen.append(run_args(c)), c["block"])[1])
    return seen


def _eager_ones():
    @tilec.autotune(configs=[{"block": 128}, {"block": 64}])
    @tilec.jit(target="sm_90a")
    def ones(A, B, block):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B: T.Tensor((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                A[bx * block + i] = B[bx * block + i] + 1.0

    return ones


def test_eager_autotune_of_a_call_without_tensors_times_generated_inputs(monkeypatch):
    # Upstream's gemv example tunes `gemv_alloc_reducer.compile(M=N, N=K)`: no tensors and no
    # set_autotune_inputs, so the profiler makes the inputs (run_args gives None), as for a lazy kernel.
    seen = _seen_run_args(monkeypatch)
    _eager_ones().compile(N=1024)
    assert seen == [None, None]


def test_eager_autotune_of_a_call_with_some_tensors_missing_says_which(monkeypatch):
    torch = pytest.importorskip("torch")
    _seen_run_args(monkeypatch)
    with pytest.raises(TypeError, match="needs the tensor argument 'B' to run"):
        _eager_ones().compile(torch.zeros(1024))


def test_generated_inputs_are_checked_against_the_first_configuration(monkeypatch):
    # With inputs the profiler makes, the eager kernel is compared with the first configuration's
    # kernel on them (as for a lazy kernel), then timed on them.
    import tilec.autotuner as autotuner

    calls = []

    class FakeProfiler:
        def assert_allclose(self, ref, input_tensors=None, **kw):
            calls.append(("check", ref, input_tensors))

        def do_bench(self, fn=None, input_tensors=None, **kw):
            calls.append(("bench", fn, input_tensors))
            return 2.0

    class FakeKernel:
        def get_profiler(self, tensor_supply_type=None):
            return FakeProfiler()

    monkeypatch.setattr(autotuner, "gpu_available", lambda: True)
    measure = autotuner._profile_measure(autotuner._ProfileArgs(), run_args=lambda config: None)
    first, other = FakeKernel(), FakeKernel()
    assert measure(other, {}, first) == 2.0
    assert calls == [("check", first, None), ("bench", None, None)]


def test_supply_programs_get_the_input_parameters_with_shape_and_dtype():
    # Upstream's AMD fp8 GEMM example: `a_param, b_param = args; M, K = a_param.shape`.
    torch = pytest.importorskip("torch")
    from tilec.profiler import Profiler

    @T.prim_func
    def mm(A: T.Tensor((64, 32), T.float16), B: T.Tensor((48, 32), T.float16), C: T.Tensor((64, 48), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i, j in T.Parallel(64, 48):
                C[i, j] = A[i, 0] * B[j, 0]

    kernel = tilec.compile(mm, target="sm_90a", out_idx=[-1])
    a_param, b_param = Profiler(kernel)._get_params()
    assert a_param.shape == (64, 32) and b_param.shape == (48, 32)
    assert a_param.dtype == torch.float16 and b_param.torch_dtype() == torch.float16
    assert [p.name for p in Profiler(kernel)._get_params(with_output=True)] == ["A", "B", "C"]


def test_tensor_supply_takes_the_profilers_parameters(monkeypatch):
    # TileLang's supply_prog idiom: get_tensor_supply()(param) on the parameters the autotuner
    # passes (torch dtypes): the supply reads the tilec dtype name from them.
    torch = pytest.importorskip("torch")
    from tilec.profiler import KernelParam
    from tilec.utils import tensor as tensor_utils

    seen = []
    monkeypatch.setattr(tensor_utils, "_random_tensor", lambda shape, name, supply, device: seen.append((shape, name)))
    supply = tensor_utils.get_tensor_supply()
    supply(KernelParam("A", (4, 8), torch.float16, "tensor"))
    supply(KernelParam("Q", (4, 8), torch.float4_e2m1fn_x2, "tensor"))
    assert seen == [((4, 8), "float16"), ((4, 8), "float4_e2m1")]
