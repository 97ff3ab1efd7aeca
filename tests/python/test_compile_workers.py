"""compile_workers.py: forked worker processes fill the disk cache before the threads of
par_compile / the autotuner collect the kernels (NVRTC in threads stops scaling at ~3x)."""
import os
import sys

import pytest

import tilec
from tilec import compile_workers

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _programs(n, k=512):
    from gemm import matmul

    return [matmul(256, 256, k, 64, 64 * (1 + i % 2), 32, num_stages=2 + i % 2) for i in range(n)]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILEC_DISABLE_CACHE", raising=False)
    return tmp_path


def test_workers_fill_the_disk_cache_and_the_threads_find_it(fresh_cache):
    funcs = _programs(6)
    jobs = [lambda f=f: tilec.compile(f, target="sm_80") for f in funcs]
    assert compile_workers.warm_disk_cache(jobs, 4) == 4
    kernels = tilec.par_compile(funcs, target="sm_80", num_workers=4)
    assert all(k.from_cache for k in kernels)  # every cubin came from the workers (or job 0)
    # The same kernels as compiling one by one without any cache.
    os.environ["TILEC_DISABLE_CACHE"] = "1"
    try:
        for f, k in zip(funcs, kernels):
            fresh = tilec.compile(f, target="sm_80")
            assert not fresh.from_cache and fresh.get_kernel_source() == k.get_kernel_source()
    finally:
        del os.environ["TILEC_DISABLE_CACHE"]


def test_par_compile_uses_the_workers_and_reports_errors_in_order(fresh_cache):
    import tilec.language as T

    @T.prim_func
    def bad(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((64, 64), "float16")
            T.copy(A, s)
            T.gemm(s, s, s)  # a shared accumulator: no instruction takes it

    funcs = _programs(5) + [bad]
    out = tilec.par_compile(funcs, target="sm_80", num_workers=4, ignore_error=True)
    assert [k is None for k in out] == [False] * 5 + [True]
    assert sum(k.from_cache for k in out[:5]) >= 4  # job 0 compiled here, the rest by the workers
    with pytest.raises(tilec.CompileError):
        tilec.par_compile(funcs, target="sm_80", num_workers=4)


@pytest.mark.parametrize("jobs,workers,cache_off", [(8, 2, False), (3, 4, False), (8, 4, True)])
def test_workers_only_where_they_can_help(jobs, workers, cache_off, fresh_cache, monkeypatch):
    if cache_off:
        monkeypatch.setenv("TILEC_DISABLE_CACHE", "1")
    ran = []
    assert compile_workers.warm_disk_cache([lambda: ran.append(1)] * jobs, workers) == 0
    assert ran == []  # not even job 0: the caller's threads run everything


def test_a_crashing_worker_changes_nothing(fresh_cache):
    """A job that kills its worker (here: os._exit in job 2's process) leaves its compile to the
    threads; the parent never runs a job twice in itself during warm-up."""
    parent = os.getpid()
    ran_here = []

    def job(i):
        def run():
            if os.getpid() == parent:
                ran_here.append(i)
            elif i == 2:
                os._exit(3)
        return run

    assert compile_workers.warm_disk_cache([job(i) for i in range(9)], 4) == 4
    assert ran_here == [0]


def test_progress_counts_every_job_once(fresh_cache):
    seen = []
    assert compile_workers.warm_disk_cache([lambda: None] * 11, 4, on_done=lambda: seen.append(1)) == 4
    assert len(seen) == 11  # job 0 here, ten through the workers' pipe


def test_a_failing_first_job_still_leaves_the_rest_to_the_workers(fresh_cache):
    def fail():
        raise tilec.CompileError("this configuration does not compile")

    seen = []
    assert compile_workers.warm_disk_cache([fail] + [lambda: None] * 8, 4, on_done=lambda: seen.append(1)) == 4
    assert len(seen) == 9
