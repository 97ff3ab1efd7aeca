"""tilec.ws_indirect_copies (on by default): warp specialization of loops whose copy regions, or
the values they depend on, read global tensors the kernel never writes (MLA / paged decoding's
block table, varlen offsets). The producer thread reads them and issues TMA at those rows."""
import os
import sys
import warnings

import pytest

import tilec
import tilec.language as T

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
ON = {"tilec.ws_indirect_copies": True}
OFF = {"tilec.ws_indirect_copies": False}


def _compile(f, **pc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tilec.compile(f, target="sm_90a", pass_configs=pc or None)


def test_mla_decoding_gets_a_producer_reading_the_block_table():
    from mla_decode import mla_decode

    f = mla_decode(8, 128, 8 * 16, 16, 2, dtype="bfloat16")[0]
    off = _compile(f, **OFF)
    assert "setmaxnreg" not in off.get_kernel_source()
    assert "tilec.ws_indirect_copies allows reads of tensors the kernel does not write" in off.explain(show=False)
    on = _compile(f)  # the default
    assert on.get_kernel_source() == _compile(f, **ON).get_kernel_source()
    src = on.get_kernel_source()
    assert "tl::setmaxnreg_dec<24>();" in src
    # The page comes from the block table, read by the producer, as TMA's outermost coordinate.
    assert "tl::tma_load(&KV_shared[p % 2 * 32768], tma_KV_cache, &p_full0[p % 2], 0, 0, " in src
    assert "block_table[by * 16 + tl::min(last_page, bz * 8 + p)]" in src  # (heads_first: the sequence is by)
    assert on.ptxas_info["spill_stores_bytes"] == 0


@pytest.mark.parametrize("example", ["flash_decoding", "flash_attention_varlen"])
def test_paged_and_varlen_attention_are_warp_specialized(example):
    if example == "flash_decoding":
        from flash_decoding import flash_decoding

        f = flash_decoding(4, 32, 8, 128, 4 * 32, 32, num_split=4, dtype="bfloat16")[0]
    else:
        from flash_attention_varlen import flash_attention_varlen

        f = flash_attention_varlen(4, 16, 64, 4 * 700, 4 * 800, 1024, is_causal=False, dtype="bfloat16")
    assert "setmaxnreg" not in _compile(f, **OFF).get_kernel_source()
    on = _compile(f)
    assert "setmaxnreg" in on.get_kernel_source() and on.ptxas_info["spill_stores_bytes"] == 0


def _table_gather(writes_table, n=512):
    """A pipelined gemm whose A rows come from a table idx; `writes_table`: the kernel also
    writes idx (its reads then cannot move to another warpgroup)."""
    @T.prim_func
    def f(A: T.Tensor((n, 64), "float16"), B: T.Tensor((64, 64), "float16"), idx: T.Tensor((n // 64,), "int32"),
          C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.copy(B, B_s)
            T.clear(acc)
            for k in T.Pipelined(n // 64, num_stages=2):
                T.copy(A[idx[k] * 64, 0], A_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C)
            if writes_table:
                idx[0] = 0

    return f


def test_a_table_the_kernel_writes_stays_with_the_consumers():
    k = _compile(_table_gather(True), **ON)
    assert "setmaxnreg" not in k.get_kernel_source()
    assert "computed from memory (e.g. a block table) that the kernel also writes" in k.explain(show=False)


def test_a_copy_region_read_from_a_table_names_the_config():
    off = _compile(_table_gather(False), **OFF)
    assert "setmaxnreg" not in off.get_kernel_source()
    assert ("is computed from memory (e.g. a block table); tilec.ws_indirect_copies lets the producer read it"
            in off.explain(show=False))
    assert "setmaxnreg" in _compile(_table_gather(False)).get_kernel_source()
