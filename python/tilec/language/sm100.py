"""Names of TileLang's sm_100 (Blackwell) programming surface that upstream examples use, each a
clear CompileError when a program calls it (instead of "not a tilec primitive"): tilec targets
sm_80 / sm_90a, where it warp-specializes `T.Pipelined` loops by itself (and `T.ws(i)` splits
roles by hand), so the explicit schedule objects, cluster barriers and tensor-memory operations
have no tilec form yet. docs/LANGUAGE.md lists them."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError

_SCHEDULE = ("T.{name} belongs to TileLang's explicit warp-specialization schedule for sm_100 (Blackwell: "
             "T.WSSchedule, T.PersistentTileScheduler, tcgen05 / tensor memory), which tilec does not support")
_SCHEDULE_HINT = ("tilec targets sm_80 and sm_90a: write the loop as T.Pipelined with T.copy and T.gemm and tilec "
                  "warp-specializes it (TMA producer, wgmma consumers, persistent tiles) by itself; T.ws(i) splits "
                  "roles by hand")
_CLUSTER = "T.{name} is TileLang's sm_100 cluster barrier, which tilec does not support"
_CLUSTER_HINT = ("on sm_90a use T.Kernel(..., cluster_dims=...) with T.cluster_sync() / T.block_rank_in_cluster(); "
                 "tilec multicasts TMA loads across the cluster itself")


class _Unsupported:
    """Calling it, or reading any attribute of it (T.WSSync.producer_acquire), raises the error."""

    def __init__(self, name: str, message: str, hint: str):
        self.__name__ = name
        self._message, self._hint = message.format(name=name), hint
        self.__doc__ = self._message + ". " + hint

    def _raise(self):
        raise CompileError(self._message, hint=self._hint)

    def __call__(self, *args: Any, **kwargs: Any):
        self._raise()

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._raise()


_NAMES = {name: (_SCHEDULE, _SCHEDULE_HINT) for name in (
    "PersistentTileScheduler", "WSSchedule", "WSRole", "WSPipeline", "WSScope", "WSSync", "WSID",
    "annotate_ws_schedule", "ws_op")}
_NAMES.update({name: (_CLUSTER, _CLUSTER_HINT) for name in ("alloc_cluster_barrier",)})

UNSUPPORTED = {name: _Unsupported(name, *texts) for name, texts in _NAMES.items()}
