"""bench/bench_attention_more.py without a GPU: every program it times compiles for sm_90a, and
its roofline arithmetic is what its docstring says."""
import os
import sys

import pytest

import tilec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def test_programs_compile_and_the_roofline_is_consistent():
    import bench_attention_more as b

    assert b.compile_only() == 15  # 2 backward shapes x (4 programs + the 64x32x128 main kernel), 3 MLA (split 2 + combine, split 1 alone), 2 decode
    assert b.parse_blocks("default,128x64x256") == [None, (128, 64, 256)]
    flops, bytes_ = b.mla_counts(64, 4096)
    assert flops == 2.0 * 64 * 128 * 4096 * 1088
    bound, t = b.roofline(flops, bytes_)
    assert bound == "compute" and t == pytest.approx(flops / 989e12)  # ~228 FLOP/B > the 206 ridge
    assert b.roofline(1.0, 1e9)[0] == "memory"
    assert b.bwd_flops(1, 1, 10, 8, True) == pytest.approx(2.5 * 4 * 100 * 8 * 0.5)
    assert b.decode_bytes(2, 100, heads=4, heads_kv=2, dim=8) == 2.0 * (2 * 2 * 100 * 2 * 8 + 2 * 2 * 4 * 8)


def test_forward_block_candidates_parse_per_head_dim():
    import bench_attention_more as b

    assert b.parse_block_ns("0,176") == {0: ["0", "176"]}
    assert b.parse_block_ns("64:0,192x128x384;128:0,176;256:80") == {64: ["0", "192x128x384"], 128: ["0", "176"],
                                                                      256: ["80"]}
    assert b.forward_candidate("0") == ({"block_N": None}, {})
    assert b.forward_candidate("176") == ({"block_N": 176}, {})
    assert b.forward_candidate("192x128x384") == ({"block_M": 192, "block_N": 128, "threads": 384}, {})
    assert b.forward_candidate("128+s1+noiwo") == ({"block_N": 128, "num_stages": 1},
                                                   {"tilec.intra_wg_overlap": False})
    with pytest.raises(SystemExit, match="192x128"):
        b.forward_candidate("192x128")
    with pytest.raises(SystemExit, match="unknown modifier 'x2'"):
        b.forward_candidate("128+x2")


def test_backward_variants_parse():
    import bench_attention_more as b

    got = b.parse_bwd_variants('[{"name": "a"}, {"name": "b", "blocks": "128x128x256", '
                               '"options": {"rows_in_shared": false}, "pass_configs": {"tilec.stmatrix": true}}, {}]')
    assert got == [("a", None, {}, {}), ("b", (128, 128, 256), {"rows_in_shared": False}, {"tilec.stmatrix": True}),
                   ("v2", None, {}, {})]
    assert len(b.FWD_SHAPES) == 36 and all(bb * s == 16384 and h * d == 2048 for bb, h, s, d, _ in b.FWD_SHAPES)
