"""T.atomic_add on one element with a scalar value is a plain atomic call (as in TileLang),
so it works inside T.Parallel; on regions it stays a tile op."""
import tilec
import tilec.language as T


def _kernel():
    N, block = 4096, 256

    @T.prim_func
    def atomic(A: T.Tensor((N,), "float32"), S: T.Tensor((1,), "float32"), H: T.Tensor((block,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            F = T.alloc_fragment((block,), "float32")
            T.copy(A[bx * block], F)
            for i in T.Parallel(block):
                T.atomic_add(S[0], F[i])
            T.atomic_add(H, F)

    return atomic


def test_scalar_atomic_is_a_call_and_region_atomic_a_tile_op():
    text = _kernel().script()
    assert 'T.call_intrin("void", "tl.atomic_add"' in text or "tl.atomic_add" in text
    assert "T.atomic_add(H, F)" in text


def test_scalar_atomic_in_parallel_compiles():
    kernel = tilec.compile(_kernel(), target="sm_90a")
    src = kernel.get_kernel_source()
    assert "tl::atomic_add(&S[0]" in src, src


def test_atomic_add_of_a_tile_into_an_element_address_takes_the_tile_extents():
    @T.prim_func
    def splitk(C: T.Tensor((256, 256), T.float32)):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            C_local = T.alloc_fragment((128, 128), T.float32)
            T.clear(C_local)
            T.atomic_add(C[by * 128, bx * 128], C_local)

    assert "T.atomic_add(C[by * 128:by * 128 + 128, bx * 128:bx * 128 + 128], C_local)" in splitk.script()


def test_vector_atomic_add_is_one_atomic_per_element():
    @T.prim_func
    def scatter(D: T.Tensor((64, 64), "float32"), Idx: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float32")
            T.clear(S)
            for i, j in T.Parallel(64, 16):
                T.atomic_addx4(D[Idx[i], j * 4], S[i, j * 4])

    text = scatter.script()
    for k in ("", " + 1", " + 2", " + 3"):
        assert f"D[Idx[i], j * 4{k}]" in text, text
    src = tilec.compile(scatter, target="sm_90a").get_kernel_source()
    assert src.count("tl::atomic_add(") == 4, src
