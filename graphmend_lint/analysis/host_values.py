"""Where a tensor's *value* leaves the device, and what is provably a Python number.

The host-sync rules (GM301, GM302, GM401-GM403) share three questions that
:class:`~graphmend_lint.analysis.values.ValueOracle` does not answer on its own:

* Is this call copying a tensor to a Python scalar (``t.item()``, ``int(t)``)?
  Dynamo stops at each one unless ``capture_scalar_outputs`` is set.
* Is this tensor a *boolean* tensor? Indexing with a boolean mask has a
  data-dependent output shape; indexing with integers does not, so a rule that
  cannot prove the dtype must stay quiet.
* Is this value provably a Python ``int`` (or ``float``)? A fix that swaps a
  tensor for a Python number, or NumPy for ``math``, is only safe then.

Everything here is syntactic plus the oracle: a name is followed to its
bindings in the same function, nothing is imported and nothing is executed.
When in doubt every helper answers "no", which keeps the rules quiet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.assigned_values import appended_items, bound_values
from graphmend_lint.analysis.annotations import BOOL_TENSOR, TENSOR
from graphmend_lint.analysis.numpy_values import is_numpy_value
from graphmend_lint.analysis.lookup import is_builtin_call, loops_binding, reaching_bindings
from graphmend_lint.analysis.untraced_numpy import untraced_numpy_function
from graphmend_lint.analysis.values import ITEM_COPIES, Kind, ValueOracle, is_elementwise_comparison, without_none

#: Builtins that copy one tensor element to a Python scalar (``int(t)`` is ``t.item()``).
SCALAR_BUILTINS = frozenset({"int", "float", "bool", "complex"})
#: Builtins that turn a floating NumPy value into a Python number inside the graph (no break, measured).
_FLOAT_CASTS = frozenset({"int", "float"})
#: torch functions (and tensor methods of the same name) whose result is a bool tensor.
_BOOL_RESULTS = frozenset(
    {
        "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit", "isin", "isclose",
        "logical_and", "logical_or", "logical_not", "logical_xor",
        "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
    }
)  # fmt: skip
_BOOL_METHODS = _BOOL_RESULTS | {"bool"}
#: Reductions that keep a boolean tensor boolean (``m.any(-1)``), ops that move, repeat or select its
#: elements, ops that write into a copy of it (``m.masked_fill(pad, False)``: the result has the receiver's
#: dtype, LightGlue's pruning mask), and device moves: as methods (on the mask) and, the same names, as torch
#: functions (mask first).
_BOOL_PRESERVING_METHODS = frozenset(
    {"any", "all", "flatten", "view", "reshape", "unsqueeze", "squeeze", "transpose", "permute", "expand",
     "expand_as", "contiguous", "clone", "detach", "t", "repeat", "repeat_interleave", "flip", "roll", "narrow",
     "select", "index_select", "gather", "tril", "triu", "unflatten", "movedim", "swapaxes", "diagonal", "cpu",
     "cuda", "view_as", "reshape_as", "masked_fill", "masked_scatter", "index_fill", "scatter", "tile",
     "moveaxis", "ravel"}
)  # fmt: skip
#: torch functions whose result has the dtype of their first argument (``F.pad(mask, (0, 1))`` pads a bool
#: mask with ``False``: GB0036 when it indexes, measured; ``torch.zeros_like(mask)`` without a ``dtype``).
_DTYPE_KEEPING_FUNCTIONS = frozenset(
    {"torch.nn.functional.pad", "torch._C._nn.pad", "torch.zeros_like", "torch.ones_like", "torch.empty_like",
     "torch.full_like"}
)  # fmt: skip
#: torch functions that join tensors: boolean when every joined tensor is.
_JOINING_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
#: torch functions that build a tensor from Python data, inferring its dtype (``torch.bool`` from bools).
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
#: torch functions that fill a new tensor with their second argument: boolean when it is ``True`` / ``False``.
_FILLING_FUNCTIONS = frozenset({"torch.full", "torch.full_like"})
#: torch takes Python's ``bool`` for ``torch.bool`` (SimCLR's NT-Xent mask, ``torch.ones((N, N), dtype=bool)``),
#: as it takes ``float`` for ``torch.float64`` and ``int`` for ``torch.int64`` (in the sets below).
_BOOL_DTYPES = frozenset({"torch.bool", "bool"})
_FLOAT_DTYPES = frozenset({"torch.float", "torch.float16", "torch.float32", "torch.float64", "torch.half",
                           "torch.double", "torch.bfloat16", "float"})  # fmt: skip
#: Tensor methods that return a floating tensor whatever the input dtype.
_FLOAT_METHODS = frozenset({"float", "half", "double", "bfloat16"})
#: torch functions that only produce floating tensors.
_FLOAT_FUNCTIONS = frozenset(
    {"torch.randn", "torch.rand", "torch.randn_like", "torch.rand_like", "torch.softmax", "torch.log_softmax",
     "torch.sigmoid", "torch.tanh", "torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
     "torch.nn.functional.gelu", "torch.nn.functional.silu", "torch.nn.functional.layer_norm"}
)  # fmt: skip
#: Tensor methods that return a Python int on any tensor (``x.size(0)`` needs its argument).
_INT_METHODS = frozenset({"numel", "dim", "ndimension", "nelement", "element_size", "get_device"})
_INT_OPERATORS = frozenset({"+", "-", "*", "//", "%", "**"})
_NUMBER_OPERATORS = _INT_OPERATORS | {"/"}
_SHAPE_ATTRIBUTES = frozenset({"shape"})
_MAX_DEPTH = 12


def builtin_name(call: nodes.Call) -> str | None:
    """The builtin a call invokes (``int`` in ``int(t)``), or ``None`` when shadowed or not a name.

    A local ``def int(...)`` or an import named ``int`` must not make the
    rules speak, so the name is looked up like Python would.
    """
    func = call.func
    return func.name if isinstance(func, nodes.Name) and is_builtin_call(call, func.name) else None


def condition_operands(test: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The operands Python jumps on, one by one: ``a and not b`` → ``[a, b]``.

    Dynamo breaks once per operand it cannot decide, at that operand.
    """
    if isinstance(test, nodes.BoolOp):
        return [part for value in test.values for part in condition_operands(value)]
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        return condition_operands(test.operand)
    return [test]


def method_call(node: nodes.NodeNG, *names: str) -> nodes.Call | None:
    """``node`` as ``<receiver>.<name>(...)`` for one of *names*, else ``None``."""
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname in names:
        return node
    return None


#: ``operator.index(t)`` asks the tensor for ``__index__``, which reads its value back with ``.item()``:
#: GB0124 like ``int(t)``, traced under ``capture_scalar_outputs`` (measured on torch 2.13).
INDEX_FUNCTION = "operator.index"


def _index_function(values: ValueOracle, call: nodes.Call) -> str | None:
    """``operator.index`` when *call* calls it (``operator.index(t)``, ``from operator import index``)."""
    return INDEX_FUNCTION if values.qualified_name(call.func) == INDEX_FUNCTION else None


@dataclass(frozen=True)
class ScalarConversion:
    """A call that copies one tensor element to a Python scalar."""

    call: nodes.Call
    tensor: nodes.NodeNG  # the tensor being converted
    spelling: str  # "item" or the builtin's name
    #: False for ``r.item()`` on a receiver of unknown kind (only arrays have ``.item()``): a tensor or
    #: a NumPy array, so a rewrite that needs a tensor (``.detach()``) is not offered
    proven: bool = True

    @property
    def is_item(self) -> bool:
        return self.spelling == "item"

    @property
    def label(self) -> str:
        """How messages name it: ``.item()`` or ``int()``."""
        return "`.item()`" if self.is_item else f"`{self.spelling}()`"


def scalar_conversion(values: ValueOracle, node: nodes.NodeNG) -> ScalarConversion | None:
    """``t.item()``, ``int(t)``, ``float(t)``, ``bool(t)``, ``complex(t)`` or ``operator.index(t)`` on a
    TENSOR; also ``r.item()`` on a receiver of unknown kind, since only arrays have ``.item()``
    (:meth:`ValueOracle.array_method`).

    Not on a NumPy array made from a tensor (the oracle types ``array.sum()`` as a tensor, since
    Dynamo traces it as one): forcing that is GM302's finding, and one break gets one finding.
    """
    if not isinstance(node, nodes.Call):
        return None
    item = method_call(node, "item")
    if item is not None and not node.args and not node.keywords:
        receiver = item.func.expr
        if _tensor_not_array(values, receiver):
            return ScalarConversion(node, receiver, "item")
        if untyped_array_receiver(values, item.func):
            return ScalarConversion(node, receiver, "item", proven=False)
    name = builtin_name(node) or _index_function(values, node)
    converts = name in SCALAR_BUILTINS or name == INDEX_FUNCTION
    if converts and len(node.args) == 1 and not node.keywords and _tensor_not_array(values, node.args[0]):
        return ScalarConversion(node, node.args[0], name)
    return None


def range_bound(values: ValueOracle, node: nodes.NodeNG) -> ScalarConversion | None:
    """``range(t)`` / ``range(a, t)`` with a TENSOR bound: Python's ``range`` takes its bounds as ints.

    Dynamo has no rule for ``range`` over a tensor, a frame argument
    included, and breaks there (GB0059, "Failed to trace builtin operator",
    measured on torch 2.13; torchaudio's HuBERT mask spans ``range(lengths[j])``).
    ``capture_scalar_outputs`` does not help: ``range(t)`` still breaks, and
    ``range(int(t))`` breaks on the unbacked bound (measured).
    """
    if not isinstance(node, nodes.Call) or builtin_name(node) != "range" or node.keywords:
        return None
    bound = next((a for a in node.args if not isinstance(a, nodes.Starred) and _tensor_not_array(values, a)), None)
    return None if bound is None else ScalarConversion(node, bound, "range")


#: ``math`` functions that convert a tensor argument to a Python number (``__float__`` / ``__index__``): each
#: breaks with GB0033 ("Data dependent operator"), and under ``capture_scalar_outputs`` still breaks, on a guard
#: of the unbacked number (measured on torch 2.13, one function at a time). Not ``math.prod`` (it multiplies the
#: tensor's items as tensors), ``math.radians`` (traced) nor ``math.trunc`` (Dynamo fails, no logged break).
MATH_CONVERSIONS = frozenset(
    {"sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "pow", "floor", "ceil", "fabs",
     "isnan", "isinf", "isfinite", "isclose", "sin", "cos", "tan", "asin", "atan", "atan2", "tanh", "hypot",
     "copysign", "degrees", "erf", "factorial", "comb", "gcd", "lcm", "fmod", "modf", "ldexp", "remainder", "fsum"}
)  # fmt: skip


def math_conversion(values: ValueOracle, node: nodes.NodeNG) -> ScalarConversion | None:
    """``math.sqrt(t)``, ``math.floor(t)``, ``math.isclose(t, 1.0)``... with a TENSOR argument.

    Python's ``math`` takes numbers: a tensor argument is converted with
    ``float(t)`` (or ``operator.index``), which Dynamo cannot trace (GB0033,
    measured on torch 2.13; with ``capture_scalar_outputs`` the conversion is
    traced but ``math`` then guards on the unbacked number and breaks all the
    same). Only a positional argument proven a tensor counts: ``math.sqrt(d)``
    on a config number or a shape is plain Python.
    """
    if not isinstance(node, nodes.Call) or node.keywords:
        return None
    name = values.qualified_name(node.func) or ""
    module, _, function = name.rpartition(".")
    if module != "math" or function not in MATH_CONVERSIONS:
        return None
    tensor = next((a for a in node.args if not isinstance(a, nodes.Starred) and _tensor_not_array(values, a)), None)
    return None if tensor is None else ScalarConversion(node, tensor, f"math.{function}")


@dataclass(frozen=True)
class TensorFormat:
    """``"..." % t`` (printf-style formatting) or ``[w] * t`` (repetition): a TENSOR operand of a Python
    operator that needs its value."""

    node: nodes.BinOp
    tensor: nodes.NodeNG  # the tensor operand (the right side, or an item of its tuple / dict)


def percent_format(values: ValueOracle, node: nodes.NodeNG) -> TensorFormat | None:
    """``"step %d" % t``, ``"%s" % t``, ``"%d/%d" % (t, n)`` or ``"%(n)d" % {"n": t}`` with a TENSOR operand.

    A string's ``%`` converts each operand to a Python number or string, which
    Dynamo cannot do for a tensor: ``%d`` / ``%i`` / ``%x`` / ``%f`` / ``%.2f``
    break with GB0033 ("Data dependent operator"), ``%s`` / ``%r`` with GB0208,
    a tuple or dict of operands with GB0088 (measured on torch 2.13; ``f"{t}"``
    and ``f"{t:.2f}"`` do not break). Only a string literal on the left counts:
    ``t % 3`` is tensor arithmetic.
    """
    if not (isinstance(node, nodes.BinOp) and node.op == "%"):
        return None
    if not (isinstance(node.left, nodes.Const) and isinstance(node.left.value, str)):
        return None
    right = node.right
    if isinstance(right, nodes.Tuple):
        operands = list(right.elts)
    elif isinstance(right, nodes.Dict):
        operands = [value for _, value in right.items]
    else:
        operands = [right]
    tensor = next(
        (o for o in operands if not isinstance(o, nodes.Starred) and _tensor_not_array(values, o)), None
    )
    return None if tensor is None else TensorFormat(node, tensor)


_SEQUENCE_DISPLAYS = (nodes.List, nodes.Tuple, nodes.ListComp)


def sequence_repetition(values: ValueOracle, node: nodes.NodeNG) -> TensorFormat | None:
    """``[w] * t`` / ``t * (w,)`` / ``"-" * t``: a Python sequence repeated a TENSOR number of times.

    Python asks the tensor for ``__index__``, a read of its value: GB0033, and under
    ``capture_scalar_outputs`` a guard on the captured count breaks instead (Qwen2.5-Omni's audio encoder
    builds ``[self.n_window * 2] * chunk_num.sum()``; measured on torch 2.13). Only a sequence spelled out
    (a list, tuple or string literal, a list comprehension) counts; an integer 0-d tensor the frame
    receives is specialised on and does not break, so it is left to the caller (``frame_input``).
    """
    if not (isinstance(node, nodes.BinOp) and node.op == "*"):
        return None
    for sequence, count in ((node.left, node.right), (node.right, node.left)):
        spelled = isinstance(sequence, _SEQUENCE_DISPLAYS) or (
            isinstance(sequence, nodes.Const) and isinstance(sequence.value, (str, bytes))
        )
        if spelled and _tensor_not_array(values, count):
            return TensorFormat(node, count)
    return None


#: Builtins with no Dynamo rule for a tensor argument: each breaks at the call whether or not
#: ``capture_scalar_outputs`` is on (measured, torch 2.13).
UNHANDLED_BUILTINS = frozenset({"str", "repr"})


def unhandled_builtin(values: ValueOracle, node: nodes.NodeNG) -> TensorFormat | None:
    """``str(t)`` or ``repr(t)`` of a TENSOR: Python needs the tensor's value on the host.

    Dynamo has no rule for these on a tensor and breaks at the call, whether
    or not ``capture_scalar_outputs`` is on (``str``: GB0059, "Failed to trace
    builtin operator"; ``repr``: GB0569; measured on torch 2.13, on a frame
    input and on an element ``x[0, 0]`` alike). ``str(t.shape)`` and
    ``str(t.dtype)`` are not tensors and trace; ``min``, ``max`` and ``abs``
    of tensors trace too, and ``round(t)`` raises ``TypeError`` eagerly.
    """
    if not isinstance(node, nodes.Call) or builtin_name(node) not in UNHANDLED_BUILTINS:
        return None
    if len(node.args) != 1 or node.keywords or not _tensor_not_array(values, node.args[0]):
        return None
    return TensorFormat(node, node.args[0])


#: torch's tensor checks and the position of their condition: each reads the condition back with
#: ``cond._is_all_true().item()``, so a tensor condition breaks like ``.item()`` (GB0124, measured on
#: torch 2.13; traced with ``capture_scalar_outputs``). ``torch._check`` takes a Python bool and does not.
TENSOR_CHECKS = {"torch._check_tensor_all": 0, "torch._check_tensor_all_with": 1}


@dataclass(frozen=True)
class TensorCheck:
    """``torch._check_tensor_all(cond)`` / ``torch._check_tensor_all_with(err, cond, msg)`` on a tensor."""

    call: nodes.Call
    condition: nodes.NodeNG
    function: str  # the qualified torch function

    @property
    def label(self) -> str:
        return f"`{self.function}`"


def tensor_check(values: ValueOracle, node: nodes.NodeNG) -> TensorCheck | None:
    """A torch tensor check whose condition is a TENSOR: it copies the condition to the host."""
    if not isinstance(node, nodes.Call):
        return None
    function = values.qualified_name(node.func) or ""
    position = TENSOR_CHECKS.get(function)
    if position is None or len(node.args) <= position:
        return None
    condition = node.args[position]
    if isinstance(condition, nodes.Starred) or any(isinstance(arg, nodes.Starred) for arg in node.args[:position]):
        return None
    return TensorCheck(node, condition, function) if values.is_tensor(condition) else None


#: torch's clamp spellings: as functions (input first) and as tensor methods.
_CLAMP_FUNCTIONS = frozenset({"torch.clamp", "torch.clip"})
_CLAMP_METHODS = frozenset({"clamp", "clip", "clamp_", "clip_"})


@dataclass(frozen=True)
class MixedClamp:
    """``torch.clamp(x, 0, t)``: one bound a tensor, the other a Python number."""

    call: nodes.Call
    tensor: nodes.NodeNG  # the tensor bound
    number: nodes.NodeNG  # the Python-number bound


def mixed_clamp_bound(values: ValueOracle, node: nodes.NodeNG) -> MixedClamp | None:
    """A clamp whose bounds mix a TENSOR and a provable Python number.

    ``clamp`` has one overload for two Python bounds and one for two tensor bounds; with one of each
    Dynamo reads the tensor's value to take the scalar overload: GB0033, "Data dependent operator", also
    when the tensor is a frame input or a module attribute (Beta-VAE's ``torch.clamp(c, 0,
    self.C_max.data[0])``, measured on torch 2.13). Two tensor bounds, or one tensor bound alone
    (``x.clamp(max=t)``, ``torch.clamp(x, t, None)``), are traced and not reported.
    """
    if not isinstance(node, nodes.Call) or any(isinstance(arg, nodes.Starred) for arg in node.args):
        return None
    func = node.func
    if values.qualified_name(func) in _CLAMP_FUNCTIONS:
        positional = node.args[1:3]
    elif isinstance(func, nodes.Attribute) and func.attrname in _CLAMP_METHODS and values.is_tensor(func.expr):
        positional = node.args[:2]
    else:
        return None
    bounds = dict(zip(("min", "max"), positional))
    bounds.update((keyword.arg, keyword.value) for keyword in node.keywords if keyword.arg in {"min", "max"})
    if len(bounds) != 2:
        return None
    low, high = bounds["min"], bounds["max"]
    for tensor, number in ((low, high), (high, low)):
        if values.is_tensor(tensor) and is_python_number(values, number):
            return MixedClamp(node, tensor, number)
    return None


def untyped_array_receiver(values: ValueOracle, func: nodes.Attribute) -> bool:
    """``r.item()`` / ``r.tolist()`` on an ``r`` of unknown kind: only arrays have the method
    (:meth:`ValueOracle.array_method`), so ``r`` is a tensor or a NumPy array computed in the graph.

    Not on a provable NumPy value nor on any NumPy call's result: a NumPy *scalar* of Python numbers
    (``np.float32(2.0).item()``) does not break (measured), NumPy over Python values is GM403's
    finding, and a host draw (``np.random.rand(1).item()``) GM204's.
    """
    receiver = func.expr
    if isinstance(receiver, nodes.Call) and (values.qualified_name(receiver.func) or "").startswith("numpy."):
        return False
    return values.kind(receiver) is Kind.UNKNOWN and values.array_method(func) and not is_numpy_value(values, receiver)


def _tensor_not_array(values: ValueOracle, node: nodes.NodeNG) -> bool:
    return values.is_tensor(node) and numpy_origin(values, node) is None


# -- bindings -----------------------------------------------------------------------


def single_target(node: nodes.NodeNG) -> nodes.AssignName | None:
    """The name in ``name = <node>`` when *node* is the whole value of a one-target assignment."""
    parent = node.parent
    if isinstance(parent, nodes.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, nodes.AssignName):
            return target
    return None


def sole_binding(target: nodes.AssignName) -> bool:
    """True when *target* is the only binding of its name in its scope (no rebinding, no ``del``)."""
    scope = target.scope()
    bindings = scope.locals.get(target.name, [])
    deleted = any(d.name == target.name for d in scope.nodes_of_class(nodes.DelName))
    return bindings == [target] and not deleted


def bound_parameter(function: nodes.FunctionDef, call: nodes.Call, argument: nodes.NodeNG) -> nodes.AssignName | None:
    """The parameter of *function* that *argument* of *call* binds, when that is certain."""
    arguments = function.args
    if arguments.vararg or arguments.kwarg or any(isinstance(a, nodes.Starred) for a in call.args):
        return None
    if isinstance(argument, nodes.Keyword):
        named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        return next((p for p in named if p.name == argument.arg), None)
    positional = [*arguments.posonlyargs, *arguments.args]
    bound = isinstance(function.parent, nodes.ClassDef) and function.type != "staticmethod"
    index = call.args.index(argument) + (1 if bound else 0)
    return positional[index] if index < len(positional) else None


def reads_of(target: nodes.AssignName) -> list[nodes.Name] | None:
    """Every read of the variable *target* binds, or ``None`` when that is not provable.

    Provable means: *target* is the variable's only binding, and every read is
    in the same scope, or in a comprehension of it, which runs where it stands
    (a closure could see it later or elsewhere), and comes after the assignment.
    """
    if not sole_binding(target):
        return None
    scope = target.scope()
    reads = [n for n in scope.nodes_of_class(nodes.Name) if n.name == target.name]
    if any(_enclosing_function_scope(read) is not scope or read.lineno < target.lineno for read in reads):
        return None
    return reads


_COMPREHENSIONS = (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)


def _enclosing_function_scope(node: nodes.NodeNG) -> nodes.LocalsDictNodeNG:
    """*node*'s scope, looking through the comprehensions around it."""
    scope = node.scope()
    while isinstance(scope, _COMPREHENSIONS):
        scope = scope.parent.scope()
    return scope


def is_torch_op(values: ValueOracle, call: nodes.Call, *, excluded: tuple[str, ...] = ()) -> bool:
    """A ``torch.*`` function (outside the *excluded* prefixes) or a method of a tensor."""
    callee = values.qualified_name(call.func) or ""
    if callee.startswith("torch.") and not any(callee.startswith(prefix) for prefix in excluded):
        return True
    return isinstance(call.func, nodes.Attribute) and values.is_tensor(call.func.expr)


def python_use(values: ValueOracle, node: nodes.NodeNG, depth: int = 0, *, float_casts: bool = False) -> nodes.NodeNG | None:
    """The first use of *node*'s value (directly, or through the one name it is bound to) that is Python's, not
    tensor arithmetic or a torch op; ``None`` when every use stays in the graph.

    Dynamo traces NumPy over Python values as a 0-d tensor (``torch._numpy``);
    only a Python use of it breaks: an ``if``, ``range``, ``int()``, a slice
    (measured, torch 2.13), and Dynamo logs the break there, not at the NumPy
    call (``c = np.log(n)`` then ``if c > 1:`` breaks at the ``if``). Mixed
    into a tensor (``x / np.sqrt(d)``, ``arange(n) * -(np.log(m) / (n - 1))``)
    or passed to a torch function or tensor method (``t.uniform_(-r, r)``,
    ``x.reshape(-1, n)``, ``torch.zeros((2, n))``) it stays in the graph: no break.

    With *float_casts* (a NumPy value of a floating dtype: ``np.sqrt``,
    ``np.log``...), ``int(...)``, ``float(...)`` and ``.item()`` of it, also after
    arithmetic with Python numbers, stay in the graph too, and so does a branch
    on the number they give (measured, torch 2.13: ``int(np.sqrt(x.shape[1]))``,
    ``float(np.log(n))``, ``int(np.sqrt(k) * 2)``, ``np.sqrt(n).item()``; an
    integer NumPy value breaks there, GB0208, and ``math.floor`` of either does).
    """
    if depth > 4:
        return node
    child, parent = node, node.parent
    while isinstance(parent, (nodes.BinOp, nodes.UnaryOp)):
        if isinstance(parent, nodes.BinOp) and values.kind(parent.left if parent.right is child else parent.right) is not Kind.STATIC:
            return None  # mixed into a tensor, or into a value of unknown kind (reformer's ``key_vectors / np.sqrt(d)``)
        child, parent = parent, parent.parent
    if float_casts and _cast_to_python(parent, child):
        return None
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Call) and parent in parent.parent.args:
        child, parent = parent, parent.parent  # torch.zeros((2, n))
    if isinstance(parent, nodes.Call) and child in parent.args:
        if _traced_numpy_call(values, parent):  # np.log(np.exp(k) - 1): a tensor op whose result is followed
            return python_use(values, parent, depth + 1)
        if is_torch_op(values, parent):
            return None
        return _argument_use(values, parent, child, depth, float_casts=float_casts)
    if _stored_into_tensor(values, child):
        return None
    if isinstance(parent, nodes.Keyword) and isinstance(parent.parent, nodes.Call):
        call = parent.parent  # torch.full(size, fill_value=v), x.clamp(min=v): a torch op keeps it (measured)
        return None if is_torch_op(values, call) else _argument_use(values, call, parent, depth, float_casts=float_casts)
    if isinstance(parent, nodes.IfExp) and child is not parent.test:
        return python_use(values, parent, depth + 1, float_casts=float_casts)  # ``v if c else 1.0`` is v
    if isinstance(parent, nodes.Return) and isinstance(function := parent.scope(), nodes.FunctionDef):
        return _returned_use(values, parent, function, depth, float_casts=float_casts)
    target = single_target(child)
    if target is not None:
        reads = reads_of(target) or ()
        return next((use for read in reads if (use := python_use(values, read, depth + 1, float_casts=float_casts))), None)
    return _decided_by_python(child, parent)


def _returned_use(
    values: ValueOracle, statement: nodes.Return, function: nodes.FunctionDef, depth: int, *, float_casts: bool
) -> nodes.NodeNG | None:
    """The returned value when a caller of *function* in this file takes it in Python.

    reformer's ``_get_least_common_mult_chunk_len`` returns ``np.lcm(...)`` and
    ``forward`` tests ``seq_len % lcm != 0``: Dynamo breaks at the caller's
    test (GB0170), and a fix of the returned value removes that break, so
    that is where it is reported. A value callers only carry breaks nothing;
    callers outside this file are not known: quiet.
    """
    calls = values.calls_of(function)
    return statement.value if any(python_use(values, call, depth + 1, float_casts=float_casts) for call in calls) else None


def _decided_by_python(child: nodes.NodeNG, parent: nodes.NodeNG) -> nodes.NodeNG | None:
    """*parent* when Python itself needs *child*'s number: a comparison or ``and``/``or`` (what a branch
    tests), the test of an ``if``/``while``/conditional expression, a slice bound, an index of a
    container, or ``.item()`` (a floating value's, under *float_casts*, was let through before);
    ``None`` otherwise.

    Anything else (kept in a list, tuple or dict, an
    augmented assignment, a rebound name, a value never read) does not show
    where Python takes the value, and Dynamo does not break where it is only
    carried (measured, torch 2.13: ``return x, np.lcm(k, 4)``,
    ``[np.sqrt(k)]``, ``{"s": np.sqrt(k)}``, ``s = np.sqrt(k); s *= 2``), so
    nothing is reported there.
    """
    if isinstance(parent, (nodes.Compare, nodes.BoolOp, nodes.Slice)):
        return parent
    if isinstance(parent, (nodes.If, nodes.While, nodes.IfExp)) and child is parent.test:
        return child if parent.is_statement else parent
    if isinstance(parent, nodes.Subscript) and child is parent.slice:
        return parent
    if isinstance(parent, nodes.Attribute) and _cast_to_python(parent, child):
        return parent.parent  # ``n.item()`` of an integer value: GB0208 / GB0033 (measured)
    return None


def _argument_use(
    values: ValueOracle, call: nodes.Call, argument: nodes.NodeNG, depth: int, *, float_casts: bool
) -> nodes.NodeNG | None:
    """The Python use of *argument* passed to *call*, a call that is not a torch op.

    A builtin or ``math`` function takes it as a Python number (``range(n)``,
    ``math.floor(v)``): the call is the use. A function of this file is
    followed into the parameter the argument binds (reformer's
    ``self._len_and_dim_norm(vectors, np.sqrt(d))`` only divides a tensor by
    it: no break, measured). Any other callee is not known: what it does with
    the value is not provable, so nothing is reported.
    """
    if builtin_name(call) is not None or (values.qualified_name(call.func) or "").startswith("math."):
        return call
    callee = values.called_function(call)
    parameter = bound_parameter(callee, call, argument) if callee is not None else None
    reads = reads_of(parameter) if parameter is not None else None
    if reads is None:
        return None
    return next((use for read in reads if (use := python_use(values, read, depth + 1, float_casts=float_casts))), None)


def _cast_to_python(parent: nodes.NodeNG, child: nodes.NodeNG) -> bool:
    """*parent* is ``int(child)``, ``float(child)`` or ``child.item()``."""
    if isinstance(parent, nodes.Call):
        return builtin_name(parent) in _FLOAT_CASTS and parent.args == [child] and not parent.keywords
    call = parent.parent
    return (
        isinstance(parent, nodes.Attribute)
        and parent.attrname == "item"
        and isinstance(call, nodes.Call)
        and call.func is parent
        and not call.args
        and not call.keywords
    )


def _traced_numpy_call(values: ValueOracle, call: nodes.Call) -> bool:
    """A top-level NumPy function ``torch._numpy`` implements: Dynamo traces it as a tensor op."""
    module, _, function = (values.qualified_name(call.func) or "").rpartition(".")
    return module == "numpy" and untraced_numpy_function(values, call) is None


def _stored_into_tensor(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``t[..., 0] = <node>`` into a tensor: the value stays in the graph (measured, torch 2.13)."""
    parent = node.parent
    return (
        isinstance(parent, nodes.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], nodes.Subscript)
        and values.is_tensor(parent.targets[0].value)
    )


def unpacking(binding: nodes.NodeNG) -> tuple[nodes.Tuple | nodes.List, nodes.Assign] | None:
    """``(target, statement)`` when *binding* is one name of ``a, b = <value>``, else ``None``."""
    target = binding.parent if isinstance(binding, nodes.AssignName) else None
    statement = target.parent if isinstance(target, (nodes.Tuple, nodes.List)) else None
    return (target, statement) if isinstance(statement, nodes.Assign) else None


def unpacked_from(name: nodes.Name) -> list[nodes.NodeNG] | None:
    """For ``a, b = <value>``: the ``<value>`` of each binding of *name*, else ``None``."""
    try:
        assignments = reaching_bindings(name)
    except Exception:
        return None
    sources = []
    for assignment in assignments:
        unpacked = unpacking(assignment)
        if unpacked is None:
            return None
        sources.append(unpacked[1].value)
    return sources or None


# -- dtype facts -------------------------------------------------------------------


def _all_bindings(values: ValueOracle, name: nodes.Name, test: Callable[[nodes.NodeNG, int], bool], depth: int) -> bool:
    bound = bound_values(name)
    return bool(bound) and all(test(value, depth + 1) for value in bound)


def _dtype_keyword(values: ValueOracle, call: nodes.Call) -> str | None:
    for keyword in call.keywords or []:
        if keyword.arg == "dtype":
            return values.qualified_name(keyword.value)
    return None


def _conversion_dtype(values: ValueOracle, call: nodes.Call) -> str | None:
    """``torch.bool`` for ``t.to(torch.bool)`` / ``t.type(torch.bool)``."""
    to = method_call(call, "to", "type")
    if to is None:
        return None
    if call.args:
        return values.qualified_name(call.args[0])
    return _dtype_keyword(values, call)


def is_bool_tensor(values: ValueOracle, node: nodes.NodeNG, depth: int = 0, *, lenient: bool = False) -> bool:
    """True when *node* is provably a tensor of dtype ``torch.bool``.

    Names, ``self.<attr>`` and calls of this file's functions are followed
    to what they hold (:meth:`ValueOracle.value_sources`): a mask a helper
    returns (``mask, n = self.get_mask(ids)``), a mask kept on ``self`` or
    registered as a buffer, a parameter every call of which passes a mask.

    *lenient* (:func:`is_likely_mask`) also takes ``a & b`` / ``a | b`` / ``a ^ b`` with one
    operand a mask and the others tensors of unknown dtype.
    """
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Compare):
        return is_elementwise_comparison(node) and values.kind(node) is Kind.TENSOR
    if isinstance(node, nodes.UnaryOp) and node.op == "~":
        return is_bool_tensor(values, node.operand, depth + 1, lenient=lenient)
    if isinstance(node, nodes.BinOp) and node.op in {"&", "|", "^", "*"}:
        operands = (node.left, node.right)
        masks = [is_bool_tensor(values, operand, depth + 1, lenient=lenient) for operand in operands]
        if all(masks):
            return True  # ``mask * crop_mask`` of two bool tensors is one too (monodepth2's Garg crop)
        if node.op == "*":
            return False
        return lenient and any(masks) and all(
            values.is_tensor(operand) and not is_integer_tensor(values, operand) and not is_float_tensor(values, operand)
            for operand in operands
        )
    if isinstance(node, nodes.Name):
        return values.is_tensor(node) and _bool_sources(values, node, depth, lenient)
    if isinstance(node, nodes.Attribute):
        return values.is_tensor(node) and _bool_sources(values, node, depth, lenient)
    if isinstance(node, nodes.Subscript):
        return values.is_tensor(node) and (
            is_bool_tensor(values, node.value, depth + 1, lenient=lenient)
            or _bool_entry(values, node, depth, lenient)
        )
    if isinstance(node, nodes.Call):
        return _is_bool_call(values, node, depth, lenient) or (
            values.is_tensor(node) and _bool_sources(values, node, depth, lenient)
        )
    return False


def _bool_entry(values: ValueOracle, node: nodes.Subscript, depth: int, lenient: bool) -> bool:
    """``out["keep"]`` / ``pair[0]``: the entry of a dict or tuple this file builds (a helper's
    ``return {"keep": x > 0, ...}``) is a bool tensor wherever the container can come from."""
    key = node.slice
    if not (isinstance(key, nodes.Const) and type(key.value) in (int, str)):
        return False
    entries = values.element_values(node.value, key.value)
    return bool(entries) and all(is_bool_tensor(values, entry, depth + 1, lenient=lenient) for entry in entries)


def is_likely_mask(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """*node* is a bool tensor, or ``a & b`` (``|``, ``^``) of a bool tensor and tensors of unknown dtype
    (through names, helpers and the rest that :func:`is_bool_tensor` follows).

    ``protein_mask = (mol_type == 0) & attention_mask`` then ``ids[protein_mask]``
    (ESMFold2): with a bool ``attention_mask`` the result is bool; with an integer
    one it is an integer tensor, and indexing with a 0/1 integer tensor gathers
    rows 0 and 1, which no code means. With a float one ``&`` raises. So as an
    index it is a mask; detection only, never for a fix that relies on the dtype.
    A Python operand (``(x > 0) & 1``) or one of a proven integer or float dtype
    (``(x > 0) & ids.long()``) makes no mask and does not count.
    """
    return is_bool_tensor(values, node, lenient=True)


def _bool_sources(values: ValueOracle, node: nodes.Name | nodes.Attribute | nodes.Call, depth: int, lenient: bool) -> bool:
    """Every expression *node*'s value comes from is a bool tensor; a parameter annotated
    ``torch.BoolTensor`` is one whatever its calls pass.

    transformers annotates its masks (``audio_token_mask: torch.BoolTensor |
    None = None`` in Higgs Audio v2, whose ``hidden_states[audio_token_mask]``
    logs GB0036 six times). Memoised per node, so that a recursive helper or
    two helpers passing a mask to each other cost one walk; a cycle proves nothing.
    """
    memo = values.memo("likely-mask-sources" if lenient else "bool-sources")
    if node in memo:
        return memo[node]
    memo[node] = False
    if isinstance(node, nodes.Name):
        try:
            bindings = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code; then nothing is proven
            bindings = []
        result = bool(bindings) and all(_bool_binding(values, binding, depth, lenient) for binding in bindings)
    else:
        sources = values.value_sources(node)
        result = bool(sources) and all(is_bool_tensor(values, source, depth + 1, lenient=lenient) for source in sources)
    memo[node] = result
    return result


def _bool_binding(values: ValueOracle, binding: nodes.NodeNG, depth: int, lenient: bool) -> bool:
    """*binding* gives a name that is a tensor where it is read a bool tensor. A comparison does, whatever
    its operands are typed as: a tensor it makes is one of bools (``special_image_mask = input_ids ==
    self.config.image_token_id``, typed a tensor by its later ``.unsqueeze(-1)``)."""
    if isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Arguments):
        if _annotated_bool_tensor(values, binding, binding.parent):
            return True
    if isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.AugAssign):
        return _updated_in_place(values, binding, depth, lenient)
    iterable = values.loop_iterable(binding)
    if iterable is not None:
        return _yields_masks(values, iterable, depth + 1, lenient)
    sources = without_none(values.binding_sources(binding) or [])
    return bool(sources) and all(
        is_elementwise_comparison(source) or is_bool_tensor(values, source, depth + 1, lenient=lenient) for source in sources
    )


def _yields_masks(values: ValueOracle, iterable: nodes.NodeNG, depth: int, lenient: bool) -> bool:
    """Every item of *iterable* is a bool tensor: it is a mask (its rows keep its dtype), a list, tuple or
    comprehension of masks built here, a name bound only to one, or ``sorted``/``list``/... of one.

    ``for mask_row in protein_mask:`` then ``ids[mask_row]``; ``for m in (a > 0, b > 0): x[m]``.
    """
    if depth > _MAX_DEPTH:
        return False
    if isinstance(iterable, (nodes.List, nodes.Tuple, nodes.Set)):
        return bool(iterable.elts) and all(is_bool_tensor(values, e, depth + 1, lenient=lenient) for e in iterable.elts)
    if isinstance(iterable, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
        return is_bool_tensor(values, iterable.elt, depth + 1, lenient=lenient)
    if isinstance(iterable, nodes.Call) and values.qualified_name(iterable.func) in ITEM_COPIES and iterable.args:
        return _yields_masks(values, iterable.args[0], depth + 1, lenient)
    if values.is_tensor(iterable):
        return is_bool_tensor(values, iterable, depth + 1, lenient=lenient)
    if isinstance(iterable, nodes.Name):
        bound = bound_values(iterable)
        return bool(bound) and all(_yields_masks(values, value, depth + 1, lenient) for value in bound)
    return False


def _updated_in_place(values: ValueOracle, binding: nodes.AssignName, depth: int, lenient: bool) -> bool:
    """``valid &= (boxes[:, 0] <= w)`` on a bool tensor: an augmented assignment to a tensor runs in place
    (``__iand__``, ``__ior__``, ...), which keeps the tensor's dtype whatever the operand (torchvision's
    ``sanitize_bounding_boxes`` mask). A bool target stays bool; the value before it decides."""
    try:
        before = [b for b in reaching_bindings(binding) if b is not binding]
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    return bool(before) and all(_bool_binding(values, earlier, depth + 1, lenient) for earlier in before)


def _annotated_bool_tensor(values: ValueOracle, parameter: nodes.AssignName, arguments: nodes.Arguments) -> bool:
    """``m: torch.BoolTensor``, also ``| None`` and ``Optional[...]`` of it, or jaxtyping's ``Bool[Tensor, "b"]``."""
    annotation = ValueOracle._annotation_of(parameter, arguments)
    return annotation is not None and values.annotated_types(annotation) == {BOOL_TENSOR}


#: Annotations that leave a parameter's dtype open: a name can then say it is a mask.
_OPEN_DTYPE_ANNOTATIONS = frozenset({TENSOR, BOOL_TENSOR})
#: Integer tensor annotations that code writes on masks by habit (transformers spells every mask
#: ``torch.LongTensor``): a name that says mask outweighs them where the mask indexes.
_HABITUAL_MASK_ANNOTATIONS = frozenset({"torch.LongTensor", "torch.IntTensor"})


def mask_named_parameter(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """*node* is a parameter whose name says it holds a *boolean* mask: ``mask_bool``, ``bool_mask``,
    ``bool_masked_pos`` (VideoMAE).

    Weaker than :func:`is_bool_tensor`, so for detection only, never for a
    fix that relies on the dtype. A bare ``mask`` / ``attention_mask`` says
    less (transformers' attention masks are 0/1 integers, and an integer
    tensor index gathers): :mod:`~graphmend_lint.analysis.mask_parameters`
    weighs those against their calls; here the name must say both mask and
    bool. It must be the name's only binding and :func:`open_parameter`
    (any other default, another annotation, or a rebinding in the body is a type).
    """
    if not isinstance(node, nodes.Name):
        return False
    words = set(node.name.lower().strip("_").split("_"))
    if not ({"mask", "masks", "masked"} & words and {"bool", "boolean"} & words):
        return False
    try:
        bindings = reaching_bindings(node)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    return len(bindings) == 1 and open_parameter(values, bindings[0]) and values.kind(node) is not Kind.STATIC


def open_parameter(values: ValueOracle, binding: nodes.NodeNG, indexes: bool = False) -> bool:
    """*binding* is a parameter that leaves its dtype open: unannotated or annotated ``torch.Tensor`` /
    ``torch.BoolTensor`` (``| None``), with no default but ``None``. When it *indexes* (a mask read), also
    ``torch.LongTensor`` / ``torch.IntTensor``: a 0/1 integer index gathers rows 0 and 1, which no code
    means, so Janus's ``images_seq_mask: torch.LongTensor`` (a ``BoolTensor`` in its docstring) selects."""
    if not (isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Arguments)):
        return False
    default = ValueOracle._default_of(binding, binding.parent)
    if default is not None and not (isinstance(default, nodes.Const) and default.value is None):
        return False
    annotation = ValueOracle._annotation_of(binding, binding.parent)
    if annotation is None:
        return True
    accepted = _OPEN_DTYPE_ANNOTATIONS | _HABITUAL_MASK_ANNOTATIONS if indexes else _OPEN_DTYPE_ANNOTATIONS
    return values.annotated_types(annotation) <= accepted


def compares_itself_with_number(container: nodes.NodeNG, mask: nodes.NodeNG) -> bool:
    """``x[x >= 0]`` (or ``m = x >= self.low`` ... ``x[m]``): *mask* orders the very *container* against a
    number, or against any value but a literal list, tuple or string.

    A Python number cannot be indexed and a list or string cannot be ordered
    against a number, so *container* is an array: the mask is elementwise and
    boolean. Against an attribute or a name (pytorch-metric-learning's
    ``losses[losses > self.low]``) the same holds unless both are sequences,
    and a sequence's ordering is one bool, which no code indexes with. So
    does (in)equality (BiSeNet's ``labels[labels != self.ignore_lb]``): a
    sequence or mapping compared with anything gives one bool, and indexing
    one with ``True`` is no code's intent.
    """
    if not isinstance(container, nodes.Name):
        return False
    if isinstance(mask, nodes.Name):
        bound = bound_values(mask)
        return bound is not None and len(bound) == 1 and compares_itself_with_number(container, bound[0])
    if not is_elementwise_comparison(mask):
        return False
    left, right = mask.left, mask.ops[0][1]
    if isinstance(right, nodes.Const):
        bound = type(right.value) in (int, float)
    else:
        bound = isinstance(right, (nodes.Name, nodes.Attribute, nodes.UnaryOp, nodes.BinOp))
    return bound and isinstance(left, nodes.Name) and left.name == container.name and _same_bindings(left, container)


def _same_bindings(first: nodes.Name, second: nodes.Name) -> bool:
    try:
        return reaching_bindings(first) == reaching_bindings(second)
    except Exception:  # astroid lookups can fail on odd code; then it is not provably the same value
        return False


def _is_bool_call(values: ValueOracle, call: nodes.Call, depth: int, lenient: bool) -> bool:
    if not values.is_tensor(call):
        return False
    name = values.qualified_name(call.func) or ""
    if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _BOOL_RESULTS:
        return True
    if _dtype_keyword(values, call) in _BOOL_DTYPES or _conversion_dtype(values, call) in _BOOL_DTYPES:
        return True
    if _dtype_keyword(values, call) is None and _bool_from_arguments(values, call, name, depth, lenient):
        return True
    func = call.func
    if not isinstance(func, nodes.Attribute):
        return False
    if func.attrname in _BOOL_METHODS:
        return True  # the call is a tensor (above), whatever the receiver is typed as: ``m[i].bool()``
    if values.is_tensor(func.expr) and bool_keeping_receiver(call) is not None:
        return is_bool_tensor(values, func.expr, depth + 1, lenient=lenient)
    return False


def bool_keeping_receiver(call: nodes.Call) -> nodes.NodeNG | None:
    """``m`` in ``m.to(device)``, ``m.unsqueeze(-1)``, ``m.any(-1)``...: a method whose result is boolean
    when its receiver is; else ``None``. An in-place method (``m.fill_diagonal_(0)``, SimCLR's NT-Xent
    mask) returns its receiver, whose dtype it cannot change."""
    func = call.func
    if isinstance(func, nodes.Attribute) and (
        func.attrname in _BOOL_PRESERVING_METHODS or _is_in_place(func.attrname) or _is_device_move(call)
    ):
        return func.expr
    return None


def _is_in_place(method: str) -> bool:
    """``fill_``, ``masked_fill_``, ``fill_diagonal_``: torch's in-place methods, which return ``self``."""
    return method.endswith("_") and not method.startswith("_")


def _bool_from_arguments(values: ValueOracle, call: nodes.Call, name: str, depth: int, lenient: bool) -> bool:
    """``torch.flip(m, ...)``, ``torch.cat([m1, m2])``, ``torch.full(size, True)``: a torch function whose
    result takes its dtype from arguments that are boolean."""
    args = call.args
    preserving = name.count(".") == 1 and name.startswith("torch.") and name[6:] in _BOOL_PRESERVING_METHODS
    if (preserving or name in _DTYPE_KEEPING_FUNCTIONS) and args:
        return is_bool_tensor(values, args[0], depth + 1, lenient=lenient)
    if name in _JOINING_FUNCTIONS and args:
        parts = args[0].elts if isinstance(args[0], (nodes.List, nodes.Tuple)) else appended_items(args[0])
        return bool(parts) and all(is_bool_tensor(values, part, depth + 1, lenient=lenient) for part in parts)
    if name in _FILLING_FUNCTIONS and len(args) >= 2:
        return isinstance(args[1], nodes.Const) and type(args[1].value) is bool
    if name in _FROM_DATA and args:
        return _bool_literal(args[0])
    return False


def _bool_literal(node: nodes.NodeNG) -> bool:
    """``True``, or a (nested) list or tuple literal of only ``True``/``False``: ``torch.tensor`` infers ``torch.bool``."""
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return bool(node.elts) and all(_bool_literal(element) for element in node.elts)
    return isinstance(node, nodes.Const) and type(node.value) is bool


def _is_device_move(call: nodes.Call) -> bool:
    """``t.to(other.device)`` / ``t.to(device=d)`` / ``t.to(device)`` / ``t.to("cpu")``: a move that keeps
    the dtype. A name counts when it says device (``device``, ``target_device``): ``t.to(dtype)`` converts."""
    if method_call(call, "to") is None or not (call.args or call.keywords):
        return False
    arguments_are_devices = all(_names_a_device(arg) for arg in call.args)
    keywords_are_devices = all(kw.arg in {"device", "non_blocking"} for kw in call.keywords or [])
    return arguments_are_devices and keywords_are_devices


def _names_a_device(node: nodes.NodeNG) -> bool:
    """``x.device``, a name that says device, or a string (``.to`` takes a dtype only as an object)."""
    if isinstance(node, nodes.Attribute):
        return node.attrname == "device"
    if isinstance(node, nodes.Name):
        return node.name == "device" or node.name.endswith("_device")
    return isinstance(node, nodes.Const) and isinstance(node.value, str)


def is_float_tensor(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *node* is provably a floating-point tensor.

    Only spellings that force a floating dtype count (``.float()``,
    ``dtype=torch.float32``, ``torch.randn``...): masked ``max``/``min`` need
    ``-inf``/``+inf`` as their identity, which an integer tensor cannot hold.
    """
    if depth > _MAX_DEPTH or not values.is_tensor(node):
        return False
    if isinstance(node, nodes.Name):
        return _all_bindings(values, node, lambda value, d: is_float_tensor(values, value, d), depth)
    if isinstance(node, nodes.Call):
        if _dtype_keyword(values, node) in _FLOAT_DTYPES or _conversion_dtype(values, node) in _FLOAT_DTYPES:
            return True
        return values.qualified_name(node.func) in _FLOAT_FUNCTIONS or method_call(node, *_FLOAT_METHODS) is not None
    return isinstance(node, nodes.BinOp) and node.op == "/"  # true division of tensors is always floating


_INTEGER_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int", "torch.int32", "torch.int16", "torch.short",
                             "torch.int8", "torch.uint8", "int"})  # fmt: skip
#: Tensor methods that return an integer tensor whatever the input dtype.
_INTEGER_METHODS = frozenset({"long", "int", "short", "argmax", "argmin", "argsort"})
#: Tensor methods whose result keeps an integer receiver integer (``sum`` promotes to int64).
_INTEGER_PRESERVING_METHODS = frozenset(
    {"sum", "cumsum", "flatten", "view", "reshape", "squeeze", "unsqueeze", "contiguous", "clone", "detach", "cpu"}
)


def is_integer_tensor(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *node* is provably a tensor of an integer dtype.

    ``t.tolist()`` of an integer tensor is traced under ``capture_scalar_outputs``
    (each element an unbacked symbol); of a float tensor it always breaks
    (GB0109), so the capture switch is only a fix for the former.
    """
    if depth > _MAX_DEPTH or not values.is_tensor(node):
        return False
    if isinstance(node, nodes.Name):
        return _all_bindings(values, node, lambda value, d: is_integer_tensor(values, value, d), depth)
    if not isinstance(node, nodes.Call):
        return False
    dtype = _dtype_keyword(values, node) or _conversion_dtype(values, node)
    if dtype is not None:
        return dtype in _INTEGER_DTYPES
    if method_call(node, *_INTEGER_METHODS) is not None:
        return True
    preserving = method_call(node, *_INTEGER_PRESERVING_METHODS)
    return preserving is not None and is_integer_tensor(values, preserving.func.expr, depth + 1)


# -- Python numbers ----------------------------------------------------------------


def is_python_int(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *node* is provably a Python ``int`` (shape arithmetic, literals, ``len``)."""
    return _is_number(values, node, depth, allow_float=False)


def is_python_number(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *node* is provably a Python ``int`` or ``float``."""
    return _is_number(values, node, depth, allow_float=True)


def _is_number(values: ValueOracle, node: nodes.NodeNG, depth: int, allow_float: bool) -> bool:
    if depth > _MAX_DEPTH:
        return False
    again = lambda child: _is_number(values, child, depth + 1, allow_float)  # noqa: E731
    if isinstance(node, nodes.Const):
        allowed = (int, float) if allow_float else (int,)
        return isinstance(node.value, allowed) and not isinstance(node.value, bool)
    if isinstance(node, nodes.UnaryOp) and node.op in {"-", "+"}:
        return again(node.operand)
    if isinstance(node, nodes.BinOp):
        operators = _NUMBER_OPERATORS if allow_float else _INT_OPERATORS
        return node.op in operators and again(node.left) and again(node.right)
    if isinstance(node, nodes.Subscript):
        return _is_shape_element(values, node)
    if isinstance(node, nodes.Attribute):
        return node.attrname == "ndim" and values.is_tensor(node.expr)
    if isinstance(node, nodes.Call):
        return _is_number_call(values, node, again, allow_float)
    if isinstance(node, nodes.Name):
        return _is_number_name(values, node, depth, allow_float)
    return False


def _is_shape_element(values: ValueOracle, node: nodes.Subscript) -> bool:
    """``x.shape[0]`` or ``x.size()[-1]``: one dimension of a tensor's shape."""
    index = node.slice
    if isinstance(index, nodes.UnaryOp) and index.op == "-":
        index = index.operand  # x.shape[-1]
    if not (isinstance(index, nodes.Const) and isinstance(index.value, int)):
        return False
    return _is_shape(values, node.value)


def _is_shape(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``x.shape`` or ``x.size()`` of a tensor: a ``torch.Size``, i.e. a tuple of ints."""
    if isinstance(node, nodes.Attribute) and node.attrname in _SHAPE_ATTRIBUTES:
        return values.is_tensor(node.expr)
    size = method_call(node, "size")
    return size is not None and not node.args and values.is_tensor(size.func.expr)


def _is_number_call(
    values: ValueOracle, call: nodes.Call, again: Callable[[nodes.NodeNG], bool], allow_float: bool
) -> bool:
    builtin = builtin_name(call)
    if builtin == "len":
        return True
    if builtin == "int" or (builtin == "float" and allow_float):
        return len(call.args) == 1 and values.kind(call.args[0]) is Kind.STATIC
    if builtin in {"abs", "max", "min"}:
        return bool(call.args) and not call.keywords and all(again(arg) for arg in call.args)
    func = call.func
    if isinstance(func, nodes.Attribute) and values.is_tensor(func.expr):
        if func.attrname in _INT_METHODS:
            return True
        return func.attrname == "size" and len(call.args) == 1 and again(call.args[0])
    return False


def _is_number_name(values: ValueOracle, name: nodes.Name, depth: int, allow_float: bool) -> bool:
    bound = bound_values(name)
    if bound is not None:
        return all(_is_number(values, value, depth + 1, allow_float) for value in bound)
    if _counts_a_range(name):
        return True
    unpacked = unpacked_from(name)
    if unpacked is not None:
        return all(_is_shape(values, source) or _is_shape_slice(values, source) for source in unpacked)
    types = _annotated_parameter(values, name)
    return bool(types) and types <= ({"int", "float"} if allow_float else {"int"})


def _counts_a_range(name: nodes.Name) -> bool:
    """*name* is bound only as the target of ``for name in range(...)`` (a loop or a comprehension): each
    step is a Python int (OSTrack's ``for i in range(gt_class.shape[0]): gt_class[i]``)."""
    loops = loops_binding(name)
    return bool(loops) and all(
        isinstance(loop.target, nodes.AssignName)
        and isinstance(loop.iter, nodes.Call)
        and is_builtin_call(loop.iter, "range")
        for loop in loops
    )


def _is_shape_slice(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``x.shape[:2]`` / ``x.size()[:-1]``: still a tuple of ints."""
    return isinstance(node, nodes.Subscript) and isinstance(node.slice, nodes.Slice) and _is_shape(values, node.value)


def _annotated_parameter(values: ValueOracle, name: nodes.Name) -> frozenset[str]:
    """The types the annotation of the parameter *name* refers to allows, when that is its only binding."""
    try:
        assignments = reaching_bindings(name)
    except Exception:
        return frozenset()
    if len(assignments) != 1 or not isinstance(assignments[0].parent, nodes.Arguments):
        return frozenset()
    annotation = ValueOracle._annotation_of(assignments[0], assignments[0].parent)
    return values.annotated_types(annotation) if annotation is not None else frozenset()


# -- NumPy arrays made from tensors ----------------------------------------------------

#: NumPy functions that turn their first argument into an array (a tensor, here).
_NUMPY_FROM = frozenset({"numpy.asarray", "numpy.array", "numpy.asanyarray", "numpy.ascontiguousarray"})


def numpy_conversion(values: ValueOracle, node: nodes.NodeNG) -> nodes.Call | None:
    """``t.numpy()`` (also after ``.cpu()``/``.detach()``) or ``np.asarray(t)`` on a TENSOR."""
    if not isinstance(node, nodes.Call):
        return None
    to_numpy = method_call(node, "numpy")
    if to_numpy is not None and values.is_tensor(to_numpy.func.expr):
        return node
    if values.qualified_name(node.func) in _NUMPY_FROM and node.args and values.is_tensor(node.args[0]):
        return node
    return None


def numpy_origin(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> nodes.Call | None:
    """The tensor-to-NumPy conversion *node*'s value is computed from, if provably one.

    Under ``torch.compile`` Dynamo traces NumPy arrays made from tensors as
    tensors, so nothing breaks until such a value is forced into Python;
    rules use this to find those forcing sites.
    """
    if depth > _MAX_DEPTH:
        return None
    again = lambda child: numpy_origin(values, child, depth + 1)  # noqa: E731
    direct = numpy_conversion(values, node)
    if direct is not None:
        return direct
    if isinstance(node, nodes.Call):
        if isinstance(node.func, nodes.Attribute) and node.func.attrname not in {"tolist", "item"}:
            origin = again(node.func.expr)  # a.sum(), a.astype(...)
            if origin is not None:
                return origin
        name = values.qualified_name(node.func)
        if name and name.startswith("numpy."):
            return next((o for o in map(again, node.args) if o is not None), None)
        return None
    if isinstance(node, nodes.Subscript):
        return again(node.value)
    if isinstance(node, nodes.BinOp):
        return again(node.left) or again(node.right)
    if isinstance(node, nodes.UnaryOp) and node.op != "not":
        return again(node.operand)
    if is_elementwise_comparison(node):
        return again(node.left) or again(node.ops[0][1])
    if isinstance(node, nodes.Name):
        bound = bound_values(node) or _walked_iterables(values, node) or _unpacked_elements(values, node)
        origins = [again(value) for value in bound or ()]
        return origins[0] if origins and None not in origins else None
    return None


def _unpacked_elements(values: ValueOracle, name: nodes.Name) -> list[nodes.NodeNG] | None:
    """What each binding of *name* unpacks from a tuple a function of this file returns (TimesNet's
    ``period_list, period_weight = FFT_for_Period(x, k)`` with ``return period, ...``), else ``None``."""
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return None
    found: list[nodes.NodeNG] = []
    for binding in bindings:
        unpacked = unpacking(binding)
        if unpacked is None or any(isinstance(e, nodes.Starred) for e in unpacked[0].elts):
            return None
        target, statement = unpacked
        elements = values.element_values(statement.value, target.elts.index(binding), arity=len(target.elts))
        if not elements:
            return None
        found.extend(elements)
    return found or None


def _walked_iterables(values: ValueOracle, name: nodes.Name) -> list[nodes.NodeNG] | None:
    """The iterables every binding of *name* walks as a loop target (``for k in a``, ``enumerate(a)``), else ``None``.

    An item of a NumPy array made from a tensor is a NumPy scalar, which Dynamo traces as a 0-d tensor:
    UDOP's ``for idx, n in enumerate(num_prefix.cpu().numpy()): rp_bucket[idx, :n] = ...`` breaks at the
    slice (GB0033, measured), ``if n > 2`` and ``int(n)`` too.
    """
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return None
    walked = [values.loop_iterable(binding) for binding in bindings]
    return None if not walked or None in walked else walked  # type: ignore[return-value]
