"""Which expressions are NumPy arrays (or NumPy scalars) computed in traced code.

Dynamo traces NumPy through ``torch._numpy``: an array, or a NumPy scalar
such as ``np.float32(0.5)``, is a tensor in the graph, whether it was made
from Python numbers (``np.ones(n)``, ``np.exp(0.5)``) or from a tensor. A
branch on such a value therefore needs the device's data, like a branch on a
tensor: Dynamo logs "Data-dependent branching" (GB0170) at the condition
(measured on torch 2.13 for ``np.where(...)[i] != 1.``, ``np.log(np.exp(k) - 1) > 0.5``,
``np.cos(np.arange(4))[0] > 0.5``, ``np.float32(0.5) * 2 > 0.5``,
``np.sqrt(x.shape[0]) > 1`` and ``(np.array([1, 2]) > 1).any()``).

Only what is provable is a NumPy value: a call of a NumPy function known to
return an array, indexing and arithmetic on one, an array method that keeps
it an array, and names every binding of which is one (also unpacked from the
``return`` of a function of this file). ``np.random.*`` is not: its draws
break on their own and a draw without ``size`` is a Python float. ``.item()``
and ``.tolist()`` leave NumPy, and so do ``.shape`` and ``len``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeGuard

from astroid import nodes

from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.analysis.walk import descendants

#: NumPy functions that return an array or a NumPy scalar (never a Python value) and that ``torch._numpy`` traces.
ARRAY_FUNCTIONS = frozenset(
    {"array", "asarray", "ones", "zeros", "full", "empty", "arange", "linspace", "ones_like", "zeros_like",
     "full_like", "empty_like", "where", "clip", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt",
     "square", "power", "sin", "cos", "tan", "tanh", "arctan", "arctan2", "abs", "absolute", "sign", "floor", "ceil",
     "round", "rint", "maximum", "minimum", "sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin",
     "cumsum", "cumprod", "argmax", "argmin", "concatenate", "stack", "repeat", "tile", "flip", "reshape", "unique",
     "transpose", "sort", "argsort", "dot", "matmul", "outer", "isnan", "isinf", "isfinite", "logical_and",
     "logical_or", "logical_not", "any", "all", "float16", "float32", "float64", "int8", "int16", "int32",
     "int64", "uint8", "bool_"}
)  # fmt: skip
#: Array methods whose result is still an array (``.item()``, ``.tolist()`` leave NumPy).
ARRAY_METHODS = frozenset(
    {"astype", "sum", "mean", "max", "min", "prod", "any", "all", "cumsum", "argmax", "argmin", "clip", "round",
     "reshape", "flatten", "ravel", "squeeze", "transpose", "copy", "std", "var"}
)  # fmt: skip
_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_MAX_DEPTH = 8
_PYTHON_COMPARISONS = frozenset({"is", "is not", "in", "not in"})
#: At most this many assignments of one `self` attribute are read (more say the attribute holds many things).
_MAX_ASSIGNMENTS = 8


def is_numpy_value(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """True when *node* provably evaluates to a NumPy array or NumPy scalar (module docstring)."""
    return numpy_origins(values, node) is not None


def numpy_origins(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> list[nodes.Call] | None:
    """The NumPy calls *node*'s value is computed from (nested ones included) when it is a NumPy value, else ``None``.

    Memoised per node and depth: a parameter is followed into every call site, and each site's
    argument into its own callers, so without a memo one file of transformers asked the same
    question hundreds of thousands of times."""
    if depth > _MAX_DEPTH:
        return None
    memo = values.memo("numpy-origins")
    key = (node, depth)
    if key not in memo:
        memo[key] = _numpy_origins(values, node, depth)
    return memo[key]  # type: ignore[no-any-return]


def _numpy_origins(values: ValueOracle, node: nodes.NodeNG, depth: int) -> list[nodes.Call] | None:
    again = lambda child: numpy_origins(values, child, depth + 1)  # noqa: E731
    if isinstance(node, nodes.Call):
        module, _, function = (values.qualified_name(node.func) or "").rpartition(".")
        if module == "numpy":
            if function not in ARRAY_FUNCTIONS:
                return None
            return [node, *(origin for arg in node.args for origin in (again(arg) or ()))]
        func = node.func
        return again(func.expr) if isinstance(func, nodes.Attribute) and func.attrname in ARRAY_METHODS else None
    if isinstance(node, nodes.Subscript):
        return again(node.value) or _comprehension_item(values, node.value, depth) or _converted_item(values, node.value, depth)
    if isinstance(node, nodes.Attribute):
        return again(node.expr) if node.attrname == "T" else _held_on_self(values, node, depth)
    if isinstance(node, nodes.BinOp):
        return _either(again, node.left, node.right) if node.op in _ARITHMETIC else None
    if isinstance(node, nodes.UnaryOp):
        return again(node.operand) if node.op in {"-", "+", "~"} else None
    if isinstance(node, nodes.Compare):  # a chain ``a <= b <= c`` too (DiffWave's fast-sampling schedule search)
        if any(op in _PYTHON_COMPARISONS for op, _ in node.ops):
            return None  # ``ratios is None``: identity and membership are Python's
        return _either(again, node.left, *(right for _, right in node.ops))
    if isinstance(node, nodes.Name):
        return _bound_to_numpy(values, node, depth)
    return None


#: NumPy functions whose result is a boolean array, whatever their arguments.
_MASK_FUNCTIONS = frozenset(
    {"logical_and", "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite", "isclose",
     "greater", "greater_equal", "less", "less_equal", "equal", "not_equal"}
)  # fmt: skip
#: NumPy functions that build an array of the ``dtype=`` they are given, and functions that keep their first
#: argument's dtype.
_DTYPED_CONSTRUCTORS = frozenset({"ones", "zeros", "full", "empty", "array", "asarray", "ones_like", "zeros_like"})
_DTYPE_KEEPING = frozenset({"roll", "flip", "reshape", "concatenate", "stack", "tile", "repeat", "transpose"})


def is_numpy_mask(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """*node* is a boolean NumPy array computed in traced code: a mask that selects from an array.

    VIBE's acceleration error keeps ``normed[new_vis]`` with ``new_vis =
    np.logical_not(np.logical_or(invis, np.roll(invis, -1)))``, or
    ``np.ones(len(normed), dtype=bool)``: Dynamo holds both as tensors, and
    the selection has a data-dependent size (GB0036, measured on torch 2.13,
    also for the all-true ``np.ones``). Masks are a ``np.logical_*`` /
    ``np.isnan``-like result, a comparison of a NumPy value, a constructor
    given ``dtype=bool``, ``~`` / slices / ``np.roll`` of one, or a name
    bound only to such values.
    """
    if depth > _MAX_DEPTH:
        return False
    again = lambda child: is_numpy_mask(values, child, depth + 1)  # noqa: E731
    if isinstance(node, nodes.Call):
        module, _, function = (values.qualified_name(node.func) or "").rpartition(".")
        if module != "numpy":
            return False
        if function in _MASK_FUNCTIONS:
            return True
        if function in _DTYPED_CONSTRUCTORS:
            dtype = next((kw.value for kw in node.keywords or () if kw.arg == "dtype"), None)
            return dtype is not None and (values.qualified_name(dtype) or "") in {"bool", "numpy.bool_", "numpy.bool"}
        return function in _DTYPE_KEEPING and bool(node.args) and again(node.args[0])
    if isinstance(node, nodes.UnaryOp) and node.op == "~":
        return again(node.operand)
    if isinstance(node, nodes.Subscript):
        return isinstance(node.slice, nodes.Slice) and again(node.value)
    if isinstance(node, nodes.Compare):
        return (
            len(node.ops) == 1
            and node.ops[0][0] not in _PYTHON_COMPARISONS
            and numpy_origins(values, node) is not None
        )
    if isinstance(node, nodes.Name):
        try:
            bindings = reaching_bindings(node)[:_MAX_ASSIGNMENTS]
        except Exception:  # astroid lookups can fail on odd code; then nothing is proven
            return False
        return bool(bindings) and all(
            isinstance(b, nodes.AssignName) and isinstance(b.parent, nodes.Assign) and again(b.parent.value)
            for b in bindings
        )
    return False


def _either(origins_of: Callable[[nodes.NodeNG], list[nodes.Call] | None], *operands: nodes.NodeNG) -> list[nodes.Call] | None:
    """The origins of an operation over *operands*: NumPy when any of them is."""
    found = [origins_of(operand) for operand in operands]
    if all(side is None for side in found):
        return None
    return [origin for side in found for origin in side or ()]


def _comprehension_item(values: ValueOracle, node: nodes.NodeNG, depth: int) -> list[nodes.Call] | None:
    """The origins of an item of *node*, a name bound once to a list comprehension of NumPy values
    (RetinaNet's ``image_shapes = [(image_shape + 2 ** x - 1) // (2 ** x) for x in levels]``). The list
    itself is no NumPy value: its truthiness and length are Python's."""
    if not isinstance(node, nodes.Name):
        return None
    try:
        bindings = reaching_bindings(node)
    except Exception:  # astroid lookups can fail on odd code: not provable
        return None
    if len(bindings) != 1 or not isinstance(assignment := bindings[0].parent, nodes.Assign):
        return None
    if not isinstance(assignment.value, nodes.ListComp) or assignment.targets != [bindings[0]]:
        return None
    return numpy_origins(values, assignment.value.elt, depth + 1)


def _held_on_self(values: ValueOracle, node: nodes.Attribute, depth: int) -> list[nodes.Call] | None:
    """``self.<attr>`` that every assignment of the class makes a NumPy value (``self.total = np.prod(sizes)``
    in ``__init__``): read in traced code it is traced like one (measured on torch 2.13: a branch on a
    ``np.float64`` attribute logs GB0170, ``x.shape[1] // self.total`` as a size GB0033)."""
    assigned = _self_values(node)
    if not assigned:
        return None
    found = [numpy_origins(values, value, depth + 1) for value in assigned]
    return None if any(origins is None for origins in found) else [o for origins in found for o in origins or ()]


def iterates_array(values: ValueOracle, name: nodes.Name) -> bool:
    """Every binding of *name* is a loop or comprehension target over a NumPy array computed in traced code
    (or ``list()`` / ``tuple()`` of one): iterating the array selects each item from a tensor."""
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code: not provable
        return False
    loops = [b.parent for b in bindings if isinstance(b.parent, (nodes.For, nodes.Comprehension)) and b.parent.target is b]
    return bool(bindings) and len(loops) == len(bindings) and all(
        _iterated_numpy(values, loop.iter, 0) is not None for loop in loops
    )


def held_on_module(values: ValueOracle, node: nodes.Attribute) -> bool:
    """*node* reads a ``self.<attr>`` that holds a NumPy value (:func:`_held_on_self`)."""
    return _held_on_self(values, node, 0) is not None


def _self_values(node: nodes.NodeNG) -> list[nodes.NodeNG]:
    """What every ``self.<attr> = ...`` of the enclosing class assigns, for a ``self.<attr>`` read; else empty."""
    if not (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
        return []
    klass = enclosing_class(node)
    return list(assigned_self_values(klass, node.attrname))[:_MAX_ASSIGNMENTS] if klass is not None else []


def _converted_item(values: ValueOracle, node: nodes.NodeNG, depth: int) -> list[nodes.Call] | None:
    """The origins of an item of a ``tuple(<array>)`` / ``list(<array>)`` (nnU-Net's ``self.weight_factors =
    tuple(weights)``): each item is a NumPy scalar. The sequence itself is not: its truth and length are Python's."""
    if isinstance(node, nodes.Name):
        try:
            bindings = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code: not provable
            return None
        assigned = [b.parent.value for b in bindings if isinstance(b.parent, nodes.Assign) and b.parent.targets == [b]]
        if len(assigned) != len(bindings):
            return None
    else:
        assigned = _self_values(node)
    found = [_sequence_of_numpy(values, value, depth) for value in assigned]
    if not found or any(origins is None for origins in found):
        return None
    return [o for origins in found for o in origins or ()]


def _sequence_of_numpy(values: ValueOracle, value: nodes.NodeNG, depth: int) -> list[nodes.Call] | None:
    """The origins of *value*'s items when it is ``tuple(<array>)`` / ``list(<array>)``, or a name or attribute
    holding one; else ``None``."""
    if _is_conversion(value):
        return numpy_origins(values, value.args[0], depth + 1) if len(value.args) == 1 else None
    if isinstance(value, (nodes.Name, nodes.Attribute)) and depth < _MAX_DEPTH:
        return _converted_item(values, value, depth + 1)
    return None


def _bound_to_numpy(values: ValueOracle, name: nodes.Name, depth: int) -> list[nodes.Call] | None:
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code: not provable
        return None
    found = [_binds_numpy(values, binding, depth) for binding in bindings]
    if not found or any(origins is None for origins in found):
        return None
    return [origin for origins in found for origin in origins or ()]


def _binds_numpy(values: ValueOracle, binding: nodes.NodeNG, depth: int) -> list[nodes.Call] | None:
    """``name = <numpy>``, ``a, name = f(...)`` where ``f`` of this file returns one there, a loop variable
    over an array, or a parameter every call in this file passes an array for (EDM2's ``constant(np.full(...))``
    helper)."""
    if not isinstance(binding, nodes.AssignName):
        return None
    parent = binding.parent
    if isinstance(parent, nodes.Arguments):
        return _passed_numpy(values, parent.parent, binding.name, depth)
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
        return numpy_origins(values, parent.value, depth + 1)
    if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.target is binding:
        return _iterated_numpy(values, parent.iter, depth)
    if isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign) and parent.parent.targets == [parent]:
        if any(isinstance(element, nodes.Starred) for element in parent.elts):
            return None
        return _returned_at(values, parent.parent.value, parent.elts.index(binding), len(parent.elts), depth)
    return None


def _iterated_numpy(values: ValueOracle, iterable: nodes.NodeNG, depth: int) -> list[nodes.Call] | None:
    """The origins of the items of *iterable* when it is an array, or ``list()`` / ``tuple()`` of one: each
    item is a NumPy value (DDIM's ``seq = [int(s) for s in list(np.linspace(...) ** 2)]``: GB0033 at ``int``,
    as for ``float(s)`` in a ``for s in np.linspace(...)`` loop, measured on torch 2.13)."""
    if _is_conversion(iterable):
        return numpy_origins(values, iterable.args[0], depth + 1) if len(iterable.args) == 1 else None
    return numpy_origins(values, iterable, depth + 1)


def _is_conversion(node: nodes.NodeNG) -> TypeGuard[nodes.Call]:
    """``tuple(...)`` / ``list(...)``: a Python sequence whose items are those of what it converts."""
    return isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and node.func.name in {"tuple", "list"}


def _returned_at(values: ValueOracle, value: nodes.NodeNG, index: int, width: int, depth: int) -> list[nodes.Call] | None:
    """``f(...)`` of this file returns tuples of *width* whose element *index* is a NumPy value, on every ``return``."""
    if not isinstance(value, nodes.Call):
        return None
    function = values.called_function(value)
    if function is None:
        return None
    returns = [r.value for r in descendants(function, nodes.Return, skip=(nodes.FunctionDef, nodes.Lambda))]
    origins: list[nodes.Call] = []
    for returned in returns:
        if not (isinstance(returned, nodes.Tuple) and len(returned.elts) == width):
            return None
        found = numpy_origins(values, returned.elts[index], depth + 1)
        if found is None:
            return None
        origins.extend(found)
    return origins if returns else None


def _passed_numpy(values: ValueOracle, function: nodes.NodeNG, parameter: str, depth: int) -> list[nodes.Call] | None:
    """The NumPy origins of what the calls of *function* in this file pass for *parameter*, when every one
    passes an array; a parameter no call here passes, or one given something else, is not provably NumPy."""
    passed = [numpy_origins(values, argument, depth + 1) for argument in values.call_site_arguments(function, parameter)]
    if not passed or any(origins is None for origins in passed):
        return None
    return [origin for origins in passed for origin in origins or ()]


#: NumPy constructors whose output size comes from arguments: ``arange``'s start, stop and step, the shape
#: of the others.
_SIZED_CONSTRUCTORS = {"arange": ("start", "stop", "step"), "zeros": ("shape",), "ones": ("shape",),
                       "empty": ("shape",), "full": ("shape",), "eye": ("N", "M"), "identity": ("n",)}  # fmt: skip


def traced_numpy_sizes(values: ValueOracle, call: nodes.Call) -> list[nodes.NodeNG]:
    """The sizes a NumPy constructor takes that are NumPy values computed in traced code: RetinaNet's
    ``np.arange(0, shape[1])`` with ``shape = (np.array(image.shape[2:]) + 2 ** x - 1) // (2 ** x)``,
    ``np.ones(np.array(sizes).sum())``. Dynamo holds such a value as a tensor, and an output size needs a
    Python int: GB0033 at the call (measured, torch 2.13)."""
    module, _, function = (values.qualified_name(call.func) or "").rpartition(".")
    if module != "numpy" or function not in _SIZED_CONSTRUCTORS:
        return []
    names = _SIZED_CONSTRUCTORS[function]
    given = [*call.args[: len(names) if function == "arange" else 1],
             *(k.value for k in call.keywords or [] if k.arg in names)]  # fmt: skip
    sizes = [item for value in given for item in (value.elts if isinstance(value, (nodes.Tuple, nodes.List)) else [value])]
    return [size for size in sizes if numpy_origins(values, size) is not None]
