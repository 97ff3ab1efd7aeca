"""T.gemm with A in a register fragment (tl::gemm_rs) through the Python front end: a fragment
loaded from global memory feeds the mma.sync path directly, and the policy that cannot give
every warp its own rows of A reads A from a shared-memory copy instead."""
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _kernel(policy, dtype="float16"):
    @T.prim_func
    def f(A: T.Tensor((64, 64), dtype), D: T.Tensor((64, 64), dtype), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            D_shared = T.alloc_shared((64, 64), dtype)
            P = T.alloc_fragment((64, 64), dtype)
            C_local = T.alloc_fragment((64, 64), "float32")
            T.copy(A, P)
            T.copy(D, D_shared)
            T.gemm(P, D_shared, C_local, clear_accum=True, policy=policy)
            T.copy(C_local, C)

    return f


@pytest.mark.parametrize("policy", [T.GemmWarpPolicy.Square, T.GemmWarpPolicy.FullRow])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fragment_a_from_global_lowers_to_gemm_rs(policy, dtype):
    kernel = tilec.compile(_kernel(policy, dtype), target="sm_80")
    src = kernel.get_kernel_source()
    assert "tl::gemm_rs<64, 64, 64, 4, 1, false, true, " in src, src
    assert "mma.sync.aligned.m16n8k16" in kernel.get_ptx()
    assert kernel.ptxas_info["spill_stores_bytes"] == 0


def test_full_col_policy_stages_a_through_shared_memory():
    # FullCol cannot give every warp its own rows of a register A: the compiler copies A to
    # shared memory and runs the shared-memory form (stage_gemm_operands), as TileLang does.
    kernel = tilec.compile(_kernel(T.GemmWarpPolicy.FullCol), target="sm_80")
    src = kernel.get_kernel_source()
    assert "P_stage" in src, src
    assert "tl::gemm_ss<" in src, src


def _reloaded_kernel(touch_between=False):
    """P is written to shared memory and loaded back into a fragment (upstream's MLA decode)."""

    @T.prim_func
    def f(A: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((64, 64), "float32")
            S_shared = T.alloc_shared((64, 64), "float16")
            P = T.alloc_fragment((64, 64), "float16")
            D_shared = T.alloc_shared((64, 64), "float16")
            C_local = T.alloc_fragment((64, 64), "float32")
            T.copy(A, acc)
            T.copy(acc, S_shared)
            T.copy(S_shared, P)
            T.copy(D, D_shared)
            if touch_between:
                for i, j in T.Parallel(64, 64):
                    P[i, j] = P[i, j] * 2
            T.gemm(P, D_shared, C_local, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
            T.copy(C_local, C)

    return f


def test_a_fragment_loaded_whole_from_shared_memory_is_read_from_there():
    # No second shared copy of P: the gemm reads S_shared, which holds the same values.
    src = tilec.compile(_reloaded_kernel(), target="sm_80").get_kernel_source()
    assert "P_stage" not in src and "tl::gemm_ss<" in src, src
    # Once P changes after the load, it is staged as before.
    src = tilec.compile(_reloaded_kernel(touch_between=True), target="sm_80").get_kernel_source()
    assert "P_stage" in src, src


def test_a_fragment_loaded_from_shared_memory_agrees_on_the_cpu_target():
    import numpy as np

    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    d = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    tilec.compile(_reloaded_kernel(), target="cpu")(a, d, c)
    ref = a.astype(np.float16).astype(np.float32) @ d.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)


def _register_b_kernel():
    @T.prim_func
    def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 64), "float16")
            b_f = T.alloc_fragment((64, 64), "float16")
            c_f = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a_s)
            for i, j in T.Parallel(64, 64):
                b_f[i, j] = B[i, j] * 2.0
            T.clear(c_f)
            T.gemm(a_s, b_f, c_f)
            T.copy(c_f, C)

    return f


@pytest.mark.parametrize("target,form", [("sm_90a", "tl::wgmma_gemm_ss<"), ("sm_80", "tl::gemm_ss<")])
def test_register_b_goes_through_shared_memory(target, form):
    # No gemm instruction reads B from registers; TileLang takes such a B (upstream's KDA
    # backward, gemm_sr): stage_gemm_operands copies it to a shared tile first.
    src = tilec.compile(_register_b_kernel(), target=target).get_kernel_source()
    assert "b_f_stage" in src and form in src, src


def test_register_b_on_the_cpu_target_agrees():
    import numpy as np

    A = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float16)
    B = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float16)
    C = np.zeros((64, 64), np.float32)
    tilec.compile(_register_b_kernel(), target="cpu")(A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float32) @ (2 * B.astype(np.float32)), rtol=2e-2, atol=2e-2)
