"""`tilec.ops.flash_attn`: FlashAttention for PyTorch, forward and backward compiled by tilec.

    out = tilec.ops.flash_attn(q, k, v, causal=False, scale=None)

q is (batch, seq_q, heads, dim), k and v (batch, seq_kv, heads_kv, dim) with heads_kv dividing
heads (GQA/MQA); fp16 or bf16 CUDA tensors; out is q's shape and dtype. `scale` defaults to
1/sqrt(dim). Causal masking is top-left aligned (torch SDPA's is_causal=True: query i sees keys
j <= i). The programs are `tilec.ops.attention_kernels` (the ones of examples/flash_attention*.py).

Two torch.library custom ops, so that the call works in eager mode, under autograd and inside
torch.compile(fullgraph=True) (fake implementations give the output shapes):
  tilec::flash_attn_fwd(q, k, v, causal, scale) -> (out, lse)          lse (batch, heads, seq_q) f32
  tilec::flash_attn_bwd(dout, q, k, v, out, lse, causal, scale) -> (dq, dk, dv)
Kernels are compiled on first use per (shapes, dtype, causal, scale, GPU) and kept in a dict
(tilec's disk cache makes a new process's first compile cheap too), with the attention pass
configs (attention_kernels.PASS_CONFIGS: the softmax's exp2 is the hardware's approximate one,
terms below 2^-126 of a row's largest flush to zero, as in FlashAttention and cuDNN).
This module imports torch; `tilec.ops` imports it only when `flash_attn` is first looked up.
"""
from __future__ import annotations

import functools
import math
import threading

import torch

from . import attention_kernels as _k

__all__ = ["flash_attn", "check_inputs", "MIN_SEQ_LEN"]

_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}
MIN_SEQ_LEN = _k.MIN_SEQ_LEN


def check_inputs(q, k, v, causal=False, scale=None):
    """Raises TypeError / ValueError (what was expected, what was given) for inputs that
    flash_attn does not take. Device is checked last, so that everything else can be checked
    on CPU or meta tensors."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"flash_attn: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"flash_attn: {name} must have rank 4 (batch, seq, heads, dim), "
                             f"got rank {t.dim()} with shape {tuple(t.shape)}")
    if q.dtype not in _DTYPES:
        raise TypeError(f"flash_attn: q must be float16 or bfloat16, got {q.dtype}")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"flash_attn: {name} must have q's dtype {q.dtype}, got {t.dtype}")
    if not isinstance(causal, bool):
        raise TypeError(f"flash_attn: causal must be a bool, got {type(causal).__name__}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise TypeError(f"flash_attn: scale must be a float or None, got {type(scale).__name__}")
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"flash_attn: scale must be a finite positive number, got {scale}")
    (b, sq, h, d), (bk, skv, hkv, dk) = q.shape, k.shape
    if tuple(k.shape) != tuple(v.shape):
        raise ValueError(f"flash_attn: k and v must have the same shape, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    if bk != b:
        raise ValueError(f"flash_attn: k and v must have q's batch size {b}, got {bk}")
    if dk != d:
        raise ValueError(f"flash_attn: k and v must have q's head dim {d}, got {dk}")
    if d not in _k.HEAD_DIMS:
        raise ValueError(f"flash_attn: head dim must be one of {', '.join(map(str, _k.HEAD_DIMS))}, got {d}")
    if hkv == 0 or h % hkv != 0:
        raise ValueError(f"flash_attn: k/v heads ({hkv}) must divide q's heads ({h})")
    if sq < MIN_SEQ_LEN or skv < MIN_SEQ_LEN:
        raise ValueError(f"flash_attn: sequence lengths must be at least {MIN_SEQ_LEN}, "
                         f"got seq_q {sq} and seq_kv {skv}")
    devices = {str(t.device) for t in (q, k, v)}
    if q.device.type != "cuda" or len(devices) != 1:
        raise ValueError(f"flash_attn: q, k and v must be CUDA tensors on one device, got "
                         f"{', '.join(str(t.device) for t in (q, k, v))}")


_cache = {}
_lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _target_of(index):
    major, minor = torch.cuda.get_device_capability(index)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def _kernels(kind, q, k, causal, scale):
    """The compiled kernel(s) of `kind` ("fwd" or "bwd") for these inputs, compiled once."""
    (b, sq, h, d), skv, hkv = q.shape, k.shape[1], k.shape[2]
    dtype = _DTYPES[q.dtype]
    target = _target_of(q.device.index if q.device.index is not None else torch.cuda.current_device())
    key = (kind, b, sq, skv, h, hkv, d, dtype, causal, scale, target)
    kernels = _cache.get(key)
    if kernels is None:
        from .. import compile as tilec_compile
        from ..kernel import spill_warnings_silenced

        with _lock:
            kernels = _cache.get(key)
            if kernels is None:
                if kind == "fwd":
                    block_M, block_N, threads = _k.forward_blocks(sq, skv, d, causal, target)
                    progs = [_k.flash_attention(b, h, sq, d, causal, block_M=block_M, block_N=block_N,
                                                threads=threads, dtype=dtype, heads_kv=hkv, seq_len_kv=skv,
                                                return_lse=True, sm_scale=scale)]
                else:
                    progs = _k.flash_attention_bwd(b, h, sq, d, causal, dtype=dtype, heads_kv=hkv,
                                                   seq_len_kv=skv, sm_scale=scale, target=target)
                configs = _k.PASS_CONFIGS if kind == "fwd" else _k.BACKWARD_PASS_CONFIGS
                # The blocks are the measured best for these sizes; where they spill a few bytes
                # (the backward at head dim 64: 8-76), that is part of what was measured, and a
                # warning would ask the op's users to change sizes they do not choose.
                with spill_warnings_silenced():
                    kernels = [tilec_compile(p, target=target, pass_configs=configs) for p in progs]
                _cache[key] = kernels
    return kernels


@torch.library.custom_op("tilec::flash_attn_fwd", mutates_args=(), device_types="cuda")
def flash_attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                   scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    b, sq, h, _ = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    if out.numel():
        (kernel,) = _kernels("fwd", q, k, causal, scale)
        kernel(q, k, v, out, lse)
    return out, lse


@flash_attn_fwd.register_fake
def _flash_attn_fwd_fake(q, k, v, causal, scale):
    b, sq, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, sq), dtype=torch.float32)


@torch.library.custom_op("tilec::flash_attn_bwd", mutates_args=(), device_types="cuda")
def flash_attn_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                   lse: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dout, q, k, v, out, lse = (t.contiguous() for t in (dout, q, k, v, out, lse))
    b, sq, h, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if q.numel() == 0 or k.numel() == 0:
        return dq.zero_(), torch.zeros_like(k), torch.zeros_like(v)
    preprocess, main, postprocess = _kernels("bwd", q, k, causal, scale)
    delta = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    preprocess(out, dout, delta)
    dq_acc = torch.zeros(q.shape, dtype=torch.float32, device=q.device)  # accumulated with atomics
    dk, dv = (torch.empty((b, skv, h, d), dtype=q.dtype, device=q.device) for _ in range(2))  # per q head
    main(q, k, v, dout, lse, delta, dq_acc, dk, dv)
    postprocess(dq_acc, dq)
    if hkv != h:  # GQA: sum each group of query heads' contributions, in float32
        dk, dv = (t.view(b, skv, hkv, h // hkv, d).sum(3, dtype=torch.float32).to(q.dtype) for t in (dk, dv))
    return dq, dk, dv


@flash_attn_bwd.register_fake
def _flash_attn_bwd_fake(dout, q, k, v, out, lse, causal, scale):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx, inputs, output):
    q, k, v, causal, scale = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.causal, ctx.scale = causal, scale


def _backward(ctx, dout, dlse):
    # dlse is ignored: flash_attn does not return the LSE.
    q, k, v, out, lse = ctx.saved_tensors
    if dout is None:
        dout = torch.zeros_like(out)
    dq, dk, dv = flash_attn_bwd(dout, q, k, v, out, lse, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None


flash_attn_fwd.register_autograd(_backward, setup_context=_setup_context)


def flash_attn(q, k, v, causal=False, scale=None):
    """softmax(q k^T * scale) v per (batch, head), with autograd; see the module docstring."""
    check_inputs(q, k, v, causal, scale)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    out, _ = flash_attn_fwd(q, k, v, causal, scale)
    return out
