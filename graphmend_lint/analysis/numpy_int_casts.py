"""A NumPy value cast to an integer dtype, then forced into a Python number.

Dynamo traces NumPy in compiled code through ``torch._numpy``, on Python
values too (``np.log1p(n)`` becomes a 0-d tensor). Most ways back to Python
trace: ``np.ceil(np.log1p(n)).item()``, ``float(np.log(n))``,
``np.log(n).astype(np.float32)``. An *integer* cast forced into a Python
number does not: ``np.ceil(np.log1p(n)).astype("int").item()``,
``int(np.int32(n))``, ``v.astype(int).item()`` after ``v = np.sqrt(n)``
each break with GB0208 ("torch.* op returned non-Tensor"), at the line that
forces the value (measured, torch 2.13). A NumPy position (``np.argmin(...)``,
``a.argmax()``) forced the same way breaks too (GB0033). A float cast (``.astype(np.float32)``
then ``float(...)``) and ``.tolist()`` do not break. transformers' Informer
and Autoformer size their ProbSparse sampling this way:
``np.ceil(np.log1p(L)).astype("int").item()``.

Arrays made from tensors (``t.numpy()``) are left to the rules that follow
tensors into NumPy (``host_values.numpy_origin``): forcing those breaks
differently (GB0033).
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import builtin_name, method_call, numpy_origin
from graphmend_lint.analysis.numpy_values import iterates_array
from graphmend_lint.analysis.values import ValueOracle

_MAX_DEPTH = 4
_INTEGER_PREFIXES = ("int", "uint")
#: NumPy functions (and array methods) that return positions or counts: integers whatever the input.
_POSITION_FUNCTIONS = frozenset({"argmin", "argmax", "argsort", "searchsorted", "count_nonzero"})
_POSITION_METHODS = ("argmin", "argmax", "argsort", "searchsorted")


def _integer_dtype(values: ValueOracle, dtype: nodes.NodeNG) -> bool:
    """``int``, ``"int"``, ``"int64"``, ``np.int32``, ``np.intp``, ``np.uint8``: an integer dtype."""
    if isinstance(dtype, nodes.Const):
        return isinstance(dtype.value, str) and dtype.value.startswith(_INTEGER_PREFIXES)
    if isinstance(dtype, nodes.Name) and dtype.name == "int":
        try:
            _, bindings = dtype.lookup("int")
        except Exception:  # astroid lookups can fail on odd code; stay quiet
            return False
        return all(binding.root().name == "builtins" for binding in bindings)
    module, _, name = (values.qualified_name(dtype) or "").rpartition(".")
    return module == "numpy" and name.startswith(_INTEGER_PREFIXES)


def numpy_value(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """*node* is a NumPy array or scalar computed by NumPy functions (not converted from a tensor)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(numpy_value(values, value, depth + 1) for value in bound)
    if not isinstance(node, nodes.Call) or numpy_origin(values, node) is not None:
        return False
    if (values.qualified_name(node.func) or "").startswith("numpy."):
        return True
    method = method_call(node, "astype", "round", "clip", "squeeze", "reshape", "sum", "max", "min")
    return method is not None and numpy_value(values, method.func.expr, depth + 1)


def integer_cast(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> nodes.Call | None:
    """``a.astype(<integer dtype>)`` on a NumPy value, or ``np.int64(...)`` (also through a name)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        casts = [integer_cast(values, value, depth + 1) for value in bound or ()]
        return casts[0] if casts and None not in casts else None
    if not isinstance(node, nodes.Call):
        return None
    astype = method_call(node, "astype")
    if astype is not None:
        dtype = node.args[0] if node.args else next((k.value for k in node.keywords or () if k.arg == "dtype"), None)
        if dtype is not None and _integer_dtype(values, dtype) and numpy_value(values, astype.func.expr):
            return node
        return None
    if len(node.args) == 1 and not node.keywords and _integer_dtype(values, node.func):
        return node if isinstance(node.func, nodes.Attribute) else None  # ``np.int64(n)``, not the builtin
    return None


def integer_position(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> nodes.Call | None:
    """``np.argmin(a)``, ``a.argmax()``, ``np.searchsorted(...)``...: a NumPy position, an integer whatever the
    input's dtype (also through a name). Forced into Python it breaks (GB0033, measured on torch 2.13: VAR's
    ``self.qresi_ls[np.argmin(np.abs(self.ticks - at)).item()]``, ``int(np.argmax(ticks > 0.5))``)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        found = [integer_position(values, value, depth + 1) for value in bound or ()]
        return found[0] if found and None not in found else None
    if not isinstance(node, nodes.Call) or numpy_origin(values, node) is not None:
        return None
    module, _, function = (values.qualified_name(node.func) or "").rpartition(".")
    if module == "numpy" and function in _POSITION_FUNCTIONS:
        return node
    method = method_call(node, *_POSITION_METHODS)
    return node if method is not None and numpy_value(values, method.func.expr) else None


def forced_integer_cast(values: ValueOracle, node: nodes.NodeNG) -> nodes.Call | None:
    """The integer NumPy value (a cast to an integer dtype, or a position) that ``<value>.item()`` or
    ``int(<value>)`` (*node*) forces into Python, else ``None``."""
    forced = _forced_value(node, ("int",))
    return None if forced is None else integer_cast(values, forced) or integer_position(values, forced)


def forced_array_item(values: ValueOracle, node: nodes.NodeNG) -> nodes.Name | None:
    """The loop variable that ``int(s)``, ``float(s)`` or ``s.item()`` (*node*) forces into Python, when it
    takes the items of a NumPy array traced code computes (:func:`~graphmend_lint.analysis.numpy_values.
    iterates_array`). Each item is selected from a tensor, so its value is data: GB0033 at the cast
    (measured on torch 2.13: DDIM's ``[int(s) for s in list(seq)]``; ``float(s)`` in a ``for`` loop)."""
    forced = _forced_value(node, ("int", "float"))
    return forced if isinstance(forced, nodes.Name) and iterates_array(values, forced) else None


def _forced_value(node: nodes.NodeNG, builtins: tuple[str, ...]) -> nodes.NodeNG | None:
    """``v`` in ``v.item()`` or in ``<builtin>(v)`` for one of *builtins*: a value forced into Python."""
    if not isinstance(node, nodes.Call):
        return None
    item = method_call(node, "item")
    if item is not None and not node.args and not node.keywords:
        return item.func.expr
    if builtin_name(node) in builtins and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    return None
