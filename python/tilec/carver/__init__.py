"""`tilelang.carver`: what TileLang programs use of it — the GPU description (`carver.arch`).
The roller (hint search) and the templates are not part of tilec: `MatmulTemplate` and the
like raise NotImplementedError saying so; tune with `tilec.autotune` over explicit configs."""

from . import arch  # noqa: F401
from .arch import CUDA, CDNA, driver  # noqa: F401
