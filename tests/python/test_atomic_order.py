"""T.atomic_load / T.atomic_store with a memory order (upstream TileLang's atomics): one element of
32 or 64 bits, at GPU scope — ld.relaxed / ld.acquire, st.relaxed / st.release, fence.sc before a
seq_cst access (checked in the PTX NVRTC makes); the CPU target reads and writes plainly; orders a
load or a store cannot take, 16-bit elements and regions are CompileErrors."""
import numpy as np
import pytest

import tilec
import tilec.language as T

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def flags(load_order="acquire", store_order="release", dtype="int32"):
    @T.prim_func
    def main(F: T.Tensor((4,), dtype), O: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=32):
            v = T.alloc_var(dtype)
            v = T.atomic_load(F[1], memory_order=load_order)
            T.atomic_store(F[2], v + 5, memory_order=store_order)
            O[0] = T.atomic_load(F[2])

    return main


@needs_nvrtc
@pytest.mark.parametrize("load_order, store_order, dtype, ptx", [
    ("acquire", "release", "int32", ["ld.acquire.gpu.b32", "st.release.gpu.b32", "fence.sc.gpu"]),
    ("relaxed", "seq_cst", "float64", ["ld.relaxed.gpu.b64", "st.relaxed.gpu.b64", "fence.sc.gpu"]),
    ("consume", "relaxed", "uint64", ["ld.acquire.gpu.b64", "st.relaxed.gpu.b64"]),
])
def test_orders_become_their_ptx(load_order, store_order, dtype, ptx):
    kernel = tilec.compile(flags(load_order, store_order, dtype), target="sm_90a")
    text = kernel.get_ptx()
    for p in ptx:
        assert p in text, p


def test_the_cpu_target_loads_and_stores():
    f = np.array([1, 7, 0, 0], np.int32)
    o = np.zeros(4, np.int32)
    tilec.compile(flags(), target="cpu")(f, o)
    assert f.tolist() == [1, 7, 12, 0] and o[0] == 12


@pytest.mark.parametrize("load_order, store_order, message", [
    ("release", "release", "T.atomic_load: memory_order 'release' is not one a load takes"),
    ("acquire", "acquire", "T.atomic_store: memory_order 'acquire' is not one a store takes"),
])
def test_orders_an_access_cannot_take(load_order, store_order, message):
    with pytest.raises(tilec.CompileError, match=message):
        flags(load_order, store_order)


def test_16_bit_elements_and_regions_are_refused():
    with pytest.raises(tilec.CompileError, match="T.atomic_load of float16: 32- and 64-bit values only"):
        flags(dtype="float16")
    with pytest.raises(tilec.CompileError, match="T.atomic_store reads or writes one element"):
        @T.prim_func
        def region(F: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=32):
                T.atomic_store(F[0:2], 1)
