"""examples/flash_attention_varlen.py's program on the CPU reference target against a float64
numpy reference: ragged sequences (one of length 1, one without keys), GQA, causal, both dtypes.
(The GPU run is the example itself.)"""
import os
import sys

import numpy as np
import pytest

import tilec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))


def _reference(q, k, v, cu_q, cu_k, causal):
    out = np.zeros_like(q, dtype=np.float64)
    heads, heads_kv, dim = q.shape[1], k.shape[1], q.shape[2]
    for b in range(len(cu_q) - 1):
        qs, qe, ks, ke = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        for h in range(heads):
            hk = h // (heads // heads_kv)
            s = q[qs:qe, h].astype(np.float64) @ k[ks:ke, hk].astype(np.float64).T / np.sqrt(dim)
            if causal:
                s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
            with np.errstate(invalid="ignore"):
                p = np.exp(s - s.max(axis=1, keepdims=True)) if s.size else s
                p = np.nan_to_num(p / p.sum(axis=1, keepdims=True)) if s.size else p
            if s.size:
                out[qs:qe, h] = p @ v[ks:ke, hk].astype(np.float64)
    return out


@pytest.mark.parametrize("seqlens_q,seqlens_k,heads,heads_kv,dim,causal", [
    ([70, 1, 33], [70, 0, 90], 2, 2, 64, False),
    ([65, 20], [65, 40], 4, 2, 64, True),
])
def test_varlen_forward_matches_numpy(seqlens_q, seqlens_k, heads, heads_kv, dim, causal):
    from flash_attention_varlen import flash_attention_varlen

    rng = np.random.default_rng(0)
    cu_q = np.concatenate([[0], np.cumsum(seqlens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(seqlens_k)]).astype(np.int32)
    q = rng.standard_normal((cu_q[-1], heads, dim)).astype(np.float16)
    k = rng.standard_normal((cu_k[-1], heads_kv, dim)).astype(np.float16)
    v = rng.standard_normal((cu_k[-1], heads_kv, dim)).astype(np.float16)
    func = flash_attention_varlen(len(seqlens_q), heads, dim, int(cu_q[-1]), int(cu_k[-1]), max(seqlens_q), causal,
                                  heads_kv)
    out = np.full(q.shape, np.nan, dtype=np.float16)
    tilec.compile(func, target="cpu")(q, k, v, cu_q, cu_k, out)
    ref = _reference(q, k, v, cu_q, cu_k, causal)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2)
