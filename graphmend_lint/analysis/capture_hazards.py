"""Would turning a capture switch on remove a file's breaks, or only move them?

With ``capture_scalar_outputs`` Dynamo traces ``t.item()`` as an unbacked
symbol; with ``capture_dynamic_output_shape_ops`` it traces ``nonzero``,
boolean-mask reads and ``repeat_interleave`` with an unbacked size
(:mod:`graphmend_lint.analysis.captured_values`). Tensor work on those values
stays in the graph. Whatever needs the *concrete* value still breaks, now at
that later line:

* a branch on it (GB0170, or a data-dependent guard, GB7000);
* iterating over it (``for e in expert_hit``, ``for c in torch.unique(idxs)``),
  unless the leading dimension is static: the rows of ``idx.t()`` for
  ``idx = x.nonzero()`` are one per dimension of ``x`` (SuperPoint's
  ``scores[tuple(keypoints.t())]``: measured, no break);
* handing it to Python or NumPy (``range``, ``len``, ``round``,
  ``math.log``, ``np.random.choice``); a captured *number* also to any
  function that may branch on it (a helper, a submodule: longformer passes
  its captured ``is_global_attn`` to every layer, which branches on it);
* a tensor of data-dependent size handed to a function of the file (a
  helper, a submodule's ``forward``, up to three calls deep) that does one
  of these with the parameter it binds, or a name unpacked from a tuple such
  a function returns (SuperPoint: ``keypoints, scores =
  remove_keypoints_from_borders(...)`` returns ``keypoints[mask], ...``, and
  ``top_k_keypoints(keypoints, ...)`` branches on ``len(keypoints)``: the
  break moves there, and fullgraph fails on the guard ``u1 <= 30``), or a
  name bound to what such a function returns, through calls it returns
  (pytorch-metric-learning: ``all(len(x) <= 1 for x in indices_tuple)``). A
  helper that only does tensor math on it, and ``.shape[k]`` of a dimension
  that stays static (``k > 0``; ``-1`` of ``w[mask, :]``, vits' bin count),
  ``.dim()``, ``.dtype`` and ``.device`` of it, and ``isinstance`` on it
  (bart's ``torch_compilable_check(cond, ...)``, flash attention's
  ``isinstance(out, tuple)``) (measured: a helper testing
  ``p.dim() == 2 and p.dtype == torch.float32 and p.shape[-1] == 5`` on
  ``w[x > 0, :]`` passes fullgraph) need nothing concrete (higgs-audio's layer norms on
  ``hidden_states[mask]``, vits' spline on masked inputs: no break);
* batch norm on it: ``nn.BatchNorm1d/2d/3d``, ``nn.SyncBatchNorm`` (a
  submodule or local the file builds as one) and ``F.batch_norm``, in
  training mode (a guard ``Eq(u0, 1)``: the batch-size check) and in eval
  mode too (``Eq(8*u0, 0)``, an empty-input check); ``nn.LayerNorm``,
  ``F.layer_norm`` and ``nn.Linear`` on it trace without a break;
* an ``assert`` on it;
* a slice bound computed from it (``img[..., i:i + th]``): Dynamo 2.13 may
  fail the whole compile with ``PendingUnbackedSymbolNotFound`` there;
* two tensors of data-dependent size from different captures meeting in one
  operation (``F.l1_loss(a.masked_select(m), b.masked_select(m))``): their
  sizes are two symbols, and the guard that they are equal fails, here inside
  torch's own loss module (FastSpeech2's loss, measured); so do those of one
  capture made in a loop or comprehension (SeamlessM4T's per-sample
  ``repeat_interleave``, padded together by ``pad_sequence``: a guard
  ``u1 > u0``);
* returning a captured *number*: the caller's uses (a slice, a branch) are
  out of sight. (A tensor of data-dependent size may be returned: what the
  caller does with its size is a tensor op or a branch of its own.)

Measured with the switch on (torch 2.13, plain compile's graph_breaks log and
``fullgraph=True``): a helper branching on ``len()`` of a masked read passed to
it, directly or through a helper's returned tuple, logs a break at the call and
fails fullgraph; so does batch norm (each class above, both modes, and
``F.batch_norm`` with ``training`` either way) on a masked read (issue
pytorch#194166's ``self.norm(h[mask_bool])``); a helper computing ``p * 2``,
``nn.LayerNorm`` and ``nn.Linear`` on one log nothing and pass fullgraph.

Found on the dev corpus with both switches written at the top of each
program (``benchmarks/capture_settings_trial.py``, torch 2.13): 77 programs,
157 logged sites before, 82 after; every program whose sites moved rather
than went had one of these uses. The switch is a fix only where the file has
none of them, which is what :func:`capture_moves_breaks` asks; with that
check no dev program's break moves, in its file or into torch's
(``docs/benchmarks.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from astroid import nodes

from graphmend_lint.analysis.captured_values import OriginMemo, captured_origin
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import (
    bound_parameter,
    builtin_name,
    condition_operands,
    is_torch_op,
    unpacking,
)
from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.module_attributes import constructor_of

if TYPE_CHECKING:
    from graphmend_lint.context import FileAnalysis

Origin = Callable[[nodes.NodeNG], bool]
#: Modules whose functions want Python numbers: a symbol reaching them needs its concrete value.
_PYTHON_MODULES = frozenset({"math", "numpy", "random", "itertools", "functools", "operator", "builtins"})
#: Builtins that look only at their argument's type: a tensor of data-dependent size is still a tensor.
_TYPE_CHECKS = frozenset({"isinstance", "type", "callable", "id", "hasattr"})
#: Builtins that only iterate over their argument's leading dimension.
_ITERATING_BUILTINS = frozenset({"tuple", "list", "len"})
_INDEX_MATRIX_FUNCTIONS = frozenset({"nonzero", "argwhere"})
#: ``torch.nn`` batch-norm layers: in training and in eval mode they guard on their input's size.
_BATCH_NORM_LAYERS = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"})
_BATCH_NORM_FUNCTIONS = frozenset({"torch.nn.functional.batch_norm"})
#: Calls into functions of the file a tensor of data-dependent size is followed through.
_MAX_CALL_DEPTH = 3


def _python_call(analysis: FileAnalysis, call: nodes.Call) -> bool:
    """A builtin, or a function of the standard library's number modules or NumPy (not a type check)."""
    builtin = builtin_name(call)
    if builtin in _TYPE_CHECKS:
        return False
    name = analysis.values.qualified_name(call.func) or ""
    return builtin is not None or name.split(".")[0] in _PYTHON_MODULES


def _type_check(node: nodes.NodeNG) -> bool:
    """``isinstance(t, ...)`` and the like: a tensor of data-dependent size is still a tensor."""
    return isinstance(node, nodes.Call) and builtin_name(node) in _TYPE_CHECKS


def _static_rows(node: nodes.NodeNG) -> bool:
    """``idx.t()`` / ``idx.T`` of an index matrix: its rows are the input's dimensions, a static count.

    ``nonzero`` and ``argwhere`` return one row per hit and one column per
    dimension of their input; transposed, the data-dependent size is the
    second one, so iterating over the rows needs no concrete value.
    """
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname == "t" and not node.args:
        matrix = node.func.expr
    elif isinstance(node, nodes.Attribute) and node.attrname == "T":
        matrix = node.expr
    else:
        return False
    values = bound_values(matrix) if isinstance(matrix, nodes.Name) else [matrix]
    return bool(values) and all(map(_index_matrix, values))


def _index_matrix(node: nodes.NodeNG) -> bool:
    """``torch.nonzero(x)``, ``x.nonzero()`` or ``torch.argwhere(x)`` without ``as_tuple``."""
    if not isinstance(node, nodes.Call) or any(keyword.arg == "as_tuple" for keyword in node.keywords or ()):
        return False
    func = node.func
    return isinstance(func, nodes.Attribute) and func.attrname in _INDEX_MATRIX_FUNCTIONS


def concrete_uses(analysis: FileAnalysis, numbers: bool) -> Iterator[nodes.NodeNG]:
    """Every expression in traced code whose concrete value Python needs (see the module docstring).

    *numbers*: the captured values are numbers, so returns and arguments of
    any call but a torch one count too.
    """
    for node, _ in analysis.traced_nodes(nodes.If, nodes.While, nodes.IfExp):
        yield from (operand for operand in condition_operands(node.test) if numbers or not _type_check(operand))
    for loop, _ in analysis.traced_nodes(nodes.For, nodes.Comprehension):
        if not _static_rows(loop.iter):
            yield loop.iter
    for check, _ in analysis.traced_nodes(nodes.Assert):
        yield check.test
    for returned, _ in analysis.traced_nodes(nodes.Return) if numbers else ():
        if returned.value is not None:
            yield returned.value
    for bounds, _ in analysis.traced_nodes(nodes.Slice):
        yield from (bound for bound in (bounds.lower, bounds.upper, bounds.step) if bound is not None)
    for call, _ in analysis.traced_nodes(nodes.Call):
        # torch's functional and utility layers take Python numbers as options (batch_norm's momentum)
        torch_op = is_torch_op(analysis.values, call, excluded=("torch.nn.functional.", "torch.nn.utils."))
        if builtin_name(call) in _ITERATING_BUILTINS and not numbers and all(map(_static_rows, call.args)):
            continue
        if (numbers and not torch_op) or _python_call(analysis, call) or (not numbers and _batch_norm(analysis, call)):
            yield from call.args
            yield from (keyword.value for keyword in call.keywords or ())


def _batch_norm(analysis: FileAnalysis, call: nodes.Call) -> bool:
    """``F.batch_norm(x, ...)``, or a call of a submodule or local built as a ``torch.nn`` batch-norm layer."""
    values = analysis.values
    if values.qualified_name(call.func) in _BATCH_NORM_FUNCTIONS:
        return True
    module, _, layer = (constructor_of(values, call.func) or "").rpartition(".")
    return module.startswith("torch.nn") and layer in _BATCH_NORM_LAYERS


def _mixed_sizes(analysis: FileAnalysis, is_captured: Origin) -> nodes.NodeNG | None:
    """An operation that takes tensors computed from two different data-dependent results, or a repeated capture."""
    memo: OriginMemo = {}
    for node, _ in analysis.traced_nodes(nodes.BinOp, nodes.Call, nodes.Subscript):
        if is_captured(node) and _repeated(node):
            return node
        if isinstance(node, nodes.Subscript):
            continue
        if isinstance(node, nodes.BinOp):
            operands = [node.left, node.right]
        else:
            operands = [*node.args, *(keyword.value for keyword in node.keywords or ())]
        origins = {
            _size_key(found) for operand in operands if (found := captured_origin(operand, is_captured, memo)) is not None
        }
        if len(origins) > 1:
            return node
    return None


def _size_key(origin: nodes.NodeNG) -> object:
    """What decides a captured result's size symbol: reads through one mask share it, anything else is its own.

    Dynamo computes ``nonzero`` of a mask once per mask tensor and reuses the
    size for every ``x[mask]`` (vits' spline on several tensors read through
    ``inside_interval_mask``: no guard, measured); ``a.masked_select(m)`` and
    ``b.masked_select(m)`` get two symbols (FastSpeech2's loss).
    """
    if isinstance(origin, nodes.Subscript):
        index = origin.slice
        if isinstance(index, nodes.Tuple):  # x[mask, :] reads through the same mask as x[mask]
            kept = [part for part in index.elts if not _whole_slice(part)]
            index = kept[0] if len(kept) == 1 else index
        return (origin.frame(), index.as_string())
    return id(origin)


def _whole_slice(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Slice) and node.lower is None and node.upper is None and node.step is None


def _repeated(node: nodes.NodeNG) -> bool:
    """*node* runs once per iteration of a loop or comprehension of its function (a ``for``'s iterable runs once)."""
    if isinstance(node.scope(), nodes.ComprehensionScope):
        return True
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        if isinstance(parent, nodes.While) or (isinstance(parent, nodes.For) and child is not parent.iter):
            return True
        child, parent = parent, parent.parent
    return False


_UNBOUNDED = 1 << 30
#: Tensor attributes that do not depend on its size.
_STATIC_ATTRIBUTES = frozenset({"ndim", "dtype", "device", "is_cuda", "layout"})


def _dimension_read(name: nodes.Name) -> int | None:
    """*k* when *name* is read as ``name.shape[k]`` or ``name.size(k)`` with *k* a literal int."""
    parent = name.parent
    if not (isinstance(parent, nodes.Attribute) and parent.expr is name):
        return None
    if parent.attrname == "shape" and isinstance(parent.parent, nodes.Subscript) and parent.parent.value is parent:
        index = parent.parent.slice
    elif parent.attrname == "size" and isinstance(parent.parent, nodes.Call) and len(parent.parent.args) == 1:
        index = parent.parent.args[0]
    else:
        return None
    if isinstance(index, nodes.UnaryOp) and index.op == "-" and isinstance(index.operand, nodes.Const):
        value = index.operand.value
        return -value if type(value) is int else None
    return index.value if isinstance(index, nodes.Const) and type(index.value) is int else None


def _static_metadata(name: nodes.Name) -> bool:
    """``name.dim()``, ``name.ndim``, ``name.dtype``, ``name.device``, ``isinstance(name, ...)``: size-independent."""
    parent = name.parent
    if isinstance(parent, nodes.Call) and name in parent.args and _type_check(parent):
        return True
    if not (isinstance(parent, nodes.Attribute) and parent.expr is name):
        return False
    if parent.attrname == "dim":
        return isinstance(parent.parent, nodes.Call) and parent.parent.func is parent and not parent.parent.args
    return parent.attrname in _STATIC_ATTRIBUTES


def _trailing_dimensions(argument: nodes.NodeNG) -> int:
    """How many dimensions after the data-dependent first one *argument* surely has.

    ``w[mask, :]`` keeps at least the one its whole slice names (vits'
    ``unnormalized_widths[inside_interval_mask, :]``, whose ``.shape[-1]`` is
    the static bin count); anything else may be one-dimensional.
    """
    if not (isinstance(argument, nodes.Subscript) and isinstance(argument.slice, nodes.Tuple)):
        return 0
    parts = argument.slice.elts
    whole = 0
    for part in reversed(parts[1:]):
        if not _whole_slice(part):
            break
        whole += 1
    return whole


class _AcrossCalls:
    """*is_captured*, and also a name that holds a captured tensor handed over by a call of this file.

    A parameter of a traced function of the file that some call passes a
    captured value (``top_k_keypoints(keypoints, ...)``), and a name unpacked
    from a tuple such a function returns (``keypoints, scores =
    remove_keypoints_from_borders(...)`` with ``return keypoints[mask],
    scores[mask]``). Parameters are collected up to :data:`_MAX_CALL_DEPTH`
    calls deep; the existing hazard checks then see the callee's uses.
    """

    def __init__(self, analysis: FileAnalysis, is_captured: Origin) -> None:
        self.analysis = analysis
        self.is_captured = is_captured
        self.traced = {id(function) for function, _ in analysis.traced_functions()}
        self.parameters: dict[int, int] = {}  # parameter -> trailing dimensions every captured argument has
        self._open: set[int] = set()  # unpackings being followed: a recursive function must not loop
        self._returning: set[int] = set()  # functions whose returns are being followed, for the same reason
        self._returns_memo: dict[int, bool] = {}  # function -> whether it returns a capture
        for _ in range(_MAX_CALL_DEPTH):
            if not self._pass_arguments():
                break

    def __call__(self, node: nodes.NodeNG) -> bool:
        if self.is_captured(node):
            return True
        if not isinstance(node, nodes.Name):
            return False
        try:
            bindings = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code: then nothing is known
            return False
        return any(
            self._captured_parameter(binding, node)
            or self._unpacked_capture(binding)
            or self._assigned_capture(binding)
            or self._split_capture(binding)
            for binding in bindings
        )

    def _captured_parameter(self, binding: nodes.NodeNG, read: nodes.Name) -> bool:
        """*binding* is a parameter passed a captured tensor, and *read* is not a read of one of its static dimensions."""
        trailing = self.parameters.get(id(binding))
        if trailing is None:
            return False
        if _static_metadata(read):
            return False
        dimension = _dimension_read(read)
        return dimension is None or not (dimension > 0 or -dimension <= trailing)

    def _callee(self, call: nodes.Call) -> nodes.FunctionDef | None:
        function = self.analysis.values.called_function(call)
        return function if function is not None and id(function) in self.traced else None

    def _pass_arguments(self) -> bool:
        """Mark the parameters that captured arguments bind; whether any was new."""
        added = False
        for call, _ in self.analysis.traced_nodes(nodes.Call):
            callee = self._callee(call)
            if callee is None:
                continue
            for argument in [*call.args, *(call.keywords or ())]:
                parameter = bound_parameter(callee, call, argument)
                if parameter is None:
                    continue
                value = argument.value if isinstance(argument, nodes.Keyword) else argument
                if captured_origin(value, self) is None:
                    continue
                trailing = min(_trailing_dimensions(value), self.parameters.get(id(parameter), _UNBOUNDED))
                if self.parameters.get(id(parameter)) != trailing:
                    self.parameters[id(parameter)] = trailing
                    added = True
        return added

    def _split_capture(self, binding: nodes.NodeNG) -> bool:
        """*binding* is ``a`` of ``a, b = <captured>``: ``rows, cols = torch.where(mask)``, each of data-dependent size."""
        unpacked = unpacking(binding)
        return unpacked is not None and self.is_captured(unpacked[1].value)

    def _assigned_capture(self, binding: nodes.NodeNG) -> bool:
        """*binding* is ``t = f(...)`` and *f* returns a captured value, alone or in a tuple, itself or
        through a call it returns (pytorch-metric-learning's ``indices_tuple = convert_to_pairs(...)``, which
        returns ``get_all_pairs_indices(...)``, which returns the four ``torch.where`` results; the caller's
        ``all(len(x) <= 1 for x in indices_tuple)`` then needs their sizes)."""
        statement = binding.parent if isinstance(binding, nodes.AssignName) else None
        return isinstance(statement, nodes.Assign) and isinstance(statement.value, nodes.Call) and (
            self._returns_capture(statement.value, 0)
        )

    def _returns_capture(self, call: nodes.Call, depth: int) -> bool:
        callee = self._callee(call)
        if callee is None or depth >= _MAX_CALL_DEPTH or id(callee) in self._returning:
            return False
        known = self._returns_memo.get(id(callee))
        if known is not None:
            return known
        found = self._follow_returns(callee, depth)
        if found or (depth == 0 and not self._returning):  # a "no" under a limit or a cycle guard is not kept
            self._returns_memo[id(callee)] = found
        return found

    def _follow_returns(self, callee: nodes.FunctionDef, depth: int) -> bool:
        self._returning.add(id(callee))
        try:
            for returned in callee.nodes_of_class(nodes.Return):
                if returned.frame() is not callee or returned.value is None:
                    continue
                value = returned.value
                for part in value.elts if isinstance(value, nodes.Tuple) else [value]:
                    if captured_origin(part, self) is not None:
                        return True
                    if isinstance(part, nodes.Call) and self._returns_capture(part, depth + 1):
                        return True
            return False
        finally:
            self._returning.discard(id(callee))

    def _unpacked_capture(self, binding: nodes.NodeNG) -> bool:
        """*binding* is ``a`` of ``a, b = f(...)``, and some ``return`` of *f* puts a captured value there."""
        unpacked = unpacking(binding)
        if unpacked is None or not isinstance(unpacked[1].value, nodes.Call):
            return False
        target, statement = unpacked
        if any(isinstance(part, nodes.Starred) for part in target.elts) or id(statement) in self._open:
            return False
        callee = self._callee(statement.value)
        if callee is None:
            return False
        index = target.elts.index(binding)
        self._open.add(id(statement))
        try:
            return any(
                isinstance(returned.value, nodes.Tuple)
                and len(returned.value.elts) == len(target.elts)
                and captured_origin(returned.value.elts[index], self) is not None
                for returned in callee.nodes_of_class(nodes.Return)
                if returned.frame() is callee
            )
        finally:
            self._open.discard(id(statement))


def capture_hazard(analysis: FileAnalysis, key: str, is_captured: Origin, numbers: bool) -> nodes.NodeNG | None:
    """The first concrete use in the file computed from a value *is_captured* recognises (computed once per *key*).

    For tensors of data-dependent size (*numbers* false), also an operation
    mixing two of them, and the tensor is followed into the functions of the
    file it is passed to (:class:`_AcrossCalls`); a captured *number* passed
    to any call already counts.
    """

    def compute() -> nodes.NodeNG | None:
        mixed = None if numbers else _mixed_sizes(analysis, is_captured)
        if mixed is not None:
            return mixed
        origin = is_captured if numbers else _AcrossCalls(analysis, is_captured)
        return next((use for use in concrete_uses(analysis, numbers) if captured_origin(use, origin) is not None), None)

    return analysis.shared(f"capture-hazard:{key}", compute)


def capture_moves_breaks(analysis: FileAnalysis, key: str, is_captured: Origin, numbers: bool) -> bool:
    """Turning the switch on would leave a break in the file, at a later line (:func:`capture_hazard`)."""
    return capture_hazard(analysis, key, is_captured, numbers) is not None
