"""Arithmetic analysis: integer bounds, proofs and the canonical simplifier.

    from tilelang.arith import Analyzer
    an = Analyzer()
    an.bind_range(i, 0, 128)          # 0 <= i < 128
    an.const_int_bound(i * 2 + 1)     # (1, 255)
    an.can_prove(i < 128)             # True
    with an.constraint(j < n):        # facts for the body of `if j < n:`
        an.simplify(T.min(j, n))      # j

Modules: `interval` (sound interval arithmetic), `poly` (the canonical
sum-of-products form), `atoms` (structural keys and atom interning), `bound`
(constant bounds of expressions), `rewrite` (parsing into and rebuilding from
the canonical form), `divmod` (division and modulo rules), `compare` (proofs,
comparisons, min/max, logic) and `analyzer` (the `Analyzer` class, which
combines them with scoped knowledge about variables).
"""

from .analyzer import Analyzer
from .interval import NEG_INF, POS_INF, dtype_range, is_index_dtype

__all__ = ["Analyzer", "NEG_INF", "POS_INF", "dtype_range", "is_index_dtype"]
