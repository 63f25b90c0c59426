"""Tensors passed where torch wants a size: ``torch.zeros((b, n, d))`` with ``n = lengths.max()``.

A size must be a Python int (or a symbolic one from a shape). A tensor there
is converted with an implicit ``int(t)``: Dynamo logs a data-dependent
operator (GB0033) and the host waits for the device, exactly as at an
explicit ``.item()`` (measured, torch 2.13: ``torch.zeros/ones/empty/rand/
randn/full/arange/randperm``, ``torch.randint``'s bounds and size (``low``, ``high``: Python ints
too), ``t.new_zeros/new_ones/new_empty/new_full``,
``t.view/reshape/expand/repeat/tile``, ``torch.reshape``'s shape, sizes given positionally, as a tuple or as
``size=``; ``F.interpolate``'s ``size`` and ``F.pad``'s ``pad``; and the integer arguments ``narrow``'s
start and length, ``topk``'s k, ``roll``'s shifts, ``chunk``'s and ``split``'s counts,
``F.one_hot``'s ``num_classes`` and ``unflatten``'s sizes). ``torch.full((2,), t)`` is not a size: the fill value stays in the
graph. Nor does a tensor the frame receives as an argument break there
(``def f(x, n): return torch.zeros(2, n)`` with a 0-d ``n``: measured, Dynamo
specialises on it), so a bare parameter is not reported unless every call of
its function in this file is traced code passing a value computed there (a
value computed
before a graph break is such an argument of the resumed frame: the rules ask
``BreakFinder.resumed_input`` in ``rules/break_sites.py``). Nor does a 0-d
tensor built from Python numbers and shapes alone (``torch.tensor(h.size(1))
// 2``, ``torch.div(n, 2, rounding_mode="floor")``): Dynamo knows its value
(measured, every size operator above; see :mod:`~graphmend_lint.analysis.known_tensors`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.astroid_tree import def_position
from graphmend_lint.analysis.host_values import reads_of, single_target
from graphmend_lint.analysis.known_tensors import ELEMENTWISE_OPERATORS, known_value_tensor, python_value
from graphmend_lint.analysis.lookup import is_builtin_call, reaching_bindings
from graphmend_lint.analysis.values import ValueOracle

#: torch functions whose positional arguments (or one tuple of them) are all sizes.
_SIZE_FUNCTIONS = frozenset({"zeros", "ones", "empty", "rand", "randn", "arange", "randint", "randperm"})
#: Tensor methods whose positional arguments (or one tuple of them) are all sizes.
_SIZE_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "view", "reshape", "expand", "repeat", "tile"})
#: The torch function whose leading arguments are integer bounds (``low``, ``high``) before its size.
_BOUNDED = "randint"
#: ``torch.full`` and ``t.new_full``: the first argument is the size, the second a value.
_SIZE_FIRST = frozenset({"full", "new_full"})
#: Functions with size (or integer) arguments among others: name -> ((position, keyword, traced), ...), where
#: *traced* says whether ``capture_scalar_outputs`` traces a tensor there (measured, torch 2.13: ``reshape``'s
#: shape, ``narrow``'s length and ``topk``'s k trace; ``roll``'s shifts, ``narrow``'s start, ``chunk``'s and
#: ``split``'s counts, ``one_hot``'s classes and ``unflatten``'s sizes still break or fail).
_SIZE_ARGUMENT: dict[str, tuple[tuple[int, str, bool], ...]] = {
    "torch.nn.functional.interpolate": ((1, "size", True),),
    "torch.nn.functional.pad": ((1, "pad", True),),
    "torch.nn.functional.one_hot": ((1, "num_classes", False),),
    "torch.reshape": ((1, "shape", True),),
    "torch.narrow": ((2, "start", False), (3, "length", True)),
    "torch.topk": ((1, "k", True),),
    "torch.roll": ((1, "shifts", False),),
    # PointPillars' anchors: ``torch.linspace(lo, hi, feature_map_size[1] + 1)`` with a tensor of the map size
    "torch.linspace": ((2, "steps", False),),
    "torch.logspace": ((2, "steps", False),),
}
#: Python-number parameters (``float`` in the schema) a tensor is read back for: GB0033 at the call, and
#: still a break (or a Dynamo failure) under ``capture_scalar_outputs`` (measured, torch 2.13, each one
#: below; ``clamp``'s bounds, ``pow``, ``lerp``, ``where``, ``masked_fill``, ``fill_`` and ``quantile`` take a
#: tensor and trace). MACE's conditional Huber loss passes ``delta=factors[0]`` of a factor tensor.
_NUMBER_ARGUMENT: dict[str, tuple[tuple[int, str, bool], ...]] = {
    "torch.nn.functional.huber_loss": ((3, "delta", False),),
    "torch.nn.functional.smooth_l1_loss": ((5, "beta", False),),
    "torch.nn.functional.leaky_relu": ((1, "negative_slope", False),),
    "torch.nn.functional.dropout": ((1, "p", False),),
    "torch.nn.functional.elu": ((1, "alpha", False),),
    "torch.nn.functional.celu": ((1, "alpha", False),),
    "torch.nn.functional.hardtanh": ((1, "min_val", False), (2, "max_val", False)),
    "torch.nn.functional.normalize": ((1, "p", False), (3, "eps", False)),
    "torch.nn.functional.cross_entropy": ((7, "label_smoothing", False),),
    "torch.nn.functional.margin_ranking_loss": ((3, "margin", False),),
    "torch.nn.functional.triplet_margin_loss": ((3, "margin", False), (5, "eps", False)),
    "torch.nn.functional.threshold": ((1, "threshold", False), (2, "value", False)),
    "torch.nn.functional.cosine_similarity": ((3, "eps", False),),
    "torch.cosine_similarity": ((3, "eps", False),),
    "torch.nan_to_num": ((1, "nan", False), (2, "posinf", False), (3, "neginf", False)),
    "torch.nn.utils.clip_grad_norm_": ((1, "max_norm", False),),
}
NUMBER_OPERATORS = frozenset(
    f"F.{name.rsplit('.', 1)[1]}" if name.startswith("torch.nn.functional.") else name for name in _NUMBER_ARGUMENT
)
#: Tensor methods with size (or integer) arguments among others, as in :data:`_SIZE_ARGUMENT`.
_METHOD_SIZE_ARGUMENT: dict[str, tuple[tuple[int, str, bool], ...]] = {
    "narrow": ((1, "start", False), (2, "length", True)),
    "topk": ((0, "k", True),),
    "roll": ((0, "shifts", False),),
    "chunk": ((0, "chunks", False),),
    "split": ((0, "split_size", False),),
    "unflatten": ((1, "sizes", False),),
}
#: How many calls a parameter is followed back through (``forward(n)`` -> ``helper(n)`` -> ``inner(n)``).
_MAX_FORWARDING = 3
#: Keywords that name sizes (``arange(end=t)``) or integer bounds (``randint(high=t)``); ``dtype=``/``device=`` never do.
_SIZE_KEYWORDS = frozenset({"size", "start", "end", "step", "low", "high"})


#: Integer arguments that still log a break under ``capture_scalar_outputs``, at a guard on the unbacked count
#: (measured, torch 2.13): ``chunk``'s and ``split``'s counts, ``one_hot``'s classes, ``linspace``'s and
#: ``logspace``'s steps. With the other untraced
#: integer arguments (``roll``'s shifts, ``narrow``'s start, ``randint``'s bounds, ``unflatten``'s sizes) Dynamo
#: fails instead (``PendingUnbackedSymbolNotFound``, a fake-tensor error), with no logged break.
_CAPTURED_GUARD_BREAKS = frozenset({".chunk", ".split", "F.one_hot", "torch.linspace", "torch.logspace"})


@dataclass(frozen=True)
class TensorSize:
    """A tensor given as a size of the call *call*."""

    call: nodes.Call
    tensor: nodes.NodeNG
    operator: str  # how messages name the callee: ``torch.zeros``, ``.view``
    #: An integer argument ``capture_scalar_outputs`` does not trace, as it does sizes (measured, torch 2.13):
    #: ``torch.randint``'s ``low``/``high`` and ``roll``'s shifts (Dynamo fails with PendingUnbackedSymbolNotFound),
    #: ``narrow``'s start, ``chunk``'s / ``split``'s counts, ``one_hot``'s classes, ``unflatten``'s sizes.
    bound: bool = False
    #: The tensor sits in a list the function filled in (:func:`_filled_list_items`), not in the call itself.
    #: ``capture_scalar_outputs`` does not help there: Dynamo then fails to build the size from the list
    #: (``torch.Size() takes an iterable of 'int'``, an internal error, measured on torch 2.13).
    filled_list: bool = False

    @property
    def breaks_when_captured(self) -> bool:
        """Dynamo still logs a break here with ``capture_scalar_outputs`` on (:data:`_CAPTURED_GUARD_BREAKS`,
        and the Python-number parameters of :data:`_NUMBER_ARGUMENT`)."""
        return self.bound and (self.operator in _CAPTURED_GUARD_BREAKS or self.operator in NUMBER_OPERATORS)

    @property
    def role(self) -> str:
        """What the call wants the tensor as, for messages."""
        if self.bound and self.operator in NUMBER_OPERATORS:
            return "a Python number"
        return "an integer argument" if self.bound else "a size"


def tensor_size(values: ValueOracle, node: nodes.NodeNG) -> TensorSize | None:
    """The first size argument of *node* that is a tensor, when *node* is a call that takes sizes."""
    if not isinstance(node, nodes.Call):
        return None
    found = _size_operator(values, node)
    if found is None:
        return None
    operator, sizes, bounds = found
    tensor, bound = next(
        (
            (size, is_bound)
            for size, is_bound in [*((size, False) for size in sizes), *((b, True) for b in bounds)]
            if values.is_tensor(size)
            and not frame_input(values, size)
            and not module_state(size)
            and not known_value_tensor(values, size)
        ),
        (None, False),
    )
    if tensor is None or _breaks_first(values, node):
        return None
    return TensorSize(node, tensor, operator, bound, filled_list=not node.parent_of(tensor))


def size_arguments(values: ValueOracle, call: nodes.Call) -> list[nodes.NodeNG]:
    """The size arguments and integer bounds of *call* when it is a torch function or tensor method that takes
    sizes (size tuples opened into their elements); empty otherwise."""
    found = _size_operator(values, call)
    return [] if found is None else [*found[1], *found[2]]


def size_use(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> nodes.Call | None:
    """The torch call that takes *node*'s value as a size or an integer bound, else ``None``.

    Followed: a size tuple or list (``torch.reshape(x, [b, n, -1])``), a
    keyword (``size=``), arithmetic with Python numbers (``n // 2``) and the
    one variable *node* is assigned to, read after it in the same scope
    (``n = np.prod(dims)`` then ``x.view(-1, n)``). The call is where Dynamo
    converts the value, so where it logs the break.
    """
    if depth > _MAX_FORWARDING:
        return None
    child, parent = node, node.parent
    while isinstance(parent, nodes.BinOp) and parent.op in ELEMENTWISE_OPERATORS:
        other = parent.left if parent.right is child else parent.right
        if not python_value(values, other):
            return None
        child, parent = parent, parent.parent
    element = child
    if isinstance(parent, (nodes.Tuple, nodes.List)):
        parent = parent.parent
    if isinstance(parent, nodes.Keyword):
        parent = parent.parent
    if isinstance(parent, nodes.Call):
        found = _size_operator(values, parent)
        if found is None:
            return None
        _, sizes, bounds = found
        return parent if any(size is element for size in [*sizes, *bounds]) else None
    target = single_target(child)
    for read in (reads_of(target) if target is not None else None) or ():
        use = size_use(values, read, depth + 1)
        if use is not None:
            return use
    return None


def _breaks_first(values: ValueOracle, call: nodes.Call) -> bool:
    """An argument of *call* uses a tensor as a size itself: that inner call breaks first, and only it is reported.

    ``F.pad(F.interpolate(x, size=(h, w)), (0, W - w))`` in a loop logs the
    interpolate only: after it Dynamo runs the frame eagerly (measured, ViLT).
    """
    arguments = [*call.args, *(kw.value for kw in call.keywords or [])]
    return any(
        tensor_size(values, inner) is not None
        for argument in arguments
        for inner in argument.nodes_of_class(nodes.Call)
    )


def _size_operator(
    values: ValueOracle, call: nodes.Call
) -> tuple[str, list[nodes.NodeNG], list[nodes.NodeNG]] | None:
    """``(label, size arguments, integer bounds)`` of a torch function or tensor method that takes sizes."""
    name = values.qualified_name(call.func) or ""
    places = _SIZE_ARGUMENT.get(name, ()) + _NUMBER_ARGUMENT.get(name, ())
    if places:
        label = f"F.{name.rsplit('.', 1)[1]}" if name.startswith("torch.nn.functional.") else name
        return label, *_arguments_at(call, places)
    method = call.func.attrname if isinstance(call.func, nodes.Attribute) else None
    if method in _METHOD_SIZE_ARGUMENT and values.is_tensor(call.func.expr):
        return f".{method}", *_arguments_at(call, _METHOD_SIZE_ARGUMENT[method])
    if name.startswith("torch.") and name.count(".") == 1:
        op, label, takes_sizes = name.split(".")[1], name, _SIZE_FUNCTIONS
    elif isinstance(call.func, nodes.Attribute) and values.is_tensor(call.func.expr):
        op, label, takes_sizes = call.func.attrname, f".{call.func.attrname}", _SIZE_METHODS
    else:
        return None
    positional = [arg for arg in call.args if not isinstance(arg, nodes.Starred)]
    keywords = {kw.arg: kw.value for kw in call.keywords or [] if kw.arg in _SIZE_KEYWORDS}
    bounds: list[nodes.NodeNG] = []
    if op == _BOUNDED and takes_sizes is _SIZE_FUNCTIONS:
        # randint([low,] high, size): the size is the last positional argument unless given as ``size=``
        bounds = positional if "size" in keywords else positional[:-1]
        sizes = [] if "size" in keywords else positional[-1:]
        bounds += [keywords.pop(bound) for bound in ("low", "high") if bound in keywords]
    elif op in _SIZE_FIRST:
        sizes = positional[:1]
    elif op in takes_sizes:
        sizes = positional
    else:
        return None
    return label, list(_elements([*sizes, *keywords.values()])), bounds


def _arguments_at(
    call: nodes.Call, places: tuple[tuple[int, str, bool], ...]
) -> tuple[list[nodes.NodeNG], list[nodes.NodeNG]]:
    """The arguments of *call* at *places* (position or keyword), size tuples opened into their elements:
    ``(sizes capture_scalar_outputs traces, integer arguments it does not)``."""
    keywords = {kw.arg: kw.value for kw in call.keywords or []}
    parted: dict[bool, list[nodes.NodeNG]] = {True: [], False: []}
    for index, keyword, traced in places:
        if keyword in keywords:
            parted[traced].append(keywords[keyword])
        elif len(call.args) > index and not any(isinstance(arg, nodes.Starred) for arg in call.args[: index + 1]):
            parted[traced].append(call.args[index])
    return list(_elements(parted[True])), list(_elements(parted[False]))


def module_state(node: nodes.NodeNG) -> bool:
    """Whether *node* is ``self.<attr>`` that its function neither assigns nor updates in place.

    A buffer or tensor attribute of the module is read by the frame like an
    argument, and Dynamo specialises a size on it like one (measured, torch
    2.13, an integer 0-d buffer: no break at ``torch.arange(self.n)``,
    ``x.view(self.n, -1)``, ``x.new_zeros(self.count)``,
    ``torch.randint(0, self.n, (2,))``, ``x.narrow(0, 0, self.n)``,
    ``F.pad(x, (0, self.n))``). Updated first (``self.n += 1``), it is
    computed in the graph and breaks as a size (GB0033, measured).
    """
    if not (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
        return False
    for other in node.frame().nodes_of_class((nodes.AssignAttr, nodes.Attribute)):
        same = other.attrname == node.attrname and isinstance(other.expr, nodes.Name) and other.expr.name == "self"
        if same and isinstance(other, nodes.AssignAttr):
            return False
        parent = other.parent
        if (
            isinstance(parent, nodes.Attribute)
            and parent.attrname.endswith("_")
            and same
            and isinstance(parent.parent, nodes.Call)
        ):
            return False  # self.n.add_(1)
    return True


def frame_input(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """Whether *node* is a parameter that may hold an argument of the compiled frame itself.

    A name every reaching binding of which is a parameter, unless every call of its function in this
    file sits in traced code and passes a value computed there (not such a parameter in turn): then the
    function is inlined and the value is an intermediate of the frame, which breaks as a size like any
    other (SpeechT5's ``_make_guided_attention_mask(ilen, olen, ...)`` over ``zip(input_lengths,
    output_lengths)``, GB0033 at its ``torch.arange(input_length)``, measured). No call in this file, a
    call from code that is not traced, or a bare parameter passed on all count as a frame input.
    """
    if not isinstance(node, nodes.Name):
        return False
    try:
        bindings = reaching_bindings(node)
    except Exception:  # astroid lookups can fail on odd code; then it is no provable parameter
        return False
    if not bindings or not all(isinstance(b.parent, nodes.Arguments) for b in bindings):
        return False
    if depth >= _MAX_FORWARDING:
        return True
    for binding in bindings:
        passed = values.call_site_arguments(binding.parent.parent, binding.name)
        if not passed:
            return True
        for argument in passed:
            caller = argument.frame()
            traced = isinstance(caller, nodes.FunctionDef) and values.scope.function_at(*def_position(caller)) is not None
            if not traced or frame_input(values, argument, depth + 1):
                return True
    return False


def _elements(sizes: list[nodes.NodeNG]) -> Iterator[nodes.NodeNG]:
    """Each size, with ``(b, n, d)`` / ``[b, n]`` opened into its elements, and a comprehension's element
    standing for all of them (Deformable-DETR's ``value.split([H_ * W_ for H_, W_ in spatial_shapes])``).
    A name of a list the function builds and fills in stands for its items too (:func:`_filled_list_items`)."""
    for size in sizes:
        if isinstance(size, (nodes.Tuple, nodes.List)):
            yield from (element for element in size.elts if not isinstance(element, nodes.Starred))
        elif isinstance(size, (nodes.ListComp, nodes.GeneratorExp)):
            yield size.elt
        else:
            yield size
            if isinstance(size, nodes.Name):
                yield from _filled_list_items(size)


def _filled_list_items(name: nodes.Name) -> list[nodes.NodeNG]:
    """The items the function puts into the list *name* holds before *name* is read.

    torch_scatter's ``scatter_sum`` (and the GNN code built on it) sizes its
    output this way: ``size = list(src.size())``, then ``size[dim] =
    dim_size``, then ``torch.zeros(size)``. A tensor stored there is converted
    at the call like one written in place (GB0033 at the ``torch.zeros`` line,
    measured, torch 2.13; also ``x.new_zeros(shape)`` after ``shape[-1] =
    lengths.sum()``). The list must be bound once, to ``list(...)`` or a list
    display; its items are the display's, each ``name[i] = value`` and each
    ``name.append(value)`` of the same scope between that binding and the read.
    """
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is known
        return []
    if len(bindings) != 1 or not isinstance(bindings[0], nodes.AssignName):
        return []
    binding = bindings[0]
    built = binding.parent.value if isinstance(binding.parent, nodes.Assign) else None
    if not (isinstance(built, nodes.List) or (isinstance(built, nodes.Call) and is_builtin_call(built, "list"))):
        return []
    items = [element for element in built.elts if not isinstance(element, nodes.Starred)] if isinstance(built, nodes.List) else []
    scope = binding.scope()
    for read in scope.nodes_of_class(nodes.Name):
        if read.name != name.name or read.scope() is not scope or not binding.lineno < read.lineno < name.lineno:
            continue
        parent = read.parent
        if isinstance(parent, nodes.Subscript) and parent.ctx is Context.Store and isinstance(parent.parent, nodes.Assign):
            items.append(parent.parent.value)  # size[dim] = value
        elif (
            isinstance(parent, nodes.Attribute)
            and parent.attrname == "append"
            and isinstance(parent.parent, nodes.Call)
            and len(parent.parent.args) == 1
        ):
            items.append(parent.parent.args[0])  # size.append(value)
    return items
