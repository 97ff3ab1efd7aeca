"""The autotuner on the GPU (issue 11): a real GEMM sweep compiles every configuration in
parallel, checks each against the first one on the same inputs, times them, returns the fastest
as a working kernel, and remembers the winner on disk so that a second run times nothing."""
import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu

CONFIGS = [{"block_M": bm, "block_N": bn, "num_stages": s} for bm in (64, 128) for bn in (64, 128) for s in (2, 3)]


def matmul(M, N, K, block_M=128, block_N=128, num_stages=3):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, 32), "float16")
            B_s = T.alloc_shared((32, block_N), "float16")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=num_stages):
                T.copy(A[by * block_M, k * 32], A_s)
                T.copy(B[k * 32, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


M, N, K = 1024, 768, 512


def _inputs():
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    return a, b, (a.double() @ b.double()).float()


def test_gemm_sweep_times_every_config_and_caches_the_winner(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    from tilec.autotuner import AutoTuner

    def build(**config):  # the tuning key reads this function's source
        return matmul(M, N, K, **config)

    def tuner():
        return AutoTuner.from_kernel(build, CONFIGS).set_compile_args(out_idx=[-1]).set_profile_args(warmup=3, rep=10)

    first = tuner().run()
    assert first.tried == len(CONFIGS) and first.compiled >= 1 and not first.cached
    assert first.config in CONFIGS and first.latency is not None and first.latency > 0
    a, b, ref = _inputs()
    torch.testing.assert_close(first.kernel(a, b).float(), ref, rtol=2e-2, atol=2e-1)

    second = tuner().run()  # same program, arguments, configurations and GPU: read from disk
    assert second.cached and second.config == first.config
    torch.testing.assert_close(second.kernel(a, b).float(), ref, rtol=2e-2, atol=2e-1)


def test_decorator_form_returns_a_working_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    tuned = tilec.autotune(configs=CONFIGS, warmup=3, rep=10)(tilec.jit(out_idx=[-1])(matmul))
    kernel = tuned(M, N, K)
    a, b, ref = _inputs()
    torch.testing.assert_close(kernel(a, b).float(), ref, rtol=2e-2, atol=2e-1)
    assert list((tmp_path / "autotune").glob("*.json")), "the winner was not written to the disk cache"
