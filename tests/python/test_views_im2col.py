"""Views of global tensors (`T.Tensor(shape, dtype, A.data)`) and T.im2col, written as index
arithmetic in the front end (language/views.py)."""
import itertools
import re

import pytest

import tilec
import tilec.language as T
from tilec import CompileError

KH = KW = 3
C, F = 8, 16


def _view_kernel():
    @T.prim_func
    def viewed(Kf: T.Tensor((KH, KW, C, F), T.float16), O: T.Tensor((KH * KW * C, F), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((32, 16), T.float16)
            flat = T.Tensor((KH * KW * C, F), T.float16, Kf.data)
            T.copy(flat[32, 0], s)  # rows 32..63 of the view: the extents come from `s`
            T.copy(s, O[0:32, :])
            O[40, 1] = flat[40, 1]

    return viewed


def test_view_elements_are_the_base_elements_at_the_same_row_major_offset():
    text = _view_kernel().script()
    assert "O[40, 1] = Kf[1, 2, 0, 1]" in text  # offset 641 of a (3, 3, 8, 16) tensor
    line = re.search(r"s\[0 \+ s_c0, 0 \+ s_c1\] = Kf\[(.*)\]", text).group(1)
    fn = eval("lambda s_c0, s_c1: (" + line + ")")
    for i, j in itertools.product(range(32), range(16)):
        lin = (32 + i) * F + j
        assert fn(i, j) == (lin // (KW * C * F), lin // (C * F) % KW, lin // F % C, lin % F)
    assert "if s_c0 < 40 and s_c1 < 16:" in text  # rows past the view's end are not read
    tilec.compile(_view_kernel(), target="sm_90a")


def test_view_of_a_shared_buffer_is_refused():
    with pytest.raises(CompileError, match="views a global tensor"):
        @T.prim_func
        def bad(A: T.Tensor((64,), T.float16)):
            with T.Kernel(1, threads=128) as bx:
                s = T.alloc_shared((64,), T.float16)
                v = T.Tensor((8, 8), T.float16, s.data)


def test_im2col_matches_the_convolution_gather():
    N, H, W, Cc, K, S, D, P = 2, 5, 5, 4, 3, 1, 1, 1
    OH = OW = (H + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def gather(img: T.Tensor((N, H, W, Cc), T.float16), out: T.Tensor((16, 16), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            col = T.alloc_shared((16, 16), T.float16)
            T.im2col(img, col, 1, 1, K, S, D, P)
            T.copy(col, out)

    text = gather.script()
    m = re.search(r"col\[col_m, col_k\] = T\.if_then_else\((.*), img\[(.*)\], T\.cast\(0, 'float16'\)\)".replace("'", '"'), text)
    assert m, text
    cond = eval("lambda col_m, col_k: " + m.group(1).replace("&&", " and "))
    index = eval("lambda col_m, col_k: (" + m.group(2) + ")")
    for mm, kk in itertools.product(range(16), range(16)):
        row, k = 16 + mm, 16 + kk
        n, oh, ow = row // (OH * OW), row // OW % OH, row % OW
        kh, kw, c = k // (K * Cc), k // Cc % K, k % Cc
        ih, iw = oh * S + kh * D - P, ow * S + kw * D - P
        inside = row < N * OH * OW and k < K * K * Cc and 0 <= ih < H and 0 <= iw < W
        assert bool(cond(mm, kk)) == inside
        if inside:
            assert index(mm, kk) == (n, ih, iw, c)
    tilec.compile(gather, target="sm_90a")
