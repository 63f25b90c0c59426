"""GM101: ``if``/``elif`` on a tensor's value."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, snippet, tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixes.predicate import is_elif, predicated_fix
from graphmend_lint.fixes.predicate_branch import if_statement
from graphmend_lint.fixes.predicate_layerdrop import layerdrop_gate
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

FIX_MESSAGE = "Select with `torch.where` instead of branching"
MESSAGE = "branch on a tensor value `{}` causes a graph break"


class TensorDependentBranch(Rule):
    """## What it does
    Flags an `if` or `elif` whose condition depends on the *value* of a tensor,
    such as `if x.sum() > 0:` or `if torch.any(mask):`. Each operand of
    `and`/`or` that is a tensor is flagged on its own, because Dynamo breaks
    once per operand.

    ## Why is this bad
    To choose a branch, Python needs a real bool, so Dynamo must run the graph
    so far, copy the result to the host and resume in a new graph. That is a
    graph break plus a device-to-host sync on every call. Branches on shapes,
    dtypes, `is None` or config flags are fine: Dynamo specialises on them.

    ## Example
    ```python
    @torch.compile
    def f(x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y
    ```

    ## Use instead
    Compute both sides and select on the device:
    ```python
    @torch.compile
    def f(x):
        y = torch.where(x.sum() > 0, x * 2, x - 1)
        return y
    ```
    or `torch.cond` when a branch calls a submodule or a function:
    ```python
    def _gm_cond_true_5(x):
        return self.expert_a(x)

    def _gm_cond_false_5(x):
        return self.expert_b(x)

    h = torch.cond(x.sum() > 0, _gm_cond_true_5, _gm_cond_false_5, (x,))
    ```

    ## Fix safety
    The fix rewrites the `if` as selects, `x = torch.where(c, a, b)`, so Dynamo
    traces both sides: when both branches assign (one `where` per name,
    `elif` chains nest), for an `else`-less update (`x = torch.where(c, f(x), x)`),
    when both branches return (tuples element-wise), when the branches end in
    the same statement (it runs once, after the select) or in the same call
    with different tensor arguments (the arguments are selected). An `elif`
    whose test is a Python value with no calls (`elif self.momentum == -1:`)
    becomes a conditional expression inside the select, `a if S else b`, so
    Python still computes only the side `S` picks.

    Module state (`self.x_min = ...`, I-BERT's running range in buffers) is
    selected like a local only when every branch assigns it: the attribute
    is then set once, as before, to `torch.where(c, a, b)`, so a buffer stays
    a buffer. Always **unsafe**: it is set through `__setattr__`, and a value
    computed from `self.<name>` is read before the rewrite sets it.

    It is **safe** only when both selected values are already-computed names,
    attributes or integer arithmetic over the same single tensor, so the dtype
    cannot change. Otherwise it is **unsafe**: both sides are now computed, which
    costs time, and a side that produced NaN or inf where it was not taken can
    now poison gradients through `where`; mixed dtypes are promoted.

    When a value the branches assign or return calls anything other than a
    torch function, a tensor method or a pure builtin (a submodule such as
    `self.expert(x)`, a method of `self`, a user function), the fix uses
    `torch.cond` instead, so only the taken side runs: two local functions
    `_gm_cond_true_<line>` / `_gm_cond_false_<line>` defined before the
    statement take the local tensors the branches read as operands and return
    the assigned names (a tuple when several) or the returned values
    (`return torch.cond(...)`). A side that keeps a name's earlier value, or
    returns an input or a possible view of one, returns a `.clone()`: cond's
    outputs may not alias its inputs. Always **unsafe**: the clone cuts the
    alias the original had; in eager mode every call re-traces the branches
    (measured about 37 ms per call with autograd on torch 2.13, so run it
    compiled); and on torch 2.13 inductor can reuse an incoming gradient
    buffer inside cond's backward, so an input that reaches the loss both
    through the cond and another path gets a wrong gradient (measured:
    `x + torch.cond(c, lambda t: t * 2, ..., (x,))` gives 4 instead of 3; set
    `torch._inductor.config.inplace_buffers = False` when training through it).

    LayerDrop (transformers' encoders and decoders while training) is the one
    `continue` that is rewritten, also in its flag forms (`to_drop = True`, then
    `if not to_drop:` or `if to_drop: <placeholders> else: <layer>`;
    `skip_the_layer = torch.rand([]) < p`, then
    `if not skip_the_layer or synced_gpus:`, which is reported even though the
    flag is `False` or a tensor), and with Python gates in the draw's own test
    (FSMT's `if self.training and (draw < p): continue`: the compiled path
    tests them too, `if torch.compiler.is_compiling() and self.training:`, so
    it never selects where the original draws nothing; each gate must be a
    plain Python value, no tensor and no call). The eager code stays as it is, behind
    `if torch.compiler.is_compiling():`, and the compiled path always runs the
    layer, then `h = torch.where(dropped, h_before, h)`. Where the layer feeds
    `if output_attentions:`-style switches, the compiled path is taken only
    while they are off (`... and not output_attentions`); with a switch on,
    the original code and its break stay, and the finding remains. Eagerly nothing changes
    (outputs, gradients, `None` gradients and the RNG stream, measured). Always
    **unsafe**, for what changes under compile: every layer runs (up to
    1/(1-p) times the layer FLOPs); a dropped layer's parameters get zero
    gradients instead of `None`, so an optimizer with weight decay or momentum
    still moves them; a dropped layer's effects (a KV-cache update) happen;
    dropout draws masks for dropped layers too, so the random stream differs
    from eager (as it does under inductor anyway). Declined unless the draw is
    `torch.rand(...) < p`, in a `for` loop, guarded by non-tensor `if`s
    without `else`, the skipped statements are assignments to names, and each
    name they pass on held a tensor before, or `None` (WavLM's `position_bias`,
    which its first layer computes and LayerDrop never skips): then the
    compiled path is taken only once the name holds a value
    (`... and position_bias is not None`, decided while tracing), and the
    layer's new value is assumed to be a tensor too, as for the others.
    `torch.cond` over the layer was
    measured and rejected: its backward re-runs the layer's dropout with new
    random numbers, so gradients differ from the outputs' (by up to 1.86 on a
    toy, eager and compiled), and in eager mode a second dropout probability
    makes its branch tracing fail ("Could not guard on data-dependent
    expression"). A plain `torch.where` runs every layer eagerly too and
    changes every later dropout mask.

    A guard around one boolean-mask fill, `if c: x[mask] = v` (FastSpeech2's
    length regulator), folds the condition into the mask under compile:
    `if torch.compiler.is_compiling(): x[mask & (c)] = v`, followed by the
    original `if`, now its `elif`, so eager code runs exactly as before.
    Offered when `mask` is provably a boolean tensor, `c` is 0-d (a full
    reduction compared with a number, so `&` keeps the mask's shape and the
    indexing still aligns it with `x`'s leading dimensions) and `v` is a
    number. Always **unsafe**, for what changes under compile: the fill
    always runs in place, writing nothing when `c` is false, so when `x` is a
    leaf that requires grad tracing fails ("a leaf Variable that requires
    grad is being used in an in-place operation", measured) where the false
    branch did not write, and `x`'s version counter moves, so a backward
    that saved `x` before the `if` fails; `mask` is computed even when `c`
    is false.

    No fix is offered (the message says why) when a branch has a side effect,
    control leaves one branch only (`return`, `raise`, `break`, `continue`),
    a value is `None` or not a tensor, a value calls something the linter
    cannot prove pure, indexes with a tensor, or reads a name the rewrite
    re-binds first. For `torch.cond`, also when a branch holds anything but
    assignments to local names (a call for its effect, `+=`, nested control
    flow), in an `elif` chain, when the two values of a name provably differ in
    shape or dtype, a name assigned on one side only had no tensor value
    before, a called function or method of this file mutates, prints, logs or
    declares `global`, a submodule was built with `inplace=True`, a branch
    closes over a local the function mutates in place, or a `.clone()` would
    cut an alias the function later mutates through.
    """

    code = "GM101"
    name = "tensor-dependent-branch"
    summary = "`if` on a tensor value splits the graph"
    dynamo_gb = gb_types("GB0170")
    valid = (
        "import torch\n\n@torch.compile\ndef f(x):\n    if x.shape[0] > 1:\n        x = x * 2\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n",
        "import torch\n\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n",
        # Dynamo folds ``torch.jit.is_tracing()`` to False: ``k`` is 3 under compile (measured)
        "import torch\n\n@torch.compile\ndef f(x):\n    k = x.sum() if torch.jit.is_tracing() else 3\n"
        "    if k > 2:\n        x = x * 2\n    return x\n",
        # the same through a name: ``not is_compiling`` is False, so the ``and`` never tests the tensor
        # (physical-ai-studio's normalizer check; measured: no break)
        "import torch\n\n@torch.compile\ndef f(x):\n    is_compiling = torch.compiler.is_compiling()\n"
        "    if not is_compiling and torch.isinf(x).any():\n        raise ValueError('inf')\n    return x\n",
        # a tensor on one path, a Python value (`0`, a `.tolist()` conversion) on another: unknown, quiet
        "import torch\n\n\n@torch.compile\ndef f(x, pad):\n    extra = 0\n    if x.shape[-1] <= 2:\n"
        "        extra = pad.max()\n    if extra > 0:\n        x = x * 2\n    return x\n",
        "import torch\n\n\ndef unpad(x, size):\n    if not isinstance(size, (list, tuple)):\n"
        "        size = size.tolist()\n    height, width = size\n    if height > width:\n"
        "        x = x[:, :width]\n    return x\n\n\n@torch.compile\ndef f(x, size):\n"
        "    return unpad(x, size)\n",
    )
    invalid = (
        # metaseq: under `mask is None` the old value torch.where would keep is None, so no select is offered
        Example(
            "import torch\n\n@torch.compile\ndef f(tokens: torch.Tensor, mask=None):\n    if (\n"
            "        mask is None\n        and tokens.eq(0).any()\n    ):\n        mask = tokens.eq(0)\n"
            "    return tokens, mask\n"
        ),
        # both branches overwrite the parameter with a tensor: its default no longer reaches the test
        Example(
            "import torch\n\n@torch.compile\ndef f(x, limit=200):\n    if limit < 0:\n        limit = x.max()\n"
            "    else:\n        limit = torch.clamp(x.max(), max=limit)\n    if limit > 0:\n        x = x * 2\n    return x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, limit=200):\n    if limit < 0:\n        limit = x.max()\n"
            "    else:\n        limit = torch.clamp(x.max(), max=limit)\n    x = torch.where(limit > 0, x * 2, x)\n    return x\n",
        ),
        # the items of a list built from tensors, and a tuple of tensors every caller passes, are tensors
        Example(
            "import torch\n\n@torch.compile\ndef f(x, sizes):\n    m = x.max()\n    for p in [m - s for s in tuple(sizes)]:\n"
            "        if p > 0:\n            x = x + 1\n    return x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, sizes):\n    m = x.max()\n    for p in [m - s for s in tuple(sizes)]:\n"
            "        x = torch.where(p > 0, x + 1, x)\n    return x\n",
        ),
        Example(
            "import torch\n\ndef pad_right(x, paddings):\n    left, right = paddings\n    if right > 0:\n        x = x * 2\n"
            "    return x\n\n@torch.compile\ndef f(x):\n    return pad_right(x, (x.min(), x.max()))\n",
            fixed="import torch\n\ndef pad_right(x, paddings):\n    left, right = paddings\n    x = torch.where(right > 0, x * 2, x)\n"
            "    return x\n\n@torch.compile\ndef f(x):\n    return pad_right(x, (x.min(), x.max()))\n",
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    x = torch.where(x.sum() > 0, x * 2, x)\n    return x\n",
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    if x.mean() > 0:  # positive\n        y = x.relu()\n"
            "    else:\n        y = x.sigmoid()\n    return y\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    # positive\n"
            "    y = torch.where(x.mean() > 0, x.relu(), x.sigmoid())\n    return y\n",
            unsafe=True,
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    y = x.max()\n    if y > 3 and x.mean() < 0:\n        return x\n    return -x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    y = x.max()\n    return torch.where((y > 3) & (x.mean() < 0), x, -x)\n",
        ),
        # LayerDrop: the eager `continue` stays; compiled, the layer runs and `where` drops it
        Example(
            "import torch\n\n@torch.compile\ndef f(x, layers, p):\n    h = torch.relu(x)\n    for layer in layers:\n"
            "        if torch.rand([]) < p:\n            continue\n        h = layer(h)\n    return h\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, layers, p):\n    h = torch.relu(x)\n    for layer in layers:\n"
            "        _gm_dropped = None\n        if torch.compiler.is_compiling():\n"
            "            _gm_dropped = torch.rand([]) < p\n            _gm_kept_h = h\n"
            "        elif torch.rand([]) < p:\n            continue\n        h = layer(h)\n"
            "        if _gm_dropped is not None:\n            h = torch.where(_gm_dropped, _gm_kept_h, h)\n    return h\n",
            unsafe=True,
        ),
        # LayerDrop gated in its own test: the compiled path tests the Python gate too
        Example(
            "import torch\n\n@torch.compile\ndef f(x, layers, p, training):\n    h = torch.relu(x)\n    for layer in layers:\n"
            "        d = torch.rand([])\n        if training and (d < p):\n            continue\n        h = layer(h)\n    return h\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, layers, p, training):\n    h = torch.relu(x)\n    for layer in layers:\n"
            "        d = torch.rand([])\n        _gm_dropped = None\n        if torch.compiler.is_compiling() and training:\n"
            "            _gm_dropped = d < p\n            _gm_kept_h = h\n"
            "        elif training and (d < p):\n            continue\n        h = layer(h)\n"
            "        if _gm_dropped is not None:\n            h = torch.where(_gm_dropped, _gm_kept_h, h)\n    return h\n",
            unsafe=True,
        ),
        # declined: a gate of the draw is a tensor, which the compiled path cannot test
        Example(
            "import torch\n\n@torch.compile\ndef f(x, layers, p):\n    h = torch.relu(x)\n    for layer in layers:\n"
            "        d = torch.rand([])\n        if h.sum() > 0 and (d < p):\n            continue\n        h = layer(h)\n    return h\n"
        ),
        # module state set in every branch; the `elif` on a Python value stays a Python choice
        Example(
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self, momentum=0.9):\n"
            "        super().__init__()\n        self.momentum = momentum\n        self.low = nn.Buffer(torch.zeros(1))\n\n"
            "    def forward(self, x):\n        if self.low.min() == 0:\n            self.low = self.low + x.min()\n"
            "        elif self.momentum < 0:\n            self.low = torch.min(self.low, x.min())\n        else:\n"
            "            self.low = self.low * self.momentum\n        return x - self.low\n\n\nmodel = torch.compile(M())\n",
            fixed="import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self, momentum=0.9):\n"
            "        super().__init__()\n        self.momentum = momentum\n        self.low = nn.Buffer(torch.zeros(1))\n\n"
            "    def forward(self, x):\n        self.low = torch.where(\n            self.low.min() == 0,\n"
            "            self.low + x.min(),\n            (torch.min(self.low, x.min()) if self.momentum < 0 else self.low * self.momentum),\n"
            "        )\n        return x - self.low\n\n\nmodel = torch.compile(M())\n",
            unsafe=True,
        ),
        # declined: the `continue` skips a statement that is not an assignment
        Example(
            "import torch\n\n@torch.compile\ndef f(x, layers, p, seen):\n    h = torch.relu(x)\n    for layer in layers:\n"
            "        if torch.rand([]) < p:\n            continue\n        seen.append(layer)\n        h = layer(h)\n"
            "    return h\n"
        ),
        # a guard around a boolean-mask fill: folded into the mask under compile, eager code kept
        Example(
            "import torch\n\n@torch.compile\ndef f(x, d):\n    if d.sum() == 0:\n        d[d.sum(dim=1).eq(0)] = 1\n"
            "    return x * d\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, d):\n    if torch.compiler.is_compiling():\n"
            "        d[d.sum(dim=1).eq(0) & (d.sum() == 0)] = 1\n    elif d.sum() == 0:\n        d[d.sum(dim=1).eq(0)] = 1\n"
            "    return x * d\n",
            unsafe=True,
        ),
        # declined (display-only): no tensor to select on one side
        Example("import torch\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        return None\n    return x\n"),
        # a predicate that returns `False` early and a tensor's verdict after (transformers' `_is_packed_sequence`);
        # display-only: on the early path the test is a Python bool, which `torch.where` does not take
        Example(
            "import torch\n\n\ndef is_packed(positions, batch_size):\n"
            "    if positions is None or batch_size != 1:\n        return False\n"
            "    return (positions.diff() != 1).any()\n\n\n@torch.compile\ndef f(x, positions):\n"
            "    if is_packed(positions, x.shape[0]):\n        x = x * 2\n    return x\n"
        ),
        # a parameter the function only ever rebinds to a tensor (Mamba's `cache_position`) is one
        Example(
            "import torch\n\n\ndef prepare(ids, cache_position=None):\n    if cache_position is not None:\n"
            "        if cache_position[0] > 0:\n            ids = ids[:, -1:]\n    else:\n"
            "        cache_position = torch.arange(ids.shape[1])\n    return ids, cache_position\n\n\n"
            "@torch.compile\ndef f(ids, cache_position):\n"
            "    return prepare(ids, cache_position=cache_position)\n"
        ),
        # a `bool` annotation that every call site contradicts with a tensor (transformers' generate loop)
        Example(
            "import torch\n\n\ndef keep_going(finished: bool) -> bool:\n    if finished:\n"
            "        return False\n    return True\n\n\n@torch.compile\ndef f(x):\n    x = x + 1\n"
            "    return x, keep_going((x > 3).all())\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.If):
            if only_raises(node.body) and not node.orelse:
                continue  # GM104's case
            parts = tensor_condition_parts(ctx.values, node.test)
            gate = None if parts else layerdrop_gate(ctx.values, node)
            if not parts and gate is None:
                continue
            fix = None if is_elif(ctx.analysis, node) else predicated_fix(ctx.analysis, if_statement, node, FIX_MESSAGE)
            if gate is not None:  # the flag is a tensor only where the draw ran: the draw's gates are the finding's
                operand, draw = gate
                yield ctx.report(operand, MESSAGE.format(snippet(operand)), traced, fix, gate_at=draw)
            else:
                yield from ctx.report_condition(parts, MESSAGE, traced, fix)
