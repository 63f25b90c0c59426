"""GM404: indexing with a 0-d tensor (``emb.weight[logits.argmax()]``)."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.lookup import loops_around
from graphmend_lint.analysis.module_attributes import is_tensor_like
from graphmend_lint.analysis.python_sequences import python_sequence
from graphmend_lint.analysis.values import Kind
from graphmend_lint.analysis.zero_dim import zero_dim_element, zero_dim_position
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.index_select import index_select_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.break_sites import BreakFinder, break_finder
from graphmend_lint.rules.gb_types import gb_types

ZERO_DIM_INDEX = Fix.advice(
    "no automatic fix: index with a one-element tensor (`x[i.reshape(1)].squeeze(0)`, a gather the graph keeps; "
    "a copy, not a view), or pass the index in as a Python int"
)
SEQUENCE_INDEX = Fix.advice(
    "no source fix: keep the lookup outside the compiled function (decode after it returns), "
    "or turn the sequence into a tensor and index that"
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, table: torch.Tensor):\n"


class ZeroDimTensorIndex(Rule):
    """## What it does
    Flags indexing a tensor (or a value of unknown kind: a list or an array breaks
    the same way) with a 0-d tensor, `x[i]` where `i` is the result
    of `t.argmax()` / `t.argmin()` (or `torch.argmax(t)`) over the whole
    tensor, directly or through a variable, in code that `torch.compile`
    traces. The typical case is greedy decoding: `emb.weight[logits.argmax()]`.
    Also any other reduction over the whole tensor (`mask.sum()`, `t.max()`,
    `torch.count_nonzero(m)`), a `.long()` / `.to(device)` of one, or one
    with Python ints added (`x[mask.sum() - 1]`): each is a 0-d tensor, and
    indexing with it breaks the same way (measured on torch 2.13, GB0033).
    So does an item of a row of `torch.nonzero(m)`, `torch.argwhere(m)` or
    `torch.cartesian_prod(a, b)` (`for i in ind:` then `i[0]`, or `for r, c
    in ind:`; open-unmix's channel pairs), a position from `zip(*m.nonzero(
    as_tuple=True))` (xformers' block-sparse `_to_dense`, also under
    `enumerate`), one position of a multi-axis index (`Q[i[0], i[1]]`,
    vissl's Sinkhorn-Knopp), and the same index in an assignment (`x[i] =
    0`, `x[i] += 1`; measured, GB0033). So does an item of any provably
    1-d tensor: `order[-1]` for `order = torch.arange(n)`, and each step of
    a loop over one, also passed on as the argument every call of a function
    in the file gives (diffusers' samplers: `for t in
    self.scheduler.timesteps:` over `torch.arange(...).flip(0)`, then
    `self.alphas_cumprod[timestep]` in `step`; measured, GB0033). A tensor
    is 1-d when it comes from `arange`, `linspace`, `logspace`, `randperm`,
    `torch.tensor` of a flat list, `flatten()` or `view(-1)`, and stays so
    through slices, flips, casts, scans and arithmetic with Python numbers;
    the rows of a 2-d tensor are 1-d, and index as a gather. So is the
    position `index[i]` in `for i in range(k)` when `index` holds the
    positions of a `topk(x, k)` along the last dim with the same `k`
    (Autoformer's delay aggregation, `mean_value[:, index[i]]`; GB0033,
    measured): stepping the first dim as far as the top `k` reads a 1-d
    result. An assignment in a loop whose value
    breaks first is not reported: after that break Dynamo runs the function
    eagerly, and the store is never traced.

    ## Why is this bad
    A 0-d integer tensor used as an index goes through `__index__`, which
    copies it to a Python int. Dynamo cannot trace that copy: it ends the
    graph, syncs with the device and resumes in a new one (GB0033, "Data
    dependent operator"). Indexing with a 1-d integer tensor (`x[idx]`) is
    traced and is not flagged.

    A Python tuple, list or string indexed by a tensor (`self.labels[i]`
    with `i` an element of a tensor, as torchaudio's `GreedyCTCDecoder`
    decodes) is flagged too: the index goes through `__index__` the same
    way, and Dynamo breaks with GB0124 (measured). Only when the sequence is
    provably one (a literal, or a name, `self` attribute or parameter only
    ever given one in this module, a parameter annotated `list` / `tuple` /
    `str` (`List[...]`, `Optional[...]` of one), a call of a function of this
    file that returns one, `torch.jit.annotate(List[T], [])`): a dict
    indexed by a tensor hashes it.

    ## Example
    ```python
    @torch.compile
    def next_embedding(logits, table):
        token = logits.argmax()
        return table[token]
    ```

    ## Use instead
    ```python
    @torch.compile
    def next_embedding(logits, table):
        token = logits.argmax()
        return table.index_select(0, token.reshape(1)).squeeze(0)
    ```

    ## Fix safety
    `x[i]` becomes `x.index_select(0, i.reshape(1)).squeeze(0)`: same shape,
    dtype and values. The fix is **unsafe**: `x[i]` is a view of `x`, the
    gather a copy, so an in-place write through the result no longer changes
    `x`; an out-of-range index raises `RuntimeError` instead of `IndexError`.
    Negative indices would differ (`index_select` rejects them), so the fix is
    offered only for `argmax`/`argmin` positions, which are never negative;
    other 0-d indices get a display-only hint.
    A Python sequence indexed by a tensor gets a display-only hint.
    """

    code = "GM404"
    name = "zero-dim-tensor-index"
    summary = "indexing with a 0-d tensor copies it to a Python int and splits the graph"
    dynamo_gb = gb_types("GB0033", "GB0124")
    valid = (
        _HEADER + "    idx = x.argmax(-1)\n    return table[idx], table[x.argsort()], table[0]\n",
        "import torch\n\n\ndef f(x, table):\n    return table[x.argmax()]\n",
        # a 0-d index a frame resumed after a break receives: no break (measured)
        _HEADER + "    count = (x > 0).sum()\n    print(count)\n    return table[count]\n",
        # a reduction along a dim keeps the other dims: not provably 0-d, so quiet
        _HEADER + "    n = x.long().sum(0)\n    return table[n - 1], table[x.max(-1).indices], table[x.shape[0] - 1]\n",
        # the rows of a top k along dim 0, or a loop as long as another count: not provably 0-d positions
        _HEADER + "    index = torch.topk(x, 2, dim=0)[1]\n    return [table[:, index[i]] for i in range(2)]\n",
        _HEADER + "    index = torch.topk(x, 2)[1]\n    return [table[:, index[i]] for i in range(3)]\n",
        # a mapping hashes a tensor key
        _HEADER + "    names = {0: 'a'}\n    return names[x.argmax()], ('a', 'b')[0]\n",
    )
    invalid = (
        Example(
            _HEADER + "    token = x.argmax()\n    return table[token] * 2\n",
            fixed=_HEADER
            + "    token = x.argmax()\n    return table.index_select(0, token.reshape(1)).squeeze(0) * 2\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    return table[torch.argmin(x)]\n",
            fixed=_HEADER + "    return table.index_select(0, torch.argmin(x).reshape(1)).squeeze(0)\n",
            unsafe=True,
        ),
        # torchaudio's GreedyCTCDecoder: each element of a tensor indexes the labels tuple (GB0124)
        Example(
            "import torch\n\nLABELS = ('-', 'a', 'b')\n\n\nclass Decoder(torch.nn.Module):\n"
            "    def __init__(self, labels):\n        super().__init__()\n        self.labels = labels\n\n"
            "    def forward(self, emission):\n        indices = torch.unique_consecutive(emission.argmax(-1))\n"
            "        return ''.join([self.labels[i] for i in indices])\n\n\n"
            "decoder = torch.compile(Decoder(labels=LABELS))\n"
        ),
        Example(_HEADER + "    sizes = [2, 3, 4]\n    return x * sizes[table[0]]\n"),
        # OSTrack's heatmap: a helper given torch.arange(n) steps through it with range (GB0033, measured)
        Example(
            "import torch\n\n\ndef paint(fmap, classes):\n    for i in range(classes.shape[0]):\n"
            "        channel = classes[i]\n        fmap[channel].add_(1.0)\n\n\n@torch.compile\n"
            "def f(x: torch.Tensor):\n    paint(x, torch.arange(x.shape[0]).to(torch.long))\n    return x\n"
        ),
        # Autoformer's delay aggregation: each of the top-k positions along the last dim (GB0033, measured)
        Example(
            _HEADER + "    k = 2\n    index = torch.topk(x.mean(0), k, dim=-1)[1]\n"
            "    return torch.stack([table[:, index[i]] for i in range(k)], dim=-1)\n"
        ),
        Example(_HEADER + "    _, index = torch.topk(x.mean(0), 2)\n    return [table[:, index[i]] for i in range(2)]\n"),
        # the last selected row: a full reduction, with a Python int taken off (GB0033, measured)
        Example(_HEADER + "    count = (x > 0).sum()\n    return table[count - 1], table[torch.count_nonzero(x).long() % 4]\n"),
        # vissl's Sinkhorn-Knopp: the positions of infinite entries, written one by one (GB0033, measured)
        Example(_HEADER + "    ind = torch.nonzero(torch.isinf(x))\n    for i in ind:\n        x[i[0], i[1]] = 0\n    return x\n"),
        Example(_HEADER + "    for r, c in x.nonzero():\n        table[r] += c\n    x[x.argmax()] = 0\n    return x\n"),
        # torchaudio's RNN-T beam search reorders its hypotheses by a tensor of sorted positions
        Example(
            "import torch\nfrom typing import List\n\n\n@torch.compile\ndef f(hypos: List[tuple], scores: torch.Tensor):\n"
            "    _, order = scores.sort()\n    return [hypos[i] for i in order]\n"
        ),
        # labels passed in from an unseen caller: a list or tuple breaks (GB0124), so does a tensor (GB0033; measured)
        Example(
            "import torch\n\n\nclass Decoder(torch.nn.Module):\n    def __init__(self, labels):\n        super().__init__()\n"
            "        self.labels = labels\n\n    def forward(self, x):\n        return self.labels[x.argmax()]\n\n\n"
            "model = torch.compile(Decoder(make_labels()))\n"
        ),
        # SR-GNN's session scores: a lambda called per step of an `arange`, on the output of an untyped model
        # (GB0033 at the lambda, measured)
        Example(
            "import torch\n\n\n@torch.compile\ndef f(model, items, alias_inputs):\n    hidden = model(items)\n"
            "    get = lambda i: hidden[i][alias_inputs[i]]\n"
            "    return torch.stack([get(i) for i in torch.arange(len(alias_inputs)).long()])\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        values = ctx.values
        breaks = break_finder(ctx)
        for subscript, traced in ctx.traced_nodes(nodes.Subscript):
            index = subscript.slice
            if subscript.ctx is Context.Load and values.is_tensor(index) and python_sequence(values, subscript.value):
                message = (
                    f"indexing the Python sequence `{snippet(subscript.value)}` with the tensor `{snippet(index)}` "
                    "copies it to a Python int: graph break and host sync"
                )
                yield ctx.report(subscript, message, traced, SEQUENCE_INDEX)
                continue
            tensor = is_tensor_like(values, subscript.value)
            if not tensor and values.kind(subscript.value) is not Kind.UNKNOWN:
                continue  # a value known to be no tensor (a dict may take a tensor key)
            element = zero_dim_element(values, index)
            if element is None or breaks.resumed_input(element):
                continue  # a 0-d tensor a resumed frame receives: Dynamo specialises on it (measured: no break)
            if _stored_after_a_break_in_a_loop(breaks, subscript):
                continue
            message = (
                f"indexing with the 0-d tensor `{snippet(element)}` copies it to a Python int: graph break and host sync"
            )
            rewritable = tensor and subscript.ctx is Context.Load and element is index and zero_dim_position(values, index)
            fix = index_select_fix(ctx.analysis, subscript, index) if rewritable else ZERO_DIM_INDEX
            yield ctx.report(subscript, message, traced, fix)


def _stored_after_a_break_in_a_loop(breaks: BreakFinder, subscript: nodes.Subscript) -> bool:
    """``t[i] = value`` in a loop, where computing *value* breaks first: after a break in a loop Dynamo runs
    the function eagerly, so the store never reaches it (open-unmix's ``Cj[:, :, index[0], ...] =
    _mul_add(y_j[:, :, index[0], :], ...)`` logs GB0033 on the value's line only, measured)."""
    statement = subscript.parent
    if not (isinstance(statement, nodes.Assign) and subscript in statement.targets):
        return False
    if breaks.breaking_node(statement.value) is None and breaks.breaking_call(statement.value) is None:
        return False
    return next(loops_around(statement), None) is not None
