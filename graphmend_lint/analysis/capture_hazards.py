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
  its captured ``is_global_attn`` to every layer, which branches on it),
  while a tensor of data-dependent size may go to helpers and submodules
  (higgs-audio's layer norms on ``hidden_states[mask]``, vits' spline on
  masked inputs: measured, no break);
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

from graphmend_lint.analysis.captured_values import captured_origin
from graphmend_lint.analysis.host_values import bound_values, builtin_name, condition_operands, is_torch_op

if TYPE_CHECKING:
    from graphmend_lint.context import FileAnalysis

Origin = Callable[[nodes.NodeNG], bool]
#: Modules whose functions want Python numbers: a symbol reaching them needs its concrete value.
_PYTHON_MODULES = frozenset({"math", "numpy", "random", "itertools", "functools", "operator", "builtins"})
#: Builtins that only iterate over their argument's leading dimension.
_ITERATING_BUILTINS = frozenset({"tuple", "list", "len"})
_INDEX_MATRIX_FUNCTIONS = frozenset({"nonzero", "argwhere"})


def _python_call(analysis: FileAnalysis, call: nodes.Call) -> bool:
    """A builtin, or a function of the standard library's number modules or NumPy."""
    name = analysis.values.qualified_name(call.func) or ""
    return builtin_name(call) is not None or name.split(".")[0] in _PYTHON_MODULES


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
        yield from condition_operands(node.test)
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
        if (numbers and not torch_op) or _python_call(analysis, call):
            yield from call.args
            yield from (keyword.value for keyword in call.keywords or ())


def _mixed_sizes(analysis: FileAnalysis, is_captured: Origin) -> bool:
    """An operation takes tensors computed from two different data-dependent results, or a capture repeats."""
    for node, _ in analysis.traced_nodes(nodes.BinOp, nodes.Call, nodes.Subscript):
        if is_captured(node) and _repeated(node):
            return True
        if isinstance(node, nodes.Subscript):
            continue
        if isinstance(node, nodes.BinOp):
            operands = [node.left, node.right]
        else:
            operands = [*node.args, *(keyword.value for keyword in node.keywords or ())]
        origins = {_size_key(found) for operand in operands if (found := captured_origin(operand, is_captured)) is not None}
        if len(origins) > 1:
            return True
    return False


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


def capture_moves_breaks(analysis: FileAnalysis, key: str, is_captured: Origin, numbers: bool) -> bool:
    """Some concrete use in the file is computed from a value *is_captured* recognises (computed once per *key*).

    For tensors of data-dependent size (*numbers* false), so is an operation mixing two of them.
    """

    def compute() -> bool:
        if not numbers and _mixed_sizes(analysis, is_captured):
            return True
        return any(captured_origin(use, is_captured) is not None for use in concrete_uses(analysis, numbers))

    return analysis.shared(f"capture-moves-breaks:{key}", compute)
