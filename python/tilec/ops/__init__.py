"""Ready-made operators for PyTorch, built from tile programs (docs/OPS.md).

    import tilec.ops
    out = tilec.ops.flash_attn(q, k, v, causal=True)    # (batch, seq, heads, dim), autograd, torch.compile

torch is imported only when an operator is first looked up (`tilec.ops.flash_attn`), so that
`import tilec` and `import tilec.ops` work without torch. The tile programs themselves
(`tilec.ops.attention_kernels`) are pure `T` and need no torch.
"""

__all__ = ["flash_attn"]

_LAZY = {"flash_attn": "attention"}  # name -> submodule that defines it (imports torch)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
