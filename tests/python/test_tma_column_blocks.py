"""TMA into a column block of a shared tile (`T.tma_copy(A[.., j*64:(j+1)*64], S[:, j*64:(j+1)*64])`,
as FlashMLA loads K in 64-column pieces): a swizzled tile stores each span-wide column block as
its own rows x span array, so a box of whole spans writes it like a whole tile. Blocks that are
not whole spans, and row-major tiles, cannot be written by a box: T.tma_copy says why, T.copy
uses the SIMT copy. No NVRTC needed (the source is generated, not compiled)."""
import pytest

import tilec
import tilec.language as T


def _column_loads(rows, cols, block, shift=0):
    n = cols // block

    @T.prim_func
    def k(A: T.Tensor((rows, cols), "float16"), B: T.Tensor((rows, cols), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((rows, cols), "float16")
            mbar = T.alloc_barrier(arrive_count=[1] * n)
            for j in T.unroll(n):
                T.tma_copy(A[:, j * block:(j + 1) * block], S[:, j * block + shift:(j + 1) * block + shift],
                           barrier=mbar[j])
                T.barrier_arrive(mbar[j])
            for j in T.unroll(n):
                T.barrier_wait(mbar[j], 0)
            T.copy(S, B)

    return k


def _loads(src):
    return [line.strip() for line in src.splitlines() if "tl::tma_load(" in line]


def test_a_column_block_of_a_swizzled_tile_is_one_box_at_its_block():
    src = tilec.compile(_column_loads(64, 256, 64), target="sm_90a").get_kernel_source()
    # 128B swizzle: 64 fp16 columns a block, each block 64 rows x 64 = 4096 elements.
    assert _loads(src) == ["tl::tma_load(&S[j * 4096], tma_A, &mbar[j], j * 64, 0);"], src
    expects = [line for line in src.splitlines() if "mbarrier_expect_tx" in line]
    assert len(expects) == 1 and "8192" in expects[0], src  # the block's bytes, not the tile's


def test_narrower_blocks_pick_a_narrower_swizzle():
    src = tilec.compile(_column_loads(64, 256, 32), target="sm_90a").get_kernel_source()
    assert _loads(src) == ["tl::tma_load(&S[j * 2048], tma_A, &mbar[j], j * 32, 0);"], src


def _error(func):
    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(func, target="sm_90a")
    return str(info.value)


def test_a_column_block_of_a_row_major_tile_is_refused():
    msg = _error(_column_loads(4, 128, 64))  # 4 rows: no swizzle fits, the tile is row-major
    assert "TMA cannot write a column block of shared tile 'S': its layout is row-major" in msg
    assert "hint: copy whole rows of the tile, or blocks of whole swizzle spans" in msg


def test_a_block_off_the_span_grid_is_refused():
    msg = _error(_column_loads(64, 256, 64, shift=32))
    assert "the block does not provably start at a multiple of the 64-column swizzle span" in msg


def test_a_block_narrower_than_32_bytes_is_refused():
    msg = _error(_column_loads(64, 256, 8))
    assert "a column block of a shared tile must be whole swizzle spans (a multiple of 32 bytes wide)" in msg


def test_a_plain_copy_of_a_column_block_falls_back_to_the_simt_copy():
    @T.prim_func
    def k(A: T.Tensor((4, 128), "float16"), B: T.Tensor((4, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((4, 128), "float16")
            T.copy(A, S)
            T.copy(S[:, 64:128], B)

    src = tilec.compile(k, target="sm_90a").get_kernel_source()
    assert "tma" not in src
