"""GM401: operators whose output shape depends on tensor data."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.captured_values import dynamic_size_origin
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.dynamo_settings import CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, setting_on
from graphmend_lint.analysis.host_values import (
    compares_itself_with_number,
    is_bool_tensor,
    is_likely_mask,
    mask_named_parameter,
)
from graphmend_lint.analysis.resumed_calls import interrupted_method_call
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.capture_switch import capture_switch_fix, declined_switch_advice
from graphmend_lint.fixes.shape_dispatch import dense_dispatch_fix
from graphmend_lint.fixes.shape_masked import masked_reduction, masked_reduction_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption, switch_example, with_switch
from graphmend_lint.rules.captured_branch import report_captured_branches
from graphmend_lint.rules.gb_types import gb_types

CAPTURE_DYNAMIC = Fix.advice(
    (
        "no source fix: `torch._dynamo.config.capture_dynamic_output_shape_ops = True` traces it with an "
        "unbacked output size (the host sync stays, later code must not branch on that size, and some "
        "backends fall back)"
    ),
)
#: Operators (as torch functions and tensor methods) whose output size is data-dependent.
ALWAYS_DYNAMIC = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"})
#: NumPy functions Dynamo traces as those operators (``torch._numpy``), on arrays and Python lists alike.
NUMPY_DYNAMIC = frozenset({"unique", "nonzero", "flatnonzero", "argwhere"})
SECOND_BREAK = Fix.advice("no fix of its own: it goes with the data-dependent break it follows")
CAPTURED_SIZE_BRANCH = Fix.advice(
    "no automatic fix: branch on a static bound instead (pad to a fixed size, or mask), "
    "or decide outside the compiled function",
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, r: torch.Tensor):\n"
_CAPTURE = with_switch(_HEADER, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)


def _switched(source: str, advice: bool | None = None) -> Example:
    return switch_example(source, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, advice)


def _is_tensor_argument(values: ValueOracle, call: nodes.Call, index: int, keyword: str) -> bool:
    for kw in call.keywords or []:
        if kw.arg == keyword:
            return values.is_tensor(kw.value)
    return len(call.args) > index and values.is_tensor(call.args[index])


def dynamic_operator(values: ValueOracle, call: nodes.Call) -> str | None:
    """The name of the data-dependent-shape operator *call* invokes, else ``None``."""
    keywords = {kw.arg for kw in call.keywords or []}
    name = values.qualified_name(call.func) or ""
    func = call.func
    if name.startswith("numpy.") and name.count(".") == 1:
        op = name.split(".")[1]
        if op in NUMPY_DYNAMIC:
            return f"np.{op}"
        return "np.where" if op == "where" and len(call.args) == 1 and not keywords else None
    if name.startswith("torch.") and name.count(".") == 1:
        op, receiver_offset = name.split(".")[1], 1  # torch.op(input, ...)
    elif isinstance(func, nodes.Attribute) and (values.is_tensor(func.expr) or values.array_method(func)):
        # input.op(...), also on a receiver of unknown kind when only arrays have the method
        op, receiver_offset = func.attrname, 0
    else:
        return None
    if op in ALWAYS_DYNAMIC:
        return op
    if op == "where" and receiver_offset and len(call.args) == 1 and not keywords:
        return "where"  # torch.where(condition) is nonzero(condition, as_tuple=True)
    if op == "repeat_interleave" and "output_size" not in keywords:
        if receiver_offset and len(call.args) == 1 and not keywords:
            return op if values.is_tensor(call.args[0]) else None  # repeat_interleave(repeats)
        return op if _is_tensor_argument(values, call, receiver_offset, "repeats") else None
    return None


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
            (part for part in parts if compares_itself_with_number(subscript.value, part) or is_bool_tensor(values, part)),
            None,
        )
    return next((part for part in parts if is_bool_tensor(values, part)), None)


def named_mask_index(values: ValueOracle, subscript: nodes.Subscript) -> nodes.NodeNG | None:
    """The mask in a tensor read ``x[mask]`` whose index only its parameter name calls a mask, or that
    joins a mask with tensors of unknown dtype (``(mol_type == 0) & attention_mask``, :func:`is_likely_mask`).

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
    return next(
        (
            part
            for part in parts
            if (mask_named_parameter(values, part) or is_likely_mask(values, part))
            and (container_is_tensor or values.is_tensor(part))
        ),
        None,
    )


class DataDependentOutputShape(Rule):
    """## What it does
    Flags operators whose output size depends on the values in a tensor:
    `torch.nonzero` / `.nonzero()`, `torch.argwhere`, boolean-mask indexing
    `x[mask]` (read, or `x[mask] += v`; the mask a comparison, a `.bool()`,
    `torch.full(size, True)`, `torch.tensor([True, False])`, a
    `torch.BoolTensor` parameter, a row of one or an item of a list or tuple
    of them that a loop takes (`for keep in masks:`), one of those
    reshaped, flipped, repeated, moved or joined (`torch.cat` of masks) or
    updated in place (`valid &= w > 0`: in place, a tensor keeps its dtype),
    one of those reached through this file:
    returned by a helper (`mask, n = self.get_mask(ids)`), kept on `self` or
    registered as a buffer, or a parameter every call of which passes one;
    or a parameter whose name says boolean
    mask: `mask_bool`, `bool_mask`; a bare `mask` may be an integer index;
    or one of those masks joined by `&`, `|` or `^` with tensors of unknown
    dtype, `(mol_type == 0) & attention_mask`: an integer operand would make a
    0/1 index that gathers rows 0 and 1, which no code means); also `x[x >= 0]` on an `x` of
    unknown type, since only an array is ordered against a number and
    indexed by the result, and `x[m]` on an `x` of unknown type with `m`
    one of the boolean masks above, since only an array is indexed by a
    mask, a list raises), `torch.masked_select`,
    `torch.unique` / `unique_consecutive`, single-argument `torch.where(c)`,
    `torch.repeat_interleave` with tensor repeats and no `output_size`,
    `torch.bincount` (even with `minlength`), and their NumPy spellings
    `np.unique`, `np.nonzero`, `np.flatnonzero`, `np.argwhere` and
    single-argument `np.where(c)`, which Dynamo traces as the torch operators
    (on arrays and on Python lists alike). `.nonzero()`, `.argwhere()`,
    `.masked_select()`, `.unique()`, `.unique_consecutive()`, `.bincount()`
    and `.repeat_interleave(t)` with tensor repeats are flagged on any
    receiver not known to be a plain Python value: of what compiled code
    meets, only tensors have them (NumPy arrays have `.nonzero()` too, which
    breaks the same way, measured), unless a class of the same file defines
    a method of that name.

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

    Everything else is display-only.

    ## Captured output shapes
    With `torch._dynamo.config.capture_dynamic_output_shape_ops = True` (set
    at module level in the file, or the rule option
    `capture-dynamic-output-shape-ops = true`) Dynamo traces all of these
    operators with an unbacked output size: they no longer break (measured,
    torch 2.13), and the sync stays. A branch on the *size* of the result
    (`if len(idx) == 0:`, `if sel.numel() > 0:`, `idx.shape[0] > 2`) still
    breaks (GB0170), at the branch: in that mode the rule reports those
    branch operands instead, with advice only.
    """

    code = "GM401"
    name = "data-dependent-output-shape"
    summary = "an operator whose output size depends on tensor data splits the graph"
    dynamo_gb = gb_types("GB0036", "GB0170", "GB0007")
    options = {
        "capture-dynamic-output-shape-ops": RuleOption(
            False, "the program turns `capture_dynamic_output_shape_ops` on somewhere the linter cannot see"
        )
    }
    valid = (
        _HEADER + "    x[x < 0] = 0\n    return x[r.argsort()], torch.where(x > 0, x, 0)\n",
        _HEADER + "    y = torch.repeat_interleave(x, 2)\n    return y, torch.repeat_interleave(x, r, output_size=8)\n",
        _HEADER + "    idx = r.long()\n    return x[idx], x[:, 0], x.nonzero_static(size=4)\n",
        _HEADER + "    idx = r.eq(2).to(torch.long)\n    return x[idx.to(x.device)]\n",
        "import torch\n\n\ndef f(x):\n    return x[x > 0].sum(), torch.nonzero(x)\n",
        _CAPTURE + "    idx = torch.nonzero(x > 0)\n    return x[x > 0].sum() + len(idx), torch.unique(r)\n",
        # a name is evidence only for an unannotated (or ``torch.Tensor``) parameter that indexes as it came in
        "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, mask, input_mask, mask_bool: torch.LongTensor, bool_mask):\n"
        "    bool_mask = bool_mask.long()\n    x[mask] = 0\n    return x[mask], x[input_mask], x[mask_bool], x[bool_mask]\n",
        # a method a class of this file defines too: the receiver may be one of its instances
        "import torch\nfrom elsewhere import load\n\n\nclass Vocab:\n    def unique(self):\n        return self\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor):\n    return x * len(load().unique())\n",
        # a helper's integer index gathers (static size)
        "import torch\n\n\ndef get_index(t: torch.Tensor):\n    return (t > 0).long(), t.shape[0]\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor, y: torch.Tensor):\n    idx, n = get_index(y)\n    return x[idx] * n\n",
        # Python-int repeats keep the size static, whatever the receiver
        "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    return load(x).repeat_interleave(2, dim=0)\n",
    )
    invalid = (
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
        # an index its parameter name calls a mask selects (the dtype is not proven, so no `torch.where` rewrite)
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

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        values = ctx.values
        if setting_on(values, ctx.options, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS):
            yield from self._size_branches(ctx)
            return
        def capture_fix() -> Fix:  # the hazard scan runs once per file (FileAnalysis.shared), on demand
            may_be_dynamic = self._may_be_dynamic(values)
            return (
                capture_switch_fix(ctx.analysis, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, may_be_dynamic)
                or declined_switch_advice(ctx.analysis, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, may_be_dynamic)
                or CAPTURE_DYNAMIC
            )

        for node, traced in ctx.traced_nodes(nodes.Call, nodes.Subscript):
            if isinstance(node, nodes.Call):
                op = dynamic_operator(values, node)
                if op is not None:
                    fix = dense_dispatch_fix(ctx.analysis, node) or capture_fix()
                    message = f"`{op}` has a data-dependent output size: graph break"
                    yield ctx.report(node, message, traced, fix)
                    yield from self._interrupted_call(ctx, node, traced)
                continue
            mask = boolean_index(values, node)
            found = None
            if mask is None:
                mask = named_mask_index(values, node)
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
                return dynamic_operator(values, node) is not None
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
