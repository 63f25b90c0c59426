"""Replace NumPy calls on Python numbers with their ``math`` / builtin twins.

Under ``torch.compile`` Dynamo traces NumPy through ``torch._numpy``: the
result of ``np.lcm(4, 6)`` becomes a 0-d *tensor*, and a branch or ``range``
on it breaks the graph. ``math.lcm(4, 6)`` is a plain int that Dynamo
constant-folds. Only the callee changes, so the rewrite is one edit (plus an
``import math`` when the file has none).
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.dynamo_settings import CAPTURE_SCALAR_OUTPUTS, settings_turned_on
from graphmend_lint.analysis.host_values import is_python_int, is_python_number, numpy_origin, python_use
from graphmend_lint.analysis.tensor_sizes import size_use
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position


@dataclass(frozen=True)
class Twin:
    """The Python spelling of one NumPy function on scalars."""

    module: str | None  # "math", or None for a builtin
    name: str
    #: Equal results for every int argument (float arguments may differ: NaN
    #: handling, summation order, domain errors raising instead of ``nan``).
    exact_for_ints: bool = True
    #: Takes one list/tuple of numbers (``np.sum([1, 2])``) instead of numbers.
    over_sequence: bool = False
    #: The NumPy function returns a floating value whatever its arguments (``np.sqrt(4)`` is ``2.0``).
    floating: bool = False


TWINS: dict[str, Twin] = {
    "lcm": Twin("math", "lcm"),
    "gcd": Twin("math", "gcd"),
    "abs": Twin(None, "abs"),
    "absolute": Twin(None, "abs"),
    "maximum": Twin(None, "max"),
    "minimum": Twin(None, "min"),
    "sqrt": Twin("math", "sqrt", exact_for_ints=False, floating=True),
    "exp": Twin("math", "exp", exact_for_ints=False, floating=True),
    "log": Twin("math", "log", exact_for_ints=False, floating=True),
    "log2": Twin("math", "log2", exact_for_ints=False, floating=True),
    "log10": Twin("math", "log10", exact_for_ints=False, floating=True),
    "sum": Twin(None, "sum", over_sequence=True),
    "prod": Twin("math", "prod", over_sequence=True),
    "max": Twin(None, "max", over_sequence=True),
    "amax": Twin(None, "max", over_sequence=True),
    "min": Twin(None, "min", over_sequence=True),
    "amin": Twin(None, "min", over_sequence=True),
}
_ARITY = {"lcm": 2, "gcd": 2, "maximum": 2, "minimum": 2}


@dataclass(frozen=True)
class StaticNumpyCall:
    """A NumPy call whose arguments are Python values, with its twin."""

    call: nodes.Call
    numpy_name: str
    twin: Twin
    numbers: tuple[nodes.NodeNG, ...]  # the numeric arguments (list elements for reductions)
    #: A reduction over a named sequence (``np.sum(plan[:k])``) whose items are not visible.
    opaque_sequence: bool = False


def _sequence_elements(node: nodes.NodeNG) -> list[nodes.NodeNG] | None:
    """The elements of a non-empty list/tuple literal (``np.sum([])`` is ``0.0``, ``sum([])`` is ``0``)."""
    if not isinstance(node, (nodes.List, nodes.Tuple)) or not node.elts:
        return None
    return None if any(isinstance(element, nodes.Starred) for element in node.elts) else list(node.elts)


def static_numpy_call(values: ValueOracle, call: nodes.Call) -> StaticNumpyCall | None:
    """``np.<f>(...)`` with a known twin whose every argument is static, else ``None``."""
    qualified = values.qualified_name(call.func) or ""
    module, _, function = qualified.rpartition(".")
    twin = TWINS.get(function)
    if module != "numpy" or twin is None or call.keywords:
        return None
    if twin.over_sequence:
        elements = _sequence_elements(call.args[0]) if len(call.args) == 1 else None
        numbers = tuple(elements or ())
    else:
        numbers = tuple(call.args) if len(call.args) == _ARITY.get(function, 1) else ()
    if not numbers or any(isinstance(n, nodes.Starred) for n in numbers):
        return None
    if not all(values.kind(n) is Kind.STATIC or is_python_number(values, n) for n in numbers):
        return None
    return StaticNumpyCall(call, function, twin, numbers)


#: Functions whose positional arguments (or ``shape``) are sizes, which must be Python ints.
_SIZED_FACTORIES = frozenset(
    f"{module}.{name}" for module in ("numpy", "torch") for name in ("zeros", "ones", "empty", "full")
) | frozenset({"torch.rand", "torch.randn"})


def reduction_use(values: ValueOracle, call: nodes.Call) -> nodes.NodeNG | None:
    """Where Python takes the value of a NumPy reduction over a sequence, else ``None``: any Python use
    (:func:`python_use`: ``int()``, ``range()``, a branch, a slice bound, ``.item()``, also through the name
    it is bound to and after arithmetic with Python numbers), a factory's size (*call* itself, where Dynamo
    logs the break), or a torch size (:func:`reduction_size_use`).

    Dynamo traces the reduction as a 0-d tensor whose value fake tensors do
    not know, so each of these breaks (measured, torch 2.13, for ``np.prod`` /
    ``np.sum`` / ``np.max`` over a list or a shape): ``int(...)``,
    ``int(n * 0.5)``, ``float(...)``, ``.item()``, a slice bound and a size with
    GB0033, ``range`` with GB0059, a branch with GB0170.
    """
    use = python_use(values, call)
    if use is not None:
        return use
    parent = call.parent
    if isinstance(parent, (nodes.Tuple, nodes.List)):
        parent = parent.parent  # np.zeros((n, np.sum(plan)))
    if isinstance(parent, nodes.Keyword):
        parent = parent.parent if parent.arg in {"shape", "size"} else None
    if isinstance(parent, nodes.Call) and values.qualified_name(parent.func) in _SIZED_FACTORIES:
        return call
    return reduction_size_use(values, call)


def reduction_size_use(values: ValueOracle, call: nodes.Call) -> nodes.Call | None:
    """The torch call that takes a NumPy reduction's value as a size (``torch.reshape(x, [b, np.prod(dims), -1])``,
    ``x.view(-1, n)`` with ``n = np.prod(x.shape[1:])``), unless ``capture_scalar_outputs`` is on or the
    sequence provably holds one item.

    ``np.prod`` / ``np.sum`` / ``np.max`` over a sequence (a shape, a list,
    a tuple) is a 0-d tensor to Dynamo, and a size must be an int: GB0033 at
    the call that takes it (measured, torch 2.13; with ``capture_scalar_outputs``
    it is traced as an unbacked size and does not break). Over one item
    (``np.prod(x.shape)`` of a 1-d ``x``, ``np.prod(12)``) there is no break:
    fake tensors keep the value of a one-element tensor made from Python
    numbers, so the reduction is a known constant (measured); the same holds
    for ``np.lcm`` of ints. A sequence whose length is unknown (a shape
    slice) is taken to have more, as flattening code does.
    """
    if CAPTURE_SCALAR_OUTPUTS in settings_turned_on(values) or not call.args or _one_item(call.args[0]):
        return None
    return size_use(values, call)


def _literal_int(node: nodes.NodeNG) -> int | nodes.NodeNG:
    """The value of an int literal (``-1`` is a unary minus on ``1``), else *node* itself."""
    if isinstance(node, nodes.UnaryOp) and node.op == "-" and isinstance(node.operand, nodes.Const):
        value = node.operand.value
        return -value if isinstance(value, int) else node
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, int) else node


def _one_item(sequence: nodes.NodeNG) -> bool:
    """A literal list/tuple of one item, or a slice of literal bounds one item long (``shape[-1:]``, ``[:1]``)."""
    if isinstance(sequence, (nodes.List, nodes.Tuple)):
        return len(sequence.elts) == 1 and not isinstance(sequence.elts[0], nodes.Starred)
    if not isinstance(sequence, nodes.Subscript) or not isinstance(sequence.slice, nodes.Slice):
        return False
    bounds = sequence.slice
    if bounds.step is not None:
        return False
    lower, upper = (_literal_int(bound) if bound is not None else None for bound in (bounds.lower, bounds.upper))
    if lower is None:
        return upper == 1
    if upper is None:
        return lower == -1
    return isinstance(lower, int) and isinstance(upper, int) and upper - lower == 1 and (lower >= 0) == (upper > 0)


def sequence_reduction_call(values: ValueOracle, call: nodes.Call) -> StaticNumpyCall | None:
    """``np.sum(plan[:k])`` / ``np.prod(x.shape)`` over a named Python sequence or a shape (where Python takes
    its value is :func:`reduction_use`'s question).

    transformers' BigBird sizes its random-attention plan this way
    (``np.zeros((num_blocks, np.sum(plan_num_rand_blocks[:k])))``); nnU-Net's
    top-k loss keeps ``int(np.prod(res.shape, dtype=np.int64) * self.k / 100)``
    voxels. The sequence's items are not visible, so the twin is only assumed
    to agree.
    """
    qualified = values.qualified_name(call.func) or ""
    module, _, function = qualified.rpartition(".")
    twin = TWINS.get(function)
    if module != "numpy" or twin is None or not twin.over_sequence or len(call.args) != 1:
        return None
    if any(keyword.arg != "dtype" for keyword in call.keywords or ()):
        return None
    sequence = call.args[0]
    if not isinstance(sequence, (nodes.Name, nodes.Subscript, nodes.Attribute)):
        return None
    if values.kind(sequence) is Kind.TENSOR or numpy_origin(values, sequence) is not None:
        return None
    return StaticNumpyCall(call, function, twin, (sequence,), opaque_sequence=True)


def _module_import(analysis: FileAnalysis, module: str) -> str | None:
    """The name a module-level ``import <module> [as name]`` binds, if any."""
    for local, bindings in analysis.module.locals.items():
        spelling = (module, None if local == module else local)  # ``import math`` / ``import math as m``
        if any(isinstance(b, nodes.Import) and spelling in b.names for b in bindings):
            return local
    return None


def _bindings_at(node: nodes.NodeNG, name: str) -> list[nodes.NodeNG] | None:
    """What *name* resolves to where *node* is (``None`` when astroid cannot tell)."""
    try:
        return list(node.scope().scope_lookup(node, name)[1])
    except Exception:
        return None


def _visible_as(call: nodes.Call, name: str, expected: str) -> bool:
    """*name* at *call* is the builtin (``expected="builtins"``) or the module-level import."""
    bindings = _bindings_at(call, name)
    if bindings is None:
        return False
    if expected == "builtins":
        return bool(bindings) and all(b.root().name == "builtins" for b in bindings)
    return bool(bindings) and all(isinstance(b, nodes.Import) and b.scope() is call.root() for b in bindings)


def _unbound(call: nodes.Call, name: str) -> bool:
    """Nothing named *name* is visible at *call*, so an ``import`` may introduce it."""
    return _bindings_at(call, name) == []


def _import_edit(analysis: FileAnalysis, module: str) -> Edit | None:
    """Insert ``import <module>`` before the first module-level import (after ``__future__``)."""
    for statement in analysis.module.body:
        if isinstance(statement, nodes.ImportFrom) and statement.modname == "__future__":
            continue
        if isinstance(statement, (nodes.Import, nodes.ImportFrom)):
            start = Position(statement.lineno, 0)
            return Edit(start, start, f"import {module}\n")
    return None


def numpy_twin_fix(analysis: FileAnalysis, found: StaticNumpyCall) -> Fix | None:
    """Swap the callee for its twin; SAFE when the twin is exact on these provable ints.

    Unsafe otherwise: with floats ``math`` raises where NumPy returns ``nan``
    (``sqrt(-1)``, ``log(0)``), ``max``/``min`` treat NaN differently and
    ``np.sum`` adds long float lists pairwise; with arguments that are static
    but not provably numbers (``config.chunk``) the fix assumes they are.
    """
    twin, call = found.twin, found.call
    if call.keywords:
        return None  # ``np.prod(shape, dtype=np.int64)``: the twin has no dtype to keep
    edits: list[Edit] = []
    if twin.module is None:
        if not _visible_as(call, twin.name, "builtins"):
            return None
        callee = twin.name
    else:
        local = _module_import(analysis, twin.module)
        if local is None:
            if not _unbound(call, twin.module):
                return None  # the name is taken
            import_edit = _import_edit(analysis, twin.module)
            if import_edit is None:
                return None
            edits.append(import_edit)
            local = twin.module
        elif not _visible_as(call, local, "import"):
            return None  # shadowed inside the function
        callee = f"{local}.{twin.name}"
    edits.append(Edit(analysis.start_of(call.func), analysis.end_of(call.func), callee))
    values = analysis.values
    if found.opaque_sequence:
        applicability, caveat = Applicability.UNSAFE, " (assumes a flat sequence of Python numbers)"
    elif twin.exact_for_ints and all(is_python_int(values, n) for n in found.numbers):
        applicability, caveat = Applicability.SAFE, ""
    elif all(is_python_number(values, n) for n in found.numbers):
        applicability, caveat = Applicability.UNSAFE, " (float edge cases differ: NaN, domain errors, rounding)"
    else:
        applicability, caveat = Applicability.UNSAFE, " (assumes the arguments are Python numbers)"
    return Fix(edits=tuple(edits), applicability=applicability, message=f"Use `{callee}`{caveat}")
