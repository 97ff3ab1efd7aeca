"""TileLang's gemm-side surface: clear_accum given as a kernel condition, T.wait_wgmma, and the
register-budget annotations (hints tilec accepts and ignores)."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def _kernel():
    @T.prim_func
    def g(A: T.Tensor((64, 256), T.float16), B: T.Tensor((64, 256), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), T.float16)
            Bs = T.alloc_shared((64, 64), T.float16)
            Cl = T.alloc_fragment((64, 64), T.float32)
            T.annotate_producer_reg_dealloc()
            T.annotate_consumer_reg_alloc(240)
            for k in T.serial(4):
                T.copy(A[0, k * 64], As)
                T.copy(B[0, k * 64], Bs)
                T.wgmma_gemm(As, Bs, Cl, transpose_B=True, clear_accum=(k == 0))
                T.wait_wgmma(0)
            T.copy(Cl, C)

    return g


def test_clear_accum_condition_clears_the_accumulator_when_it_holds():
    text = _kernel().script()
    assert "if k == 0:\n                T.fill(Cl, T.float32(0))\n            T.gemm(As, Bs, Cl, transpose_B=True" in text, text
    assert "clear_accum" not in text


def test_wait_wgmma_waits_on_sm90a():
    src = tilec.compile(_kernel(), target="sm_90a").get_kernel_source()
    assert "tl::wgmma_wait<0>();" in src
    # clear_accum=(k == 0) is the gemm's run-time clear there (fuse_clear_into_gemm: scale-d of
    # the first k-step), not a zeroing loop under an if.
    assert "if (k == 0)" not in src
    assert any(ln.strip().startswith("tl::wgmma_gemm_ss<") and ln.rstrip().endswith(", k == 0);")
               for ln in src.splitlines()), src
    kept = tilec.compile(_kernel(), target="sm_90a",
                         pass_configs={"tilec.fuse_clear_into_gemm": False}).get_kernel_source()
    assert "if (k == 0)" in kept


def _wait_after_gemm():
    """A gemm left pending (wg_wait=-1) and the wait that ends it, in a program for any target."""
    @T.prim_func
    def g(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), T.float16)
            Bs = T.alloc_shared((64, 64), T.float16)
            Cl = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cl, transpose_B=True, clear_accum=True, wg_wait=-1)
            T.wait_wgmma(0)
            for i, j in T.Parallel(64, 64):
                Cl[i, j] = Cl[i, j] * 2
            T.copy(Cl, C)

    return g


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_wait_wgmma_is_nothing_where_gemms_do_not_use_wgmma(target, tmp_path, monkeypatch):
    """Upstream Hopper programs call T.wait_wgmma; on sm_80 / plain sm_90 every gemm is done when
    it returns, so the wait compiles to nothing (before: ptxas rejected wgmma.wait_group)."""
    monkeypatch.setenv("TILEC_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("TILEC_DISABLE_CACHE", "1")
    k = tilec.compile(_wait_after_gemm(), target=target)
    assert "tl::wgmma_wait<0>();" in k.get_kernel_source()
    ptx = next(tmp_path.rglob("*.ptx")).read_text()
    assert "wgmma.wait_group" not in ptx and "mma.sync" in ptx


def test_wait_wgmma_is_nothing_on_the_cpu_target():
    import numpy as np

    k = tilec.compile(_wait_after_gemm(), target="cpu")
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c = np.full((64, 64), np.nan, np.float32)
    k(a, b, c)
    want = 2 * (a.astype(np.float64) @ b.astype(np.float64).T)
    assert np.abs(c - want).max() <= 1e-3 * np.abs(want).max()


def test_wait_wgmma_needs_a_constant_count():
    with pytest.raises(CompileError, match="must be >= 0"):
        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                T.wait_wgmma(-1)
