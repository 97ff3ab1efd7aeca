"""`tilelang.carver.template`: not part of tilec (see carver/__init__.py)."""


class _Template:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"tilelang.carver.template.{type(self).__name__} (roller hints) is not part of "
                                  "tilec: list configurations yourself and tune them with tilec.autotune")


class MatmulTemplate(_Template):
    pass


class GEMVTemplate(_Template):
    pass


class ElementwiseTemplate(_Template):
    pass


class FlashAttentionTemplate(_Template):
    pass


class ConvTemplate(_Template):
    pass


class GeneralReductionTemplate(_Template):
    pass
