"""Which index expressions are provably 0-d tensors (``x[mask.sum() - 1]``, ``emb.weight[logits.argmax()]``).

A 0-d integer tensor used as an index goes through ``__index__``: Dynamo
converts it to a Python int and breaks (GB0033, measured on torch 2.13). GM404
reports such indices, and the break-site finder counts them as breaks.

Items of a provably 1-d tensor are 0-d too: ``order[-1]`` for ``order =
torch.arange(n)``, and each step of a loop over one, as in every diffusers
sampler (``for t in self.scheduler.timesteps: ... self.alphas_cumprod[t]``,
the timesteps an ``arange(...).flip(0)``; measured, GB0033 at the read).
"""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import is_python_int, unpacking
from graphmend_lint.analysis.lookup import is_builtin_call, loops_binding, reaching_bindings
from graphmend_lint.analysis.side_effects import PROGRESS_BARS
from graphmend_lint.analysis.values import Kind, ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.analysis.walk import descendants

#: Reductions over the whole tensor that return a 0-d tensor of non-negative int64 positions.
_POSITION_REDUCTIONS = frozenset({"argmax", "argmin"})
#: Reductions over the whole tensor (no ``dim``) that return a 0-d tensor; as an index it must be an integer
#: one (a float index raises eagerly), converted like any 0-d index (GB0033, measured on torch 2.13).
_FULL_REDUCTIONS = _POSITION_REDUCTIONS | {"sum", "prod", "max", "min", "amax", "amin", "count_nonzero"}
#: Tensor methods that keep a 0-d tensor 0-d: dtype casts, device moves, detaching.
_KEEPS_ZERO_DIM = frozenset({"long", "int", "to", "detach", "cpu", "cuda", "clone"})
#: Operators that keep a 0-d tensor 0-d with a Python int (``n - 1``, ``i % size``).
_INT_OPERATORS = frozenset({"+", "-", "*", "//", "%"})
_MAX_DEPTH = 4
#: How many steps a vector's provenance may take (``self.timesteps`` -> ``(arange(n) * r).flip(0)`` is four).
_MAX_VECTOR_DEPTH = 6
#: Factories whose result is 1-d whatever their number arguments.
_VECTOR_FACTORIES = frozenset({"torch.arange", "torch.linspace", "torch.logspace", "torch.randperm"})
#: Builders from data: 1-d when the data is a flat list or tuple display (``torch.tensor([2, 0, 1])``).
_DATA_BUILDERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.IntTensor", "torch.FloatTensor"})
#: Methods that keep a tensor's rank: the casts and moves above, flips, elementwise maths, scans along a dim.
_KEEPS_RANK = _KEEPS_ZERO_DIM | frozenset(
    {"flip", "float", "double", "half", "contiguous", "cumsum", "cumprod", "sqrt", "exp", "log", "abs", "neg",
     "round", "floor", "ceil", "clamp", "sigmoid"}
)  # fmt: skip
#: Functions of the same kind, taking the tensor first.
_KEEPS_RANK_FUNCTIONS = frozenset({"torch.flip", "torch.cumsum", "torch.cumprod", "torch.sqrt", "torch.exp", "torch.log"})
#: Builtins whose iteration yields their argument's items (so do tqdm's progress bars).
_ITEM_PRESERVING_BUILTINS = ("reversed", "iter", "list", "tuple")


def _is_full_reduction(values: ValueOracle, call: nodes.Call, reductions: frozenset[str]) -> bool:
    """``t.<r>()`` / ``torch.<r>(t)`` for one of *reductions*, with no ``dim``: a 0-d tensor."""
    if call.keywords:
        return False
    func = call.func
    name = values.qualified_name(func) or ""
    module, _, function = name.rpartition(".")
    if module == "torch" and function in reductions:
        return len(call.args) == 1
    return isinstance(func, nodes.Attribute) and func.attrname in reductions and not call.args and values.is_tensor(func.expr)


def zero_dim_position(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *node* is provably a 0-d tensor position (an ``argmax()`` result, directly or through names)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Call):
        return _is_full_reduction(values, node, _POSITION_REDUCTIONS)
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(zero_dim_position(values, value, depth + 1) for value in bound)
    return False


def zero_dim_index(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *node* is provably a 0-d tensor: a reduction over a whole tensor (``mask.sum()``,
    ``t.max()``, ``torch.count_nonzero(m)``, an ``argmax()`` position), a cast or device move of one
    (``.long()``, ``.to(device)``), or arithmetic of one with Python ints or another (``n - 1``), directly or
    through names. A reduction with a ``dim`` keeps the other dims and is not one."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Call):
        func = node.func
        if isinstance(func, nodes.Attribute) and func.attrname in _KEEPS_ZERO_DIM and values.is_tensor(node):
            return zero_dim_index(values, func.expr, depth + 1)
        return _is_full_reduction(values, node, _FULL_REDUCTIONS)
    if isinstance(node, nodes.BinOp) and node.op in _INT_OPERATORS:
        operands = (node.left, node.right)
        zero_dim = [zero_dim_index(values, operand, depth + 1) for operand in operands]
        return any(zero_dim) and all(z or is_python_int(values, o) for z, o in zip(zero_dim, operands))
    if isinstance(node, nodes.Subscript):
        # ``order[-1]``; ``i[0]`` for ``i`` a row of ``nonzero(m)``; ``index[i]`` for ``i in range(k)`` over top k
        return is_python_int(values, node.slice) and _vector(values, node.value, 0) or _top_k_step(values, node)
    if isinstance(node, nodes.Name):
        loops = loops_binding(node)
        if loops:  # every binding is a loop's: a step of it, or unpacked from one
            return _unpacked_from_nonzero_rows(values, node, loops, depth + 1) or _steps_through_vector(values, node, loops)
        bound = bound_values(node)
        if bound is None:  # diffusers' ``scheduler.step(model_output, t, sample)`` in the loop over ``timesteps``
            return _every_call_passes(values, node, lambda passed: zero_dim_index(values, passed, depth + 1))
        return bool(bound) and all(zero_dim_index(values, value, depth + 1) for value in bound)
    return False


def _vector(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    """*node* is provably a 1-d tensor: an ``arange`` / ``linspace`` / ``randperm``, ``torch.tensor`` of a flat
    list, a flattened tensor, a row of a ``nonzero()`` result, or one of those sliced, flipped, cast, scanned or
    in arithmetic with Python numbers; directly, through names, or kept on ``self`` (or on an object of this
    module, ``self.scheduler.timesteps``) by every assignment."""
    if depth > _MAX_VECTOR_DEPTH:
        return False
    again = lambda child: _vector(values, child, depth + 1)  # noqa: E731
    if isinstance(node, nodes.Call):
        name = values.qualified_name(node.func) or ""
        if name in _VECTOR_FACTORIES:
            return True
        if name in _DATA_BUILDERS:
            return len(node.args) == 1 and _flat_display(node.args[0])
        if name in _KEEPS_RANK_FUNCTIONS or name == "torch.flatten":
            return bool(node.args) and (name == "torch.flatten" and len(node.args) == 1 or again(node.args[0]))
        func = node.func
        if not isinstance(func, nodes.Attribute) or not values.is_tensor(func.expr):
            return False
        if func.attrname == "flatten" and not node.args and not node.keywords:
            return True
        if func.attrname in {"view", "reshape"} and len(node.args) == 1 and _minus_one(node.args[0]):
            return True
        return func.attrname in _KEEPS_RANK and again(func.expr)
    if isinstance(node, nodes.BinOp):
        operands = (node.left, node.right)
        return any(again(o) for o in operands) and all(again(o) or _python_scalar(values, o) for o in operands)
    if isinstance(node, nodes.Subscript):
        return isinstance(node.slice, nodes.Slice) and again(node.value)
    if isinstance(node, nodes.Name):
        if _nonzero_row(values, node, 0):
            return True
        bound = bound_values(node)
        if bound is None:  # OSTrack's ``generate_score_map(fmap, gt_class, ...)`` given ``torch.arange(bs)``
            return _every_call_passes(values, node, again)
        return bool(bound) and all(again(value) for value in bound)
    if isinstance(node, nodes.Attribute):
        held = _held_values(values, node)
        return bool(held) and all(again(value) for value in held)
    return False


def _held_values(values: ValueOracle, node: nodes.Attribute) -> list[nodes.NodeNG] | None:
    """What ``self.attr`` (every assignment in the class) or ``obj.attr`` (an object this module builds) holds."""
    if isinstance(node.expr, nodes.Name) and node.expr.name == "self":
        klass = enclosing_class(node)
        return list(assigned_self_values(klass, node.attrname)) if klass is not None else None
    return values.field_values(node)


def _top_k_step(values: ValueOracle, read: nodes.Subscript) -> bool:
    """``index[i]`` in ``for i in range(k)``, ``index`` the positions of ``torch.topk(x, k)`` (``[1]``,
    ``.indices`` or the second of ``_, index = ...``) along the last dim, with the same ``k``.

    Autoformer's delay aggregation (transformers, Merlion, the original
    repository) gathers ``mean_value[:, index[i]]`` so: stepping the first
    dim as far as the last one's top ``k`` reads a 1-d result, each step a
    0-d position (GB0033 at the read, measured on torch 2.13).
    """
    step, positions = read.slice, read.value
    if not (isinstance(step, nodes.Name) and isinstance(positions, nodes.Name)):
        return False
    loops = loops_binding(step)
    counts = {_range_count(loop, step.name) for loop in loops}
    if len(counts) != 1 or None in counts:
        return False
    (count,) = counts
    sources = _top_k_sources(positions)
    return bool(sources) and all(_top_k_positions(values, source, count) for source in sources)


def _range_count(loop: nodes.For | nodes.Comprehension, name: str) -> str | None:
    """The source of ``k`` when *loop* is ``for <name> in range(k)``."""
    iterable = loop.iter
    if not (isinstance(loop.target, nodes.AssignName) and loop.target.name == name):
        return None
    if isinstance(iterable, nodes.Call) and is_builtin_call(iterable, "range") and len(iterable.args) == 1:
        return iterable.args[0].as_string()
    return None


def _top_k_sources(name: nodes.Name) -> list[tuple[nodes.NodeNG, bool]] | None:
    """Each value bound to *name*, with whether the binding takes the second item of it (``_, index = ...``)."""
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is known
        return None
    sources: list[tuple[nodes.NodeNG, bool]] = []
    for binding in bindings:
        statement = binding.parent if isinstance(binding, nodes.AssignName) else None
        unpacked = unpacking(binding)
        if isinstance(statement, nodes.Assign):
            sources.append((statement.value, False))
        elif unpacked is not None and len(unpacked[0].elts) == 2 and unpacked[0].elts[1] is binding:
            sources.append((unpacked[1].value, True))
        else:
            return None
    return sources


def _top_k_positions(values: ValueOracle, source: tuple[nodes.NodeNG, bool], count: str) -> bool:
    """*source* gives the positions of a ``topk`` along the last dim whose ``k`` is written *count*."""
    value, unpacked = source
    if not unpacked:
        if isinstance(value, nodes.Subscript) and isinstance(value.slice, nodes.Const) and value.slice.value == 1:
            value = value.value
        elif isinstance(value, nodes.Attribute) and value.attrname == "indices":
            value = value.expr
        else:
            return False
    if not isinstance(value, nodes.Call):
        return False
    func = value.func
    if (values.qualified_name(func) or "") == "torch.topk":
        arguments = value.args[1:]
    elif isinstance(func, nodes.Attribute) and func.attrname == "topk" and values.is_tensor(func.expr):
        arguments = value.args
    else:
        return False
    keywords = {keyword.arg: keyword.value for keyword in value.keywords or []}
    k = arguments[0] if arguments else keywords.get("k")
    dim = arguments[1] if len(arguments) > 1 else keywords.get("dim")
    return k is not None and k.as_string() == count and (dim is None or _minus_one(dim))


def _python_scalar(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """A Python number or a value Dynamo specialises on (``ratio = self.n // steps``): it keeps a vector 1-d."""
    return _number(node) or is_python_int(values, node) or values.kind(node) is Kind.STATIC


def _flat_display(node: nodes.NodeNG) -> bool:
    return isinstance(node, (nodes.List, nodes.Tuple)) and bool(node.elts) and all(_number(e) for e in node.elts)


def _number(node: nodes.NodeNG) -> bool:
    if isinstance(node, nodes.UnaryOp) and node.op in {"-", "+"}:
        node = node.operand
    return isinstance(node, nodes.Const) and type(node.value) in (int, float)


def _minus_one(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.UnaryOp) and node.op == "-" and isinstance(node.operand, nodes.Const) and node.operand.value == 1


def _steps_through_vector(values: ValueOracle, node: nodes.Name, loops: list[nodes.For | nodes.Comprehension]) -> bool:
    """*node* is the variable of every loop that binds it (*loops*), each stepping through a 1-d tensor (``for t
    in timesteps``, ``for i, t in enumerate(timesteps)``): each step is a 0-d tensor."""
    return bool(loops) and all(_loop_item(values, loop.target, loop.iter, node) for loop in loops)


def _loop_item(values: ValueOracle, target: nodes.NodeNG, iterable: nodes.NodeNG, node: nodes.Name) -> bool:
    if isinstance(iterable, nodes.Call) and is_builtin_call(iterable, "enumerate") and len(iterable.args) == 1:
        inner = target.elts[1] if isinstance(target, nodes.Tuple) and len(target.elts) == 2 else None
        return inner is not None and _loop_item(values, inner, iterable.args[0], node)
    if isinstance(iterable, nodes.Call) and len(iterable.args) == 1 and _passes_items_through(values, iterable):
        return _loop_item(values, target, iterable.args[0], node)
    return isinstance(target, nodes.AssignName) and target.name == node.name and _vector(values, iterable, 0)


def _passes_items_through(values: ValueOracle, call: nodes.Call) -> bool:
    """``reversed(t)``, ``iter(t)``, ``list(t)``, ``tuple(t)`` or a ``tqdm(t)`` progress bar: the same items."""
    if any(is_builtin_call(call, name) for name in _ITEM_PRESERVING_BUILTINS):
        return True
    return (values.qualified_name(call.func) or "") in PROGRESS_BARS


def _every_call_passes(values: ValueOracle, node: nodes.Name, holds: Callable[[nodes.NodeNG], bool]) -> bool:
    """*node* is a parameter, not rebound before this read, and every call of its function in this module
    passes a value for it that *holds* (a 0-d tensor, a 1-d one)."""
    function = node.scope()
    if not isinstance(function, (nodes.FunctionDef, nodes.Lambda)) or node.name not in {a.name for a in function.args.args or []}:
        return False
    try:
        bindings = reaching_bindings(node)
    except Exception:  # astroid lookups can fail on odd code; then nothing is known
        return False
    if not bindings or not all(isinstance(b.parent, nodes.Arguments) for b in bindings):
        return False  # rebound in the body before this read
    calls = values.calls_of(function)
    passed = values.call_site_arguments(function, node.name)
    return bool(calls) and len(passed) == len(calls) and all(holds(argument) for argument in passed)


def zero_dim_element(values: ValueOracle, index: nodes.NodeNG) -> nodes.NodeNG | None:
    """The 0-d tensor in the index of a subscript: the index itself, or one of a multi-axis index
    (vissl's ``Q[i[0], i[1]] = 0`` over the rows of ``torch.nonzero(mask)``)."""
    for part in index.elts if isinstance(index, nodes.Tuple) else [index]:
        if zero_dim_index(values, part):
            return part
    return None


def _nonzero_row(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    """*node* is a row of a ``nonzero()`` result (``for i in ind`` with ``ind = torch.nonzero(mask)``): a
    1-d tensor of positions."""
    if not isinstance(node, nodes.Name) or depth > _MAX_DEPTH:
        return False
    loops = loops_binding(node)
    return bool(loops) and all(
        isinstance(loop.target, nodes.AssignName) and _nonzero_matrix(values, loop.iter, depth + 1) for loop in loops
    )


def _unpacked_from_nonzero_rows(values: ValueOracle, node: nodes.Name, loops: list[nodes.For | nodes.Comprehension], depth: int) -> bool:
    """*node* is unpacked from a row of positions (:func:`_row_of_positions`) in every loop that binds it (*loops*)."""
    return bool(loops) and all(_row_of_positions(values, loop.target, loop.iter, node, depth) for loop in loops)


def _row_of_positions(
    values: ValueOracle, target: nodes.NodeNG, iterable: nodes.NodeNG, node: nodes.Name, depth: int
) -> bool:
    """*node* is an item of *target*, a tuple each step fills with 0-d positions: ``for r, c in
    torch.nonzero(mask)``, ``for h, i, j in zip(*layout.nonzero(as_tuple=True))`` (xformers' block-sparse
    ``_to_dense``), either under ``enumerate``."""
    if isinstance(iterable, nodes.Call) and is_builtin_call(iterable, "enumerate") and len(iterable.args) == 1:
        inner = target.elts[1] if isinstance(target, nodes.Tuple) and len(target.elts) == 2 else None
        return inner is not None and _row_of_positions(values, inner, iterable.args[0], node, depth)
    if not (isinstance(target, nodes.Tuple) and any(item.name == node.name for item in descendants(target, nodes.AssignName))):
        return False
    return _nonzero_matrix(values, iterable, depth) or _zipped_positions(values, iterable)


def _zipped_positions(values: ValueOracle, call: nodes.NodeNG) -> bool:
    """``zip(*torch.nonzero(m, as_tuple=True))``, ``zip(*m.nonzero(as_tuple=True))`` or ``zip(*torch.where(m))``:
    one tuple of positions per hit, each a 0-d tensor."""
    if not (isinstance(call, nodes.Call) and is_builtin_call(call, "zip") and len(call.args) == 1):
        return False
    starred = call.args[0]
    if not (isinstance(starred, nodes.Starred) and isinstance(starred.value, nodes.Call)):
        return False
    positions = starred.value
    name = values.qualified_name(positions.func) or ""
    if name == "torch.where":
        return len(positions.args) == 1 and not positions.keywords
    as_tuple = [k.value for k in positions.keywords or [] if k.arg == "as_tuple"]
    if not (len(as_tuple) == 1 and isinstance(as_tuple[0], nodes.Const) and as_tuple[0].value is True):
        return False
    return _nonzero_call(values, positions, name)


def _nonzero_call(values: ValueOracle, call: nodes.Call, name: str) -> bool:
    """``torch.nonzero(m)`` or ``m.nonzero()`` on a tensor (*name* is the call's qualified name)."""
    if name == "torch.nonzero":
        return len(call.args) == 1
    func = call.func
    return isinstance(func, nodes.Attribute) and func.attrname == "nonzero" and not call.args and values.is_tensor(func.expr)


def _nonzero_matrix(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    """``torch.nonzero(m)`` / ``m.nonzero()`` (not ``as_tuple``) or ``torch.argwhere(m)``: one row of positions
    per hit; or ``torch.cartesian_prod(a, b, ...)``, one row per combination (open-unmix's ``_covariance``
    indexes with ``index[0]`` for ``index`` in one: GB0033, measured). Directly or through names."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Call):
        if any(keyword.arg == "as_tuple" for keyword in node.keywords or []):
            return False
        name = values.qualified_name(node.func) or ""
        if name == "torch.argwhere":
            return len(node.args) == 1
        if name == "torch.cartesian_prod":
            return len(node.args) >= 2 and not any(isinstance(arg, nodes.Starred) for arg in node.args)
        return _nonzero_call(values, node, name)
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(_nonzero_matrix(values, value, depth + 1) for value in bound)
    return False
