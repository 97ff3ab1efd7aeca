"""Post-processing hooks for generated CUDA source: not part of tilec (the source tilec
generates is final; kernel.get_kernel_source() shows it)."""


def _unsupported(what: str):
    def decorator(*args, **kwargs):
        raise NotImplementedError(f"tilelang.engine.callback.{what} is not part of tilec: the generated CUDA "
                                  "cannot be rewritten by a callback")

    return decorator


register_cuda_postproc_callback = _unsupported("register_cuda_postproc_callback")
register_cuda_postproc = _unsupported("register_cuda_postproc")
register_hip_postproc_callback = _unsupported("register_hip_postproc_callback")
