"""NumPy functions Dynamo cannot trace: ``torch._numpy`` has no implementation of them.

Dynamo traces a NumPy call in compiled code through ``torch._numpy``, on
arrays and plain Python values alike. A function that module does not
implement is refused (GB0294, "attempted to trace numpy function unsupported
by PyTorch"), wherever its arguments come from.

The names below are NumPy 2.x's top-level functions that torch 2.13's
``torch._numpy`` lacks, less the array-API aliases Dynamo maps to functions it
has (``np.pow``, ``np.atan2``: measured, no break) and the I/O, printing and
configuration helpers nobody calls in model code. Measured on torch 2.13
(each breaks with GB0294, also on Python lists): ``insert``, ``delete``,
``digitize``, ``interp``, ``intersect1d``, ``setdiff1d``, ``union1d``,
``isin``, ``nanmean``, ``nansum``, ``nanmax``, ``nanmedian``, ``lexsort``,
``unravel_index``, ``ravel_multi_index``, ``polyval``, ``trapezoid``,
``select``, ``argpartition``, ``ediff1d``, ``cumulative_sum``,
``histogram_bin_edges``, ``unique_counts``, ``extract``, ``compress``,
``piecewise``, ``promote_types``, ``iterable``.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle

UNTRACED_NUMPY_FUNCTIONS = frozenset(
    {
        "apply_along_axis", "apply_over_axes", "argpartition", "block", "busday_count", "busday_offset",
        "compress", "cumulative_prod", "cumulative_sum", "delete", "digitize", "ediff1d", "extract",
        "frexp", "fromfunction", "fromiter", "histogram_bin_edges", "insert", "interp", "intersect1d",
        "is_busday", "isin", "isnat", "iterable", "ix_", "lexsort", "mask_indices", "nanargmax",
        "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin",
        "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar", "packbits", "partition",
        "piecewise", "place", "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
        "polysub", "polyval", "promote_types", "putmask", "ravel_multi_index", "roots", "select",
        "setdiff1d", "setxor1d", "sort_complex", "spacing", "trapezoid", "trim_zeros", "union1d",
        "unique_all", "unique_counts", "unique_inverse", "unique_values", "unpackbits", "unravel_index",
        "unstack", "unwrap",
    }
)  # fmt: skip


def untraced_numpy_function(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """``np.insert`` when *node* calls a NumPy function ``torch._numpy`` does not implement, else ``None``."""
    if not isinstance(node, nodes.Call):
        return None
    name = values.qualified_name(node.func) or ""
    module, _, function = name.rpartition(".")
    return f"np.{function}" if module == "numpy" and function in UNTRACED_NUMPY_FUNCTIONS else None
