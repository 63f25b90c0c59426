"""Swap a NumPy function applied to a tensor for its torch twin (GM519).

``np.sqrt(t)`` becomes ``torch.sqrt(t)``: eagerly both return a tensor of the
input's dtype when it is floating, and under ``torch.compile`` the torch call
is a tensor where NumPy's was an ndarray, so tensor methods on it trace.
"""

from __future__ import annotations

from graphmend_lint.analysis.host_values import is_float_tensor, is_python_number
from graphmend_lint.analysis.numpy_on_tensors import NumpyOnTensor
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.torch_name import torch_name_at

NO_TWIN = Fix.advice(
    "no automatic fix: compute it with the torch function (`torch.maximum`, `torch.clamp`, `torch.cumprod(t, dim)`), "
    "which is a tensor eagerly and under torch.compile alike"
)


def torch_twin_fix(analysis: FileAnalysis, found: NumpyOnTensor) -> Fix:
    """``np.<f>(t)`` → ``torch.<twin>(t)``; SAFE only for a bitwise-exact twin on floating tensors.

    Unsafe otherwise: sqrt, exp, log and trigonometry differ from NumPy's in
    the last bit on some elements, and an integer tensor, which NumPy
    promotes to float64 (``np.sqrt``) or keeps integer where torch does not
    (``np.floor`` of int64 is float64 there, int64 here), changes dtype.
    """
    twin, call = found.twin, found.call
    arity = 3 if found.function == "clip" else 1
    if twin is None or call.keywords or len(call.args) != arity:
        return NO_TWIN
    torch = torch_name_at(analysis, call)
    if torch is None:
        return NO_TWIN
    callee = f"{torch.name}.{twin.name}"
    edits = (*torch.edits, Edit(analysis.start_of(call.func), analysis.end_of(call.func), callee))
    values = analysis.values
    floating = is_float_tensor(values, call.args[0]) and all(is_python_number(values, b) for b in call.args[1:])
    if twin.exact and floating:
        return Fix(edits=edits, applicability=Applicability.SAFE, message=f"Use `{callee}`")
    caveat = "last-bit differences from NumPy" if twin.exact is False else "dtype differs on integer tensors"
    return Fix(edits=edits, applicability=Applicability.UNSAFE, message=f"Use `{callee}` ({caveat})")
