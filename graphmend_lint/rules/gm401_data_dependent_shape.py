"""GM401: operators whose output shape depends on tensor data."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.ast_resolution import ast_resolution
from graphmend_lint.analysis.captured_values import dynamic_size_origin
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.mask_parameters import (
    item_mask_index,
    mask_behind,
    mask_keyed_item,
    mask_named_attribute,
    mask_parameter_index,
)
from graphmend_lint.analysis.dynamo_settings import CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, setting_on
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import (
    compares_itself_with_number,
    is_bool_tensor,
    is_likely_mask,
    mask_named_parameter,
    numpy_origin,
)
from graphmend_lint.analysis.numpy_values import is_numpy_mask, is_numpy_value
from graphmend_lint.analysis.resumed_calls import interrupted_method_call
from graphmend_lint.analysis.resolve import What
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.values import Kind, ValueOracle, is_array_index, is_elementwise_comparison
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.capture_switch import capture_switch_fix, declined_switch_advice
from graphmend_lint.fixes.shape_dispatch import dense_dispatch_fix
from graphmend_lint.fixes.shape_masked import masked_reduction, masked_reduction_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption, switch_example, with_switch
from graphmend_lint.rules.captured_branch import report_captured_branches
from graphmend_lint.rules.gb_types import gb_types

#: How many joins, repeats and names a list of bools is followed through.
_MAX_LIST_DEPTH = 4

CAPTURE_DYNAMIC = Fix.advice(
    (
        "no source fix: `torch._dynamo.config.capture_dynamic_output_shape_ops = True` traces it with an "
        "unbacked output size (the host sync stays, later code must not branch on that size, and some "
        "backends fall back)"
    ),
)
#: Operators (as torch functions and tensor methods) whose output size is data-dependent.
ALWAYS_DYNAMIC = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"})
#: ``torch.ops.aten`` operators tagged ``dynamic_output_shape`` (torch 2.13), each logged as GB0036
#: whatever its arguments (measured), by the operator it implements.
ATEN_DYNAMIC = {
    "nonzero": "nonzero", "nonzero_numpy": "nonzero", "argwhere": "argwhere", "masked_select": "masked_select",
    "_unique": "unique", "_unique2": "unique", "unique_dim": "unique", "unique_consecutive": "unique_consecutive",
    "bincount": "bincount",
}  # fmt: skip
#: Spellings of ``one_hot``: without ``num_classes`` (or with ``-1``) its width is the data's maximum plus one.
ONE_HOT = frozenset(
    {"torch.nn.functional.one_hot", "torch._C._nn.one_hot", "torch.ops.aten.one_hot", "torch.ops.aten.one_hot.default"}
)
#: The CTC loss, functional and as a module: its aten kernel sizes its output by the target lengths' data
#: (GB0036; GB0037, no meta kernel, with ``capture_dynamic_output_shape_ops``; measured, torch 2.13).
CTC_FUNCTIONS = frozenset({"torch.nn.functional.ctc_loss", "torch.ctc_loss"})
CTC_MODULES = frozenset({"torch.nn.CTCLoss", "torch.nn.modules.loss.CTCLoss"})
ONE_HOT_ADVICE = Fix.advice(
    "no automatic fix: pass `num_classes=` as a Python int (the vocabulary or label count); without it the width "
    "is the data's maximum plus one, and `capture_dynamic_output_shape_ops` does not help (measured)"
)
CTC_ADVICE = Fix.advice(
    "no automatic fix: compute the CTC loss outside the compiled function (compile the model, not the loss); "
    "`capture_dynamic_output_shape_ops` does not help, its kernel has no meta kernel for it (GB0037, measured)"
)
COMBINATIONS_ADVICE = Fix.advice(
    "no automatic fix: the size, n choose r, is static, but torch builds the result with a boolean mask; for "
    "pairs of a 1-d `t` of static length `n` use `i, j = torch.triu_indices(n, n, 1)` and "
    "`torch.stack((t[i], t[j]), -1)` (offset 0 for `with_replacement=True`: equal, no break, measured); "
    "`capture_dynamic_output_shape_ops` makes Dynamo fail on it"
)
UNCAPTURED_ADVICE = {"one_hot": ONE_HOT_ADVICE, "combinations": COMBINATIONS_ADVICE, "ctc_loss": CTC_ADVICE}
#: Operators the capture switch does not trace: ``one_hot`` still breaks (GB0246, or GB0033 with
#: ``num_classes=-1``), ``torch.combinations`` makes Dynamo fail ("PendingUnbackedSymbolNotFound") and the
#: CTC loss breaks with GB0037 (measured, torch 2.13): their fix is advice of their own, and their results
#: are never captured.
UNCAPTURED = frozenset(UNCAPTURED_ADVICE)
#: NumPy functions Dynamo traces as those operators (``torch._numpy``), on arrays and Python lists alike.
NUMPY_DYNAMIC = frozenset({"unique", "nonzero", "flatnonzero", "argwhere", "bincount"})
SECOND_BREAK = Fix.advice("no fix of its own: it goes with the data-dependent break it follows")
CAPTURED_SIZE_BRANCH = Fix.advice(
    "no automatic fix: branch on a static bound instead (pad to a fixed size, or mask), "
    "or decide outside the compiled function",
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, r: torch.Tensor):\n"
_MAE_MASKING = (
    "\n\ndef random_masking(x):\n    return x.sum(-1) > 0, x.argsort(-1)\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor, is_mae: bool):\n    (mask, ids) = random_masking(x) if is_mae else (None, None)\n"
    "    if mask is not None:\n        x = x[mask.unsqueeze(-1).tile(1, 1, x.shape[2])]\n    return x\n"
)
_CAPTURE = with_switch(_HEADER, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)


def _switched(source: str, advice: bool | None = None) -> Example:
    return switch_example(source, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, advice)


def _argument(call: nodes.Call, index: int, keyword: str) -> nodes.NodeNG | None:
    """The argument passed as *keyword*, or positionally at *index*."""
    given = next((kw.value for kw in call.keywords or [] if kw.arg == keyword), None)
    if given is None and len(call.args) > index:
        return call.args[index]
    return given


def _is_tensor_argument(values: ValueOracle, call: nodes.Call, index: int, keyword: str) -> bool:
    given = _argument(call, index, keyword)
    return given is not None and values.is_tensor(given)


def dynamic_operator(values: ValueOracle, call: nodes.Call) -> str | None:
    """The name of the data-dependent-shape operator *call* invokes, else ``None``."""
    keywords = {kw.arg for kw in call.keywords or []}
    name = values.qualified_name(call.func) or ""
    func = call.func
    if name.startswith("numpy.") and name.count(".") == 1:
        op = name.split(".")[1]
        if op in NUMPY_DYNAMIC:
            return f"np.{op}"
        if op == "repeat":  # np.repeat(a, counts) with an array of counts is repeat_interleave (GB0036, measured)
            counts = _argument(call, 1, "repeats")
            array = counts is not None and (values.is_tensor(counts) or is_numpy_value(values, counts))
            return "np.repeat" if array else None
        return "np.where" if op == "where" and len(call.args) == 1 and not keywords else None
    if name in ONE_HOT:
        return "one_hot" if _one_hot_width_from_data(call) else None
    if name in CTC_FUNCTIONS:
        return "ctc_loss"
    if name.startswith("torch.ops.aten."):
        return _aten_operator(values, call, name.split(".")[3:])
    if name == "torch.combinations":
        return "combinations"  # any ``r``, with or without replacement (measured)
    if name.startswith("torch.") and name.count(".") == 1:
        op, receiver_offset = name.split(".")[1], 1  # torch.op(input, ...)
    elif name.startswith("torch.Tensor.") and name.count(".") == 2 and not name.endswith(".where"):
        op, receiver_offset = name.split(".")[2], 1  # torch.Tensor.op(input, ...), the unbound method
    elif isinstance(func, nodes.Attribute) and (values.is_tensor(func.expr) or values.array_method(func)):
        # input.op(...), also on a receiver of unknown kind when only arrays have the method
        op, receiver_offset = func.attrname, 0
    else:
        return None
    if op in ALWAYS_DYNAMIC:
        return op
    condition_only = len(call.args) == 1 and not keywords or keywords == {"condition"} and not call.args
    if op == "where" and receiver_offset and condition_only:
        return "where"  # torch.where(condition) is nonzero(condition, as_tuple=True)
    if op == "repeat_interleave":
        return op if _tensor_repeats(values, call, receiver_offset) else None
    return None


def _tensor_repeats(values: ValueOracle, call: nodes.Call, receiver_offset: int) -> bool:
    """``repeat_interleave`` with tensor repeats and no ``output_size``: ``torch.repeat_interleave(repeats)``
    or ``(input, repeats)``, ``input.repeat_interleave(repeats)``."""
    if any(kw.arg == "output_size" for kw in call.keywords or []):
        return False
    if receiver_offset and len(call.args) == 1 and not call.keywords:
        return values.is_tensor(call.args[0])  # repeat_interleave(repeats)
    return _is_tensor_argument(values, call, receiver_offset, "repeats")


def _aten_operator(values: ValueOracle, call: nodes.Call, parts: list[str]) -> str | None:
    """``torch.ops.aten.<op>`` or ``torch.ops.aten.<op>.<overload>`` with a data-dependent output size."""
    if not parts or len(parts) > 2:
        return None
    op, overload = parts[0], parts[1] if len(parts) == 2 else None
    if op in ATEN_DYNAMIC:
        return f"aten.{op}"
    if op == "repeat_interleave":
        if overload == "Tensor":  # repeat_interleave.Tensor(repeats, *, output_size=None)
            dynamic = not any(kw.arg == "output_size" for kw in call.keywords or [])
        else:
            dynamic = overload in {None, "self_Tensor"} and _tensor_repeats(values, call, 1)
        return "aten.repeat_interleave" if dynamic else None
    if op == "index" and overload in {None, "Tensor"} and len(call.args) >= 2:
        indices = call.args[1]  # aten.index(self, indices): a list with a boolean mask selects
        if isinstance(indices, (nodes.List, nodes.Tuple)) and any(is_bool_tensor(values, i) for i in indices.elts):
            return "aten.index"
    return None


def _one_hot_width_from_data(call: nodes.Call) -> bool:
    """``one_hot(t)`` / ``one_hot(t, -1)``: no ``num_classes``, or a negative constant one."""
    given = _argument(call, 1, "num_classes")
    if given is None:
        return True
    if isinstance(given, nodes.UnaryOp) and given.op == "-" and isinstance(given.operand, nodes.Const):
        return True
    return isinstance(given, nodes.Const) and isinstance(given.value, int) and given.value < 0


def boolean_index(values: ValueOracle, subscript: nodes.Subscript) -> nodes.NodeNG | None:
    """The boolean mask in ``x[mask]`` / ``x[:, mask]`` when the selection is *read*.

    ``x[mask] = v`` is a masked write (traced, no break); ``x[mask] += v``
    reads the selection first and does break.
    """
    parent = subscript.parent
    if subscript.ctx is not Context.Load and not (isinstance(parent, nodes.AugAssign) and parent.target is subscript):
        return None
    index = subscript.slice
    parts = index.elts if isinstance(index, nodes.Tuple) else [index]
    if not values.is_tensor(subscript.value):
        if values.kind(subscript.value) is Kind.STATIC:
            return None
        # ``x[x >= 0]``: only an array compares elementwise with a number and is indexed by the result;
        # ``labels[m]`` with ``m`` a proven bool tensor: only an array is indexed by one (a list raises)
        return next(
            (
                part
                for part in parts
                if compares_itself_with_number(subscript.value, part)
                or is_bool_tensor(values, part)
                or is_numpy_mask(values, part)
            ),
            None,
        )
    return next((part for part in parts if is_bool_tensor(values, part) or _bool_list(part) or is_numpy_mask(values, part)), None)


def _bool_list(node: nodes.NodeNG, depth: int = 0) -> bool:
    """``[True, False, True]``: a tensor indexed by a list of bools selects, like a mask (GB0036, measured).
    Also one built by repeating and joining such lists, directly or through a name bound only to one:
    DiffusionDet's ``select_mask = [True] * k + [False] * (n - k)``, shuffled, then ``gt_boxes[select_mask]``."""
    if depth > _MAX_LIST_DEPTH:
        return False
    if isinstance(node, nodes.List):
        return bool(node.elts) and all(isinstance(e, nodes.Const) and type(e.value) is bool for e in node.elts)
    if isinstance(node, nodes.BinOp) and node.op == "+":
        return _bool_list(node.left, depth + 1) and _bool_list(node.right, depth + 1)
    if isinstance(node, nodes.BinOp) and node.op == "*":
        return _bool_list(node.left, depth + 1) or _bool_list(node.right, depth + 1)
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(_bool_list(value, depth + 1) for value in bound)
    return False


def named_mask_index(values: ValueOracle, subscript: nodes.Subscript) -> nodes.NodeNG | None:
    """The mask in a tensor read ``x[mask]`` (or ``x[~mask]``) whose index only its parameter name calls a
    mask (``mask_bool``; or ``input_features_mask`` where no call in this file passes a non-mask,
    :func:`mask_parameter_index`), or that joins a mask with tensors of unknown dtype
    (``(mol_type == 0) & attention_mask``, :func:`is_likely_mask`), or a comparison of values of unknown
    kind that indexes a tensor, a NumPy array or a value of unknown kind that is no literal container
    (:func:`_compared`, :func:`_may_be_array`; Dynamo traces NumPy as torch, so ``a[b > 1.5]`` on arrays
    logs GB0036 too).

    Detection only: the dtype is not proven, so no rewrite that assumes it.
    The indexed value must be a tensor, or the mask one: only an array is
    indexed by a tensor mask (``feats[feats_mask_bool]`` after
    ``feats_mask_bool.int().sum()``).
    """
    if subscript.ctx is not Context.Load or values.kind(subscript.value) is Kind.STATIC:
        return None
    index = subscript.slice
    parts = index.elts if isinstance(index, nodes.Tuple) else [index]
    container_is_tensor = values.is_tensor(subscript.value)
    container = subscript.value
    container_is_array = (
        container_is_tensor
        or is_array_index(subscript.slice)  # torchmd-net's ``edge_index[:, mask]``
        or is_numpy_value(values, container)
        or numpy_origin(values, container) is not None
    )
    return next(
        (
            part
            for part in parts
            if (container_is_tensor or values.is_tensor(part))
            and (_named_mask(values, part) or is_likely_mask(values, part))
            or _may_be_array(container) and mask_named_attribute(values, mask_behind(values, part))
            or (container_is_array or _may_be_array(container)) and _compared(values, part)
        ),
        None,
    )


_SEQUENCE_LITERALS = (nodes.List, nodes.Tuple, nodes.Dict, nodes.Set, nodes.ListComp, nodes.DictComp, nodes.SetComp)


def _may_be_array(container: nodes.NodeNG) -> bool:
    """A value of unknown kind that is not a literal sequence, nor a name bound to one: indexed by an
    elementwise comparison of a value of unknown kind (``loss[target > 0]``, ``x[labels != -100]``), it is
    an array in real code. A Python container indexed by ``True`` (``(a, b)[step < warmup]``) is spelled
    with a literal."""
    if isinstance(container, nodes.Name):
        bound = bound_values(container)
        return bound is None or not any(isinstance(value, (*_SEQUENCE_LITERALS, nodes.Const)) for value in bound)
    return isinstance(container, (nodes.Attribute, nodes.Subscript, nodes.Call))


def _compared(values: ValueOracle, part: nodes.NodeNG, depth: int = 0) -> bool:
    """``logits[labels != -100]`` on a tensor (or array), ``labels`` of unknown kind: a comparison (or ``~``, ``&``, ``|``
    of comparisons, or a name bound once to one) with an operand that is not a Python value.

    Were ``labels`` a tensor or an array, the index is a mask; were it a Python
    number, the index would be ``True`` / ``False``, which only adds (or empties) a
    leading dimension and no code means. A string, bytes or ``None`` operand, or
    operands all Python values, prove nothing.
    """
    if depth > 4:
        return False
    if isinstance(part, nodes.Name):
        bound = bound_values(part)
        return bound is not None and len(bound) == 1 and _compared(values, bound[0], depth + 1)
    if isinstance(part, nodes.UnaryOp) and part.op == "~":
        return _compared(values, part.operand, depth + 1)
    if isinstance(part, nodes.BinOp) and part.op in {"&", "|"}:
        return _compared(values, part.left, depth + 1) and _compared(values, part.right, depth + 1)
    if not is_elementwise_comparison(part):
        return False
    operands = (part.left, part.ops[0][1])
    if any(isinstance(o, nodes.Const) and not isinstance(o.value, (int, float)) for o in operands):
        return False
    return any(values.kind(o) is not Kind.STATIC for o in operands)


def _named_mask(values: ValueOracle, part: nodes.NodeNG) -> bool:
    """*part* is a parameter its name calls a mask (:func:`mask_named_parameter`, :func:`mask_parameter_index`),
    or keeps its dtype from one (``~mask``, ``mask.to(h.device)``, :func:`mask_behind`)."""
    behind = mask_behind(values, part)
    return (
        mask_named_parameter(values, behind)
        or mask_parameter_index(values, behind)
        or mask_keyed_item(values, behind)
        or mask_named_attribute(values, behind)
    )


class DataDependentOutputShape(Rule):
    """## What it does
    Flags operators whose output size depends on the values in a tensor:
    `torch.nonzero` / `.nonzero()`, `torch.argwhere`, boolean-mask indexing
    `x[mask]` (read, or `x[mask] += v`; the mask a comparison, a `.bool()`,
    `torch.full(size, True)`, `torch.tensor([True, False])`, a tensor made
    with `dtype=torch.bool` or Python's `dtype=bool` (SimCLR's NT-Xent mask,
    `torch.ones((N, N), dtype=bool).fill_diagonal_(0)`: any in-place method
    returns its receiver, dtype kept), a
    `torch.BoolTensor` parameter, a row of one or an item of a list or tuple
    of them that a loop takes (`for keep in masks:`), one of those
    reshaped, flipped, repeated, moved, joined (`torch.cat` of masks) or
    filled (`masked_fill`, `index_fill`, `scatter`, `masked_scatter` keep the
    receiver's dtype), or updated in place (`valid &= w > 0`: in place, a
    tensor keeps its dtype), or a boolean NumPy array traced code computes
    (`np.logical_not(...)`, a comparison of a NumPy value, `np.ones(n,
    dtype=bool)`: Dynamo holds it as a tensor, GB0036 measured; VIBE's
    acceleration error),
    one of those reached through this file:
    returned by a helper (`mask, n = self.get_mask(ids)`, `out["keep"]` of the dict it returns), kept on `self` or
    registered as a buffer, or a parameter every call of which passes one;
    or a parameter whose name says boolean
    mask: `mask_bool`, `bool_mask`; an item of a mapping under such a key
    (`gt["valid_mask"]`, `data["mask0"]`), or an attribute of such a name
    of an object the file does not type, indexing anything but a literal
    (PyTorch Geometric's `out[data.train_mask]`); or one whose name ends in `mask`
    (`input_features_mask`, `~padding_mask`), not an attention mask (0/1
    integers), when no call in this file passes anything but a possible mask
    for it (detectron2 passes `...` as `fg_mask`; an integer tensor gathers);
    or one of those masks joined by `&`, `|` or `^` with tensors of unknown
    dtype, `(mol_type == 0) & attention_mask`: an integer operand would make a
    0/1 index that gathers rows 0 and 1, which no code means); or a comparison
    indexing a tensor (or a NumPy array, which Dynamo traces as one),
    `logits[labels != -100]` with `labels` of unknown kind
    (were it a Python number, the index would be a Python bool, which no code
    means), also when the indexed value is of unknown kind too and not a
    literal list, tuple or dict (`loss[target > 0].mean()` with `loss =
    (pred - target) ** 2`: GB0036, measured; `pair[step < 2]` on a literal
    pair is not flagged); also `x[x >= 0]` on an `x` of
    unknown type, since only an array is ordered against a number and
    indexed by the result, and `x[m]` on an `x` of unknown type with `m`
    one of the boolean masks above, since only an array is indexed by a
    mask, a list raises), `torch.masked_select`,
    `torch.unique` / `unique_consecutive`, single-argument `torch.where(c)`,
    `torch.repeat_interleave` with tensor repeats and no `output_size`,
    `torch.bincount` (even with `minlength`), the CTC loss (`F.ctc_loss`, or a
    call of an `nn.CTCLoss` module wherever the file builds it), and their NumPy spellings
    `np.unique`, `np.nonzero`, `np.flatnonzero`, `np.argwhere`, `np.bincount`,
    `np.repeat(a, counts)` with an array of counts and
    single-argument `np.where(c)`, which Dynamo traces as the torch operators
    (on arrays and on Python lists alike). `.nonzero()`, `.argwhere()`,
    `.masked_select()`, `.unique()`, `.unique_consecutive()`, `.bincount()`
    and `.repeat_interleave(t)` with tensor repeats are flagged on any
    receiver not known to be a plain Python value: of what compiled code
    meets, only tensors have them (NumPy arrays have `.nonzero()` too, which
    breaks the same way, measured), unless a class of the same file defines
    a method of that name. The other spellings of the same operators are
    flagged too: the unbound methods (`torch.Tensor.unique(t)`), the
    `torch.ops.aten` packets and overloads torch tags `dynamic_output_shape`
    (`nonzero`, `nonzero_numpy`, `argwhere`, `masked_select`, `_unique`,
    `_unique2`, `unique_dim`, `unique_consecutive`, `bincount`,
    `repeat_interleave.Tensor` / `.self_Tensor`, and `index.Tensor` with a
    boolean index), `torch.where(condition=c)`, and a tensor indexed by a
    list of bools (`x[[True, False, True]]`). So are two operators the
    capture switch does not help: `F.one_hot(t)` without `num_classes` (or
    with `-1`: its width is the data's maximum plus one; GB0246, GB0033 with
    `num_classes=-1`) and `torch.combinations` (any `r`: its size is static,
    but torch builds it with a boolean mask, GB0036). The table of every
    spelling measured against Dynamo is in `tests/test_dynamic_shape_spellings.py`.

    ## Why is this bad
    An FX graph needs every output size as a function of the input sizes.
    These outputs are sized by the data, so Dynamo ends the graph, runs it,
    syncs with the device and resumes in a new graph (GB0036, "Dynamic shape
    operator"). Inside a loop Dynamo gives up on the whole function.
    When the read sits in the arguments of a tensor method call that starts
    on an earlier line (`h.masked_scatter(\n m, norm(h[m]))`), the resumed
    call breaks again at that line (GB0007, measured): it is reported there
    too, as a second finding with no fix of its own.
    Writing through a mask, `x[mask] = 0`, is fine and is not flagged; so is
    indexing with integer tensors.

    ## Example
    ```python
    @torch.compile
    def masked_mean(x):
        valid = ~torch.isnan(x)
        return x[valid].mean()
    ```

    ## Use instead
    Reduce over the whole tensor with `torch.where`:
    ```python
    @torch.compile
    def masked_mean(x):
        valid = ~torch.isnan(x)
        return (torch.where(valid, x, 0).sum() / valid.sum())
    ```

    ## Fix safety
    A masked `sum`, `mean`, `max` or `min` (`x[m].sum()`...) is rewritten to
    reduce over `torch.where(m, x, identity)`, identity `0` (sum, mean) or
    `∓torch.inf` (max, min). The rewrite is **unsafe**: float sums are added in
    another order (equal within rounding; tests use `rtol=1e-5`), `mean` of an
    integer tensor returns a float where the original raised, and `max`/`min`
    of an empty selection return `∓inf` where the original raised. An empty
    `sum` is `0` and an empty `mean` is `nan` in both. It is offered only when
    the mask is provably elementwise in `x` (`torch.where` broadcasts from the
    right, indexing from the left) and, for `max`/`min`, `x` is provably
    floating; otherwise it is shown, not applied. A mask only its parameter
    name vouches for is never rewritten (`torch.where` of an integer index
    would change the result); it gets the capture switch, like the operators.

    The eager experts loop of transformers 5.x (`MixtralExperts.forward`,
    copied into 53 modeling files of 5.23: `expert_hit = torch.greater(mask.sum(dim=(-1, -2)),
    0).nonzero()`, `for expert_idx in expert_hit:`, `torch.where(mask[e])`,
    `index_add_`) is rewritten, **unsafely**, into a dense loop Dynamo traces
    whole: `for expert_idx in range(mask.shape[0])` (so the sentinel
    `if expert_idx == self.num_experts` compares ints and the
    `expert_idx = expert_idx[0]` unpack goes), every token as `token_idx`, the
    routing weight as the sum of the token's routes to the expert
    (`torch.where(mask[e].T.bool(), w, 0).sum(-1, keepdim=True)`: with one
    route it adds zeros, exactly), and a `routed = mask[e].any(0)` vector
    that zeroes the rows the expert does not serve on the way in and drops
    their contribution on the way out (`torch.where`, not a product). Measured
    (torch 2.13, CPU): the two logged sites of each loop go, `fullgraph=True`
    passes, outputs and every gradient equal within `rtol=1e-5` (eager and
    compiled), see `docs/benchmarks.md` for the five MoE models. What changes:

    - every expert runs on every token: `num_experts / top_k` times the expert
      FLOPs and activation memory (with the default configs 8/2 = 4x for
      Mixtral, 15x qwen2_moe, 16x qwen3_moe, 8x phimoe and olmoe), worth it
      only where the graph break costs more (small batches, few experts);
    - results are equal within rounding, not bitwise: the GEMMs have more rows;
    - a token that lists the same expert twice in `top_k_index` (`topk` never
      does; a hash router's table may: DeepSeek-V4's `tid2eid`) gets one
      contribution weighted by both routes' weights instead of one
      contribution per route: equal within rounding, because the rewrite
      requires the weight only to scale the contribution (`rows * w`, as it
      is or cast, then `index_add_`);
    - an expert that overflows (`inf`) on a token not routed to it: masking
      with a product would give `0 * inf = nan` in the output and in the
      routing weights' gradient (measured); the rewrite's `torch.where` on the
      input rows and on the contribution keeps both finite (measured).

    The loop must have exactly that shape: the one-hot mask permuted to
    `(experts, k, tokens)`, the unpack, the sentinel `continue`, a row-wise
    body, one `index_add_`, nothing read after the loop; and a trial lint of
    the rewritten file must find no break left in the loop. Row-wise means
    built from the selected rows with `F.linear` on `self.<weights>[expert_idx]`
    or `rows @ self.<weights>[expert_idx]`, `*` and `+` with rows or with
    something the same for every row (a number, `self.<attr>`, a per-expert
    bias `self.<bias>[expert_idx]`), `self.act_fn`, `torch.sigmoid`,
    `torch.tanh`, `.clamp` with such bounds, `.float()`, `.to(x.dtype)`,
    `.chunk(n, dim=-1)`, a constant slice of the last dimension
    (`x[..., ::2]`), the routing weight `w[token_idx, top_k_pos, None]` (read
    once, as a factor of what is added), and a
    one-argument helper method of the same class with such a body (gpt-oss's
    `self._apply_gate`) that no class of the file overrides. Every other loop
    over the experts `nonzero()` selected (the 4.52 `mask[e].squeeze(0)` /
    `self.experts[e]` form, a weight on the left of `@`, norms, reductions,
    other calls) gets a display-only description of the dense loop.

    Otherwise, when nothing in the file needs the concrete value or size of a
    data-dependent result (no branch, loop, `assert`, Python or NumPy
    function, helper or submodule call takes it or anything computed from
    it), the fix is the module-level line
    `torch._dynamo.config.capture_dynamic_output_shape_ops = True`: Dynamo
    traces the operators with an unbacked size and they no longer break.
    **Unsafe**: eager code is untouched, but the switch is process-wide, the
    host sync stays, some backends fall back for these ops, and a use the
    linter cannot see may still break there. Where such a use is in the
    file, no fix: the break would only move (measured on the dev corpus, see
    `docs/benchmarks.md`).

    `one_hot` without `num_classes` and `torch.combinations` get advice of
    their own: pass `num_classes=`; build pairs with `torch.triu_indices`
    (`i, j = torch.triu_indices(n, n, 1)`, `torch.stack((t[i], t[j]), -1)`,
    equal and unbroken, measured). The capture switch does not trace
    `one_hot`, and with it on Dynamo raises on `torch.combinations` (measured),
    so a file that calls `torch.combinations` is never offered the switch.

    Everything else is display-only.

    ## Captured output shapes
    With `torch._dynamo.config.capture_dynamic_output_shape_ops = True` (set
    at module level in the file, or the rule option
    `capture-dynamic-output-shape-ops = true`) Dynamo traces all of these
    operators with an unbacked output size: they no longer break (measured,
    torch 2.13), and the sync stays. A branch on the *size* of the result
    (`if len(idx) == 0:`, `if sel.numel() > 0:`, `idx.shape[0] > 2`) still
    breaks (GB0170), at the branch: in that mode the rule reports those
    branch operands instead, with advice only, and still reports `one_hot`
    without `num_classes` (it still breaks) and `torch.combinations` (Dynamo
    raises on it).

    ## Measured spellings
    Every spelling below was run under Dynamo (torch 2.13, CPU), default
    configuration and with `capture_dynamic_output_shape_ops = True`, with
    the logged graph breaks collected (`tests/test_dynamic_shape_spellings.py`
    re-measures a row of each kind). "none" means no break logged.

    | spelling | default | with the switch | GM401 |
    | --- | --- | --- | --- |
    | `torch.nonzero(t)` / `t.nonzero()` (also `as_tuple=True`), `torch.argwhere` / `t.argwhere()` | GB0036 | none | flagged |
    | `torch.masked_select(t, m)` / `t.masked_select(m)` | GB0036 | none | flagged |
    | `torch.unique` / `t.unique()` (any of `sorted`, `return_inverse`, `return_counts`, `dim`), `unique_consecutive` (also `dim=0`) | GB0036 | none | flagged |
    | `repeat_interleave` with tensor repeats: `torch.repeat_interleave(t, reps)`, `(reps)`, `t.repeat_interleave(reps, dim=0)` | GB0036 | none | flagged |
    | `torch.bincount(t)` / `t.bincount()` (also `minlength`, `weights`) | GB0036 | none | flagged |
    | `torch.where(c)`, `torch.where(condition=c)` | GB0036 | none | flagged |
    | `t[mask]`, `t[t > 0]`, `t[:, mask]`, `t[mask, 0]`, `t[[True, False]]`, `t[mask] += v` (`-=`, `*=`), `t[mask][0] = v` | GB0036 | none | flagged |
    | `torch.Tensor.nonzero(t)`, `.unique(t)`, `.repeat_interleave(t, reps)`, `.bincount(t)`, `.masked_select(t, m)` | GB0036 | none | flagged |
    | `torch.ops.aten.nonzero` (`.default`), `nonzero_numpy`, `argwhere`, `masked_select`, `_unique`, `_unique2`, `unique_dim`, `unique_consecutive`, `bincount`, `repeat_interleave` (`.Tensor`, `.self_Tensor`), `index` / `index.Tensor` with a bool mask | GB0036 | none | flagged |
    | `F.one_hot(t)`, `F.one_hot(t, -1)`, `torch._C._nn.one_hot(t)` | GB0246 | GB0246 | flagged |
    | `F.one_hot(t, num_classes=-1)`, `torch.ops.aten.one_hot(t)` | GB0033 | GB0033 | flagged |
    | `torch.combinations(t)` (any `r`, `with_replacement`) | GB0036 | Dynamo raises | flagged |
    | `F.ctc_loss(log_probs, targets, input_lengths, target_lengths)`, a call of an `nn.CTCLoss()` module | GB0036 | GB0037 | flagged |
    | `torch.ops.aten.unique_dim_consecutive(t, 0)` | GB0036 | GB0037 | not flagged |
    | `t[uint8_mask]` | Dynamo raises | Dynamo raises | not flagged |
    | `np.bincount(a)`, `np.repeat(a, counts)` (an array of counts), `np.unique(a, return_counts=True)`, `np.nonzero(a)`, `a.nonzero()`, `np.where(c)`, `np.argwhere(a)`, `a[a > 0]` | GB0036 | none (those measured: `np.bincount`, `np.repeat`) | flagged |
    | `t.repeat_interleave(2)`, `np.repeat(a, 2)`, `np.histogram`, `np.sort`, `aten.repeat_interleave.self_int`, `aten.index.Tensor` with an integer index, `t[[0, 2]]`, `F.one_hot(t, n)`, `torch.triu_indices` pairs, `nonzero_static`, `histc`, `histogram`, `histogramdd`, `count_nonzero`, `isin`, `take`, `segment_reduce`, `cartesian_prod`, `tril_indices`, `block_diag`, `masked_fill`, `masked_scatter`, `index_put_` with a mask, `t[mask] = v`, three-argument `torch.where` | none | none | not flagged |

    Other rules' breaks met on the way: `np.extract`, `np.compress`,
    `np.delete`, `np.setdiff1d`, `np.intersect1d`, `np.union1d`,
    `np.trim_zeros`, `np.isin`, `np.select` (GB0294, NumPy functions Dynamo
    does not trace), `t.to_sparse()` (GB0015),
    `pack_padded_sequence` (GB0007) and `torch.tensor_split(t, index_tensor)`
    (GB0033, a host read of the indices) are not size operators.
    """

    code = "GM401"
    name = "data-dependent-output-shape"
    summary = "an operator whose output size depends on tensor data splits the graph"
    dynamo_gb = gb_types("GB0036", "GB0170", "GB0007", "GB0246", "GB0033")
    options = {
        "capture-dynamic-output-shape-ops": RuleOption(
            False, "the program turns `capture_dynamic_output_shape_ops` on somewhere the linter cannot see"
        )
    }
    valid = (
        # an attention mask is 0/1 integers by convention (an index gathers); `mask_index` names positions
        "import torch\n\n\n@torch.compile\ndef f(pts: torch.Tensor, batch):\n"
        "    return pts[batch['attention_mask']], pts[batch['mask_index']]\n",
        # a NumPy mask that only feeds np.where keeps a static size
        "import numpy as np\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    a = np.arange(6) * 1.0\n    return x * np.where(a > 2, a, 0.0).sum()\n",
        _HEADER + "    x[x < 0] = 0\n    return x[r.argsort()], torch.where(x > 0, x, 0)\n",
        _HEADER + "    y = torch.repeat_interleave(x, 2)\n    return y, torch.repeat_interleave(x, r, output_size=8)\n",
        _HEADER + "    idx = r.long()\n    return x[idx], x[:, 0], x.nonzero_static(size=4)\n",
        _HEADER + "    idx = r.eq(2).to(torch.long)\n    return x[idx.to(x.device)]\n",
        "import torch\n\n\ndef f(x):\n    return x[x > 0].sum(), torch.nonzero(x)\n",
        _CAPTURE + "    idx = torch.nonzero(x > 0)\n    return x[x > 0].sum() + len(idx), torch.unique(r)\n",
        # a name is evidence only for an unannotated (or ``torch.Tensor``) parameter that indexes as it came in,
        # and says mask last but not attention (0/1 integers by convention)
        "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, attention_mask, mask_index, mask_bool: torch.LongTensor, bool_mask, keep_mask=0):\n"
        "    bool_mask = bool_mask.long()\n    x[attention_mask] = 0\n"
        "    return x[attention_mask], x[mask_index], x[mask_bool], x[bool_mask], x[keep_mask]\n",
        # ...whose every call in the file passes a possible mask: detectron2 passes `...` as `fg_mask` (a view)
        "import torch\n\n\ndef box_loss(deltas: torch.Tensor, fg_mask: torch.Tensor):\n    return deltas[fg_mask].abs().sum()\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor):\n    return box_loss(x, ...)\n",
        # a method a class of this file defines too: the receiver may be one of its instances
        "import torch\nfrom elsewhere import load\n\n\nclass Vocab:\n    def unique(self):\n        return self\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor):\n    return x * len(load().unique())\n",
        # a helper's integer index gathers (static size)
        "import torch\n\n\ndef get_index(t: torch.Tensor):\n    return (t > 0).long(), t.shape[0]\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor, y: torch.Tensor):\n    idx, n = get_index(y)\n    return x[idx] * n\n",
        # static sizes: `num_classes` given, int repeats and int indices in aten spellings, a list-of-ints index,
        # pairs from `triu_indices`; `itertools.combinations` and a local `one_hot` are not torch's
        _HEADER + "    return torch.nn.functional.one_hot(r, num_classes=4), torch.nn.functional.one_hot(r, x.shape[0])"
        "\n",
        _HEADER + "    return torch.ops.aten.repeat_interleave.self_int(x, 2),"
        " torch.ops.aten.index.Tensor(x, [r.long()])\n",
        _HEADER + "    i, j = torch.triu_indices(4, 4, 1)\n    return x[[0, 2]], torch.stack((x[i], x[j]), -1)\n",
        "import itertools\nimport torch\n\n\ndef one_hot(t):\n    return t\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor):\n"
        "    return one_hot(x), len(list(itertools.combinations(range(4), 2)))\n",
        "import numpy as np\n" + _HEADER + "    return np.repeat(x.numpy(), 2), np.repeat(x.numpy(), r.shape[0])\n",
        # Python-int repeats keep the size static, whatever the receiver
        "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    return load(x).repeat_interleave(2, dim=0)\n",
    )
    invalid = (
        # Hiera's MAE drops the masked units with a bool mask tiled to the tokens (GB0036)
        Example(
            "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    mask = (x.sum(-1) > 0).bool()\n"
            "    return x[mask[..., None].tile(1, 1, x.shape[2])]\n",
            fixed="import torch\n\ntorch._dynamo.config.capture_dynamic_output_shape_ops = True\n\n\n@torch.compile\n"
            "def f(x: torch.Tensor):\n    mask = (x.sum(-1) > 0).bool()\n    return x[mask[..., None].tile(1, 1, x.shape[2])]\n",
            unsafe=True,
        ),
        # ... with the mask from a helper only the MAE variant calls, `None` otherwise, tested before use
        Example(
            "import torch\n" + _MAE_MASKING,
            fixed="import torch\n\ntorch._dynamo.config.capture_dynamic_output_shape_ops = True\n" + _MAE_MASKING,
            unsafe=True,
        ),
        # DUSt3R's losses read points through the batch's `valid_mask`: a key that names a mask selects (GB0036)
        Example(
            "import torch\n\n\n@torch.compile\ndef f(pts: torch.Tensor, gt):\n"
            "    return pts[gt['valid_mask']].mean(), pts[~gt['mask0']].sum()\n",
            fixed="import torch\n\ntorch._dynamo.config.capture_dynamic_output_shape_ops = True\n\n\n@torch.compile\n"
            "def f(pts: torch.Tensor, gt):\n    return pts[gt['valid_mask']].mean(), pts[~gt['mask0']].sum()\n",
            unsafe=True,
        ),
        # VIBE's acceleration error: a NumPy boolean array traced code computes selects from an array (GB0036)
        Example(
            "import numpy as np\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    a = np.arange(6) * 1.0\n    vis = np.ones(6, dtype=bool)\n    keep = np.logical_and(a > 2, vis)\n"
            "    return x * a[keep].sum()\n",
            fixed="import numpy as np\nimport torch\n\ntorch._dynamo.config.capture_dynamic_output_shape_ops = True\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n"
            "    a = np.arange(6) * 1.0\n    vis = np.ones(6, dtype=bool)\n    keep = np.logical_and(a > 2, vis)\n"
            "    return x * a[keep].sum()\n",
            unsafe=True,
        ),
        # the read breaks inside a tensor method's arguments: the resumed call is logged again at its first line
        _switched(_HEADER + "    return x.index_select(\n        0,\n        x.nonzero()[:, 0],\n    )\n", advice=True),
        # nothing needs the size: the switch traces it (unsafe, process-wide)
        _switched(_HEADER + "    return torch.nonzero(x) * 2\n"),
        Example(
            _HEADER + "    return x[x > 0].sum()\n",
            fixed=_HEADER + "    return torch.where(x > 0, x, 0).sum()\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    valid = ~torch.isnan(x)\n    m = x[valid].mean()\n    return m * 2\n",
            fixed=_HEADER + "    valid = ~torch.isnan(x)\n    m = torch.where(valid, x, 0).sum() / valid.sum()\n"
            "    return m * 2\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    h = x.float()\n    return h[h != 0].max() + 1\n",
            fixed=_HEADER + "    h = x.float()\n    return torch.where(h != 0, h, -torch.inf).max() + 1\n",
            unsafe=True,
        ),
        Example(_HEADER + "    return x[r > 0].sum()\n"),
        _switched(_HEADER + "    return torch.nonzero(x), (x > 0).nonzero(), torch.unique(x)\n"),
        _switched(_HEADER + "    (idx,) = torch.where(x > 0)\n    return idx\n"),
        _switched(_HEADER + "    return torch.repeat_interleave(x, r), torch.bincount(r, minlength=4)\n"),
        _switched(_HEADER + "    x[x > 0] += 1\n    return x\n"),
        # the unbound method, the aten overloads, the keyword condition and a list of bools: the same operators
        _switched(
            _HEADER + "    return torch.Tensor.unique(r), torch.ops.aten.nonzero.default(x),"
            " torch.where(condition=x > 0)\n"
        ),
        _switched(_HEADER + "    return torch.ops.aten.repeat_interleave.Tensor(r), x[[True, False, True, False]]\n"),
        # NumPy results are host values: the switch is not offered for them
        Example(
            "import numpy as np\n" + _HEADER + "    return np.bincount(r.numpy()), np.repeat(x.numpy(), np.array([1, 2]))\n"
        ),
        # the sizes of what a helper returns (through another helper) decide a branch: the switch would only
        # move the break there (pytorch-metric-learning's all-pairs indices), so it is not offered
        Example(
            "import torch\n\n\ndef pairs(x):\n    rows, cols = torch.where(x > 0)\n    return rows, cols\n\n\n"
            "def convert(x):\n    return pairs(x)\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    found = convert(x)\n"
            "    if all(len(i) <= 1 for i in found):\n        return x\n    return x * 2\n"
        ),
        # the switch traces neither: advice of their own
        Example(_HEADER + "    return torch.nn.functional.one_hot(r.long()) * 2\n"),
        Example(_HEADER + "    return torch.combinations(x, r=2)\n"),
        # with `torch.combinations` in the file, the switch is declined (Dynamo raises on it)
        Example(_HEADER + "    return torch.nonzero(x), torch.combinations(x)\n"),
        # under the switch, `one_hot` still breaks
        Example(_CAPTURE + "    return torch.nonzero(x), torch.nn.functional.one_hot(r.long())\n"),
        # a parameter annotated as a bool tensor is a mask (Higgs Audio v2's audio_token_mask)
        Example(
            "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, mask: torch.BoolTensor | None = None):\n"
            "    if mask is None:\n        return x\n    mask = mask.to(x.device)\n    return x[~mask].sum()\n"
        ),
        _switched("import torch\n\n\n@torch.compile\ndef f(x, mask):\n    return x.masked_select(mask), mask.nonzero()\n"),
        # a proven mask indexes a value of unknown kind: only an array is indexed by one (no `torch.where`
        # rewrite, which would turn a NumPy array into a tensor)
        _switched(
            "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    labels = load(x)\n    return labels[x > 0]\n"
        ),
        # masks this file's helpers return, keep on the module or are passed (the masked sum is not
        # rewritten: nothing proves the mask elementwise in `x`, so `torch.where` is only shown)
        Example(
            "import torch\n\n\ndef get_mask(t: torch.Tensor):\n    return t > 0, t.shape[0]\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor, y: torch.Tensor):\n    mask, n = get_mask(y)\n    return x[mask].sum() * n\n"
        ),
        # a comparison of untyped values that later code uses as a tensor (`.unsqueeze`) makes a mask:
        # transformers' `get_placeholder_mask` (`input_ids == self.config.image_token_id`)
        _switched(
            "import torch\nfrom torch import nn\n\n\nclass Merge(nn.Module):\n    def __init__(self, config):\n"
            "        super().__init__()\n        self.config = config\n\n    def forward(self, input_ids, inputs_embeds):\n"
            "        image_mask = input_ids == self.config.image_token_id\n"
            "        image_mask = image_mask.unsqueeze(-1).expand_as(inputs_embeds)\n"
            "        return inputs_embeds[image_mask].numel()\n\n\nmodel = torch.compile(Merge(None))\n"
        ),
        _switched(
            "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('keep', torch.arange(8) % 2 == 0)\n\n    def pick(self, h: torch.Tensor, m):\n"
            "        return h[m]\n\n    def forward(self, h: torch.Tensor):\n        return h[self.keep], self.pick(h, h > 0)\n\n\n"
            "model = torch.compile(Gate())\n"
        ),
        # only arrays have these methods: the receiver, an unknown library's result, needs no typing
        _switched(
            "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    ids = load(x)\n    return ids.unique(), ids.repeat_interleave(x.long(), dim=0)\n"
        ),
        # a mask filled by `masked_fill` stays a mask; its rows select from an unknown library's items (LightGlue's
        # keypoint pruning)
        Example(
            "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x: torch.Tensor, r: torch.Tensor):\n"
            "    keep = (x > 0).masked_fill(r == 0, False)\n    return [t[k] for t, k in zip(load(x), keep)]\n"
        ),
        # an index its parameter name calls a mask selects (the dtype is not proven, so no `torch.where` rewrite):
        # Granite Speech's `audio_features[input_features_mask]`, the mask passed on from `forward`
        _switched(
            "import torch\nfrom torch import nn\n\n\nclass Speech(nn.Module):\n"
            "    def merge(self, feats: torch.Tensor, input_features_mask=None):\n"
            "        if input_features_mask is not None:\n            feats = feats[input_features_mask]\n"
            "        return feats\n\n    def forward(self, feats: torch.Tensor, input_features_mask=None):\n"
            "        return self.merge(feats, input_features_mask)\n\n\nmodel = torch.compile(Speech())\n"
        ),
        _switched("import torch\n\n\n@torch.compile\ndef f(h: torch.Tensor, mask_bool):\n    return h[mask_bool].sum()\n"),
        _switched(
            "import torch\n\n\n@torch.compile\ndef f(feats, bool_mask=None):\n"
            "    n = bool_mask.int().sum()\n    return feats[bool_mask], n\n"
        ),
        Example(
            _HEADER + "    out = []\n    for i, (row, reps) in enumerate(zip(x, r)):\n"
            "        out.append(torch.repeat_interleave(row, reps, dim=0))\n    return out\n"
        ),
        # only an array is ordered against a number and indexed by the result
        Example(
            "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, matched):\n"
            "    for row, idx in zip(x, matched):\n        keep = idx >= 0\n        x = x + row[idx[keep]].sum()\n"
            "    return x\n"
        ),
        # a mask moved to another device stays boolean; ``.bool()`` makes one of anything it is called on
        _switched(_HEADER + "    m = r.eq(2).to(x.device)\n    return x[m, :]\n"),
        _switched("import torch\n\n\n@torch.compile\ndef f(ids: torch.Tensor, am):\n    return ids[0][am[0].bool()]\n"),
        Example(
            "import numpy as np\n" + _HEADER + "    ids = np.unique(np.array([3, 1, 3]))\n    return x[: len(ids)]\n"
        ),
        Example(
            _CAPTURE + "    idx = torch.nonzero(x > 0)\n    if len(idx) == 0:\n        x = x + 1\n    return x, idx\n"
        ),
        # the switch is declined where it would only move the break: into a helper that branches on the size
        # (returned in a tuple, unpacked and passed on), or into batch norm, which guards on the batch size
        Example(
            "import torch\n\n\ndef pick(x):\n    m = x > 0\n    return x[m], m\n\n\ndef top(p, k: int):\n"
            "    if k >= len(p):\n        return p\n    return p[:k]\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n    p, m = pick(x)\n    return top(p, 3), m\n"
        ),
        Example(
            "import torch\n\n\nclass Norm(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.norm = torch.nn.BatchNorm1d(8)\n\n    def forward(self, h: torch.Tensor):\n"
            "        return self.norm(h[h.sum(-1) > 0])\n\n\nf = torch.compile(Norm())\n"
        ),
        Example(_HEADER + "    return torch.nn.functional.batch_norm(x[x > 0], None, None, training=True)\n"),
        # a helper doing tensor math, a static dimension read and LayerNorm need no concrete size: switch offered
        _switched(
            "import torch\n\n\ndef scale(p, w):\n    if w.shape[-1] > 4 and w.dim() == 2:\n        return p * 2\n    return p + 1\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor, w: torch.Tensor):\n    m = x > 0\n"
            "    return scale(x[m], w[m, :]), torch.nn.functional.layer_norm(w[m, :], w.shape[1:])\n"
        ),
    )

    @staticmethod
    def _calls_ctc_module(ctx: RuleContext, call: nodes.Call) -> bool:
        """``criterion(log_probs, targets, input_lengths, target_lengths)`` with ``criterion`` an ``nn.CTCLoss``
        wherever the file builds it (a global, ``self.criterion``; sooftware's conformer README)."""
        targets = ast_resolution(ctx.analysis).targets(call.func)
        return bool(targets) and all(t.what is What.EXTERNAL and t.name in CTC_MODULES for t in targets)

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        values = ctx.values
        captured = setting_on(values, ctx.options, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)
        if captured:
            yield from self._size_branches(ctx)

        def capture_fix() -> Fix:  # the hazard scan runs once per file (FileAnalysis.shared), on demand
            blocker = self._switch_blocker(ctx)
            if blocker is not None:
                return Fix.advice(
                    f"no fix: `torch._dynamo.config.{CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS} = True` would make Dynamo "
                    f"fail on `torch.combinations` at line {blocker.lineno} (measured)"
                )
            may_be_dynamic = self._may_be_dynamic(values)
            return (
                capture_switch_fix(ctx.analysis, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, may_be_dynamic)
                or declined_switch_advice(ctx.analysis, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, may_be_dynamic)
                or CAPTURE_DYNAMIC
            )

        builds_ctc = "CTCLoss" in ctx.analysis.source.text  # a cheap filter before module calls are resolved
        for node, traced in ctx.traced_nodes(nodes.Call, nodes.Subscript):
            if isinstance(node, nodes.Call):
                op = dynamic_operator(values, node) or ("ctc_loss" if builds_ctc and self._calls_ctc_module(ctx, node) else None)
                if op is None or (captured and op not in UNCAPTURED):
                    continue
                if op in UNCAPTURED:
                    fix = UNCAPTURED_ADVICE[op]
                else:
                    fix = dense_dispatch_fix(ctx.analysis, node) or capture_fix()
                if captured and op == "combinations":
                    message = f"`{op}` fails to compile with `{CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS}` on"
                else:
                    message = f"`{op}` has a data-dependent output size: graph break"
                yield ctx.report(node, message, traced, fix)
                yield from self._interrupted_call(ctx, node, traced)
                continue
            if captured:
                continue
            mask = boolean_index(values, node)
            found = None
            if mask is None:
                mask = named_mask_index(values, node) or self._item_mask(ctx, node)
                if mask is None:
                    continue
            elif values.is_tensor(node.value):
                # torch.where on something not provably a tensor (a NumPy array) would change what eager code returns
                found = masked_reduction(values, node)
            fix = masked_reduction_fix(ctx.analysis, found) if found is not None else None
            message = (
                f"boolean-mask indexing with `{snippet(mask)}` has a data-dependent output size: graph break"
            )
            yield ctx.report(node, message, traced, fix or capture_fix())
            yield from self._interrupted_call(ctx, node, traced)

    @staticmethod
    def _item_mask(ctx: RuleContext, subscript: nodes.Subscript) -> nodes.NodeNG | None:
        """The ``item`` of a ``__getitem__`` that indexes a tensor, when a traced read of its class passes a
        mask (:func:`item_mask_index`; detectron2's ``self.tensor[item]`` behind ``boxes[valid_mask]``)."""
        if subscript.ctx is not Context.Load or not ctx.values.is_tensor(subscript.value):
            return None

        def reads() -> list[nodes.Subscript]:
            return [node for node, _ in ctx.traced_nodes(nodes.Subscript) if node.ctx is Context.Load]

        traced = ctx.analysis.shared("gm401-traced-reads", reads)
        return subscript.slice if item_mask_index(ctx.values, subscript.slice, traced) else None

    @staticmethod
    def _switch_blocker(ctx: RuleContext) -> nodes.Call | None:
        """A traced ``torch.combinations``: with the capture switch on, Dynamo fails on it, so the switch is no fix."""

        def find() -> nodes.Call | None:
            calls = (node for node, _ in ctx.traced_nodes(nodes.Call))
            return next((c for c in calls if dynamic_operator(ctx.values, c) == "combinations"), None)

        return ctx.analysis.shared("gm401-switch-blocker", find)

    @staticmethod
    def _interrupted_call(ctx: RuleContext, node: nodes.NodeNG, traced: TracedFunction) -> Iterator[Diagnostic]:
        """The second break Dynamo logs at a tensor-method call whose arguments *node* breaks in."""
        call = interrupted_method_call(ctx.values, node)
        if call is None:
            return
        message = (
            f"`.{call.func.attrname}(...)` is called after the data-dependent break at line {node.lineno}, "
            "in a new frame: Dynamo logs a second break here (GB0007)"
        )
        yield ctx.report(call, message, traced, SECOND_BREAK)

    @staticmethod
    def _is_dynamic(values: ValueOracle) -> Callable[[nodes.NodeNG], bool]:
        """Whether a node is a data-dependent-size result: an operator call or a boolean-mask read."""

        def is_dynamic(node: nodes.NodeNG) -> bool:
            if isinstance(node, nodes.Call):
                op = dynamic_operator(values, node)
                return op is not None and op not in UNCAPTURED  # the switch never captures those
            return isinstance(node, nodes.Subscript) and boolean_index(values, node) is not None

        return is_dynamic

    @classmethod
    def _may_be_dynamic(cls, values: ValueOracle) -> Callable[[nodes.NodeNG], bool]:
        """:meth:`_is_dynamic`, or a call of one of those operators on arguments of unknown type.

        Deciding whether the capture switch is safe must not miss a capture
        because an argument is untyped (SeamlessM4T's per-sample
        ``repeat_interleave(hidden_state, duration)`` over ``zip(...)``), nor
        a read through an index its name calls a mask (``h[mask_bool]``, which
        this rule reports and offers the switch for).
        """
        is_dynamic = cls._is_dynamic(values)

        def may_be_dynamic(node: nodes.NodeNG) -> bool:
            if is_dynamic(node) or (isinstance(node, nodes.Subscript) and named_mask_index(values, node) is not None):
                return True
            func = node.func if isinstance(node, nodes.Call) else None
            name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", None)
            return name in ALWAYS_DYNAMIC or name == "repeat_interleave"

        return may_be_dynamic

    def _size_branches(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """Under ``capture_dynamic_output_shape_ops``: branch operands that read a dynamic result's size."""
        is_dynamic = self._is_dynamic(ctx.values)

        def origin_of(operand: nodes.NodeNG) -> nodes.NodeNG | None:
            return dynamic_size_origin(operand, is_dynamic)

        return report_captured_branches(
            ctx,
            origin_of,
            "the size of a data-dependent result",
            CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS,
            CAPTURED_SIZE_BRANCH,
        )
