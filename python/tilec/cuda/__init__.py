"""`tilelang.cuda`: of upstream's CUDA intrinsics package tilec has the shared-memory swizzle
helper `intrinsics.make_mma_swizzle_layout`; the MMA / sparse macro generators are not part of
tilec (T.gemm / T.gemm_sp select the instructions), and importing them says so."""
from . import intrinsics  # noqa: F401
