"""Small programs and the lines Dynamo logs their breaks at (torch 2.13.0, CPython 3.11, measured).

Shared by ``test_break_sites.py`` (the linter's findings start on exactly
these lines) and ``test_break_sites_dynamo.py`` (Dynamo still logs exactly
these lines). Each program defines ``f(x, y)``; the measurement calls it with
``x`` and ``y`` all positive, all negative and random, so every branch runs.
Lines count from the top of the program, header included. A program with no
line is a near miss: code that looks like a tensor branch, a host sync, NumPy
on Python values or a comprehension Dynamo compiles on its own, which Dynamo
traces without a break, so the linter must stay quiet on it too.
"""

from __future__ import annotations

HEADER = "import logging, sys, warnings\nimport torch\nlogger = logging.getLogger('t')\n\n"  # f starts on line 5
#: What the near misses below import after the header (on lines 5-8).
IMPORTS = "import math\nimport numpy as np\nfrom torch import nn\n\n"

#: name -> (body, lines Dynamo logs in this file)
PROGRAMS: dict[str, tuple[str, set[int]]] = {
    # jumps: a comparison breaks at its own line, each operand of and/or on its own
    "and-over-two-lines": ("def f(x, y):\n    if (x.sum() > 0\n            and y.sum() > 0):\n        x = x + 1\n    return x * 2\n", {6, 7}),
    "or-over-two-lines": ("def f(x, y):\n    if (x.sum() > 0 or\n            y.sum() > 0):\n        x = x + 1\n    return x * 2\n", {6, 7}),
    "static-operand-first": ("def f(x, y):\n    if (x.shape[0] > 2\n            and x.sum() > 0\n            and y.sum() > 0):\n        x = x + 1\n    return x * 2\n", {7, 8}),
    "comparison-below-if": ("def f(x, y):\n    if (\n        x.sum() > 0\n    ):\n        x = x + 1\n    return x * 2\n", {7}),
    "comparison-split": ("def f(x, y):\n    if (x.sum()\n            > 0):\n        x = x + 1\n    return x * 2\n", {6}),
    "elif-comparison": ("def f(x, y):\n    if x.shape[0] > 100:\n        x = x + 1\n    elif (x.sum()\n          > 0):\n        x = x - 1\n    return x * 2\n", {8}),
    "while-comparison": ("def f(x, y):\n    while (x.sum()\n            > 100):\n        x = x / 2\n    return x * 2\n", {6}),
    "ternary-comparison": ("def f(x, y):\n    z = (x + 1\n         if x.sum() > 0\n         else x - 1)\n    return z * 2\n", {7}),
    # any other operand jumps at the keyword (or the conditional expression's start), `not` folded in
    "name-below-if": ("def f(x, y):\n    m = x.sum() > 0\n    if (\n            m):\n        x = x + 1\n    return x * 2\n", {7}),
    "call-below-if": ("def f(x, y):\n    if (\n            x.sum()):\n        x = x + 1\n    return x * 2\n", {6}),
    "method-split-in-if": ("def f(x, y):\n    if (x\n            .any()):\n        x = x + 1\n    return x * 2\n", {6}),
    "not-below-if": ("def f(x, y):\n    if (not\n            (x > 0).any()):\n        x = x + 1\n    return x * 2\n", {6}),
    "and-not-operand": ("def f(x, y):\n    if (x.sum() > 0 and\n            not (y > 0).any()):\n        x = x + 1\n    return x * 2\n", {6}),
    "ternary-name": ("def f(x, y):\n    m = x.sum() > 0\n    z = (x + 1\n         if m\n         else x - 1)\n    return z * 2\n", {7}),
    "ternary-not-comparison": ("def f(x, y):\n    z = x + 1 if not (\n        x.sum() > 0) else x - 1\n    return z * 2\n", {7}),
    # ...except after a comparison in the same test: CPython keeps the comparison's position for the jumps
    # after it (metaseq's `if (`, `self_attn_padding_mask is None`, `and tokens.eq(pad).any()`), nested or not
    "comparison-then-call-below-if": (
        "def f(x, y):\n    if (\n        y.shape[0] > 0\n        and (x > 0).any()\n    ):\n        x = x + 1\n    return x * 2\n",
        {7},
    ),
    "name-then-call-below-if": (
        "def f(x, y, flag=True):\n    if (\n        flag\n        and (x > 0).any()\n    ):\n        x = x + 1\n    return x * 2\n",
        {6},
    ),
    "nested-names-below-if": (
        "def f(x, y, a=False, b=True):\n    if a or (\n        b and (x > 0).any()\n    ):\n        x = x + 1\n    return x * 2\n",
        {6},
    ),
    "nested-boolop-below-if": ("def f(x, y):\n    if y.shape[0] > 9 or (\n        x.shape[0] > 0 and (x > 0).any()\n    ):\n        x = x + 1\n    return x * 2\n", {7}),
    "nested-same-op-below-if": ("def f(x, y):\n    if y.shape[0] > 0 and (\n        x.shape[0] > 0 and (x > 0).all()\n    ):\n        x = x + 1\n    return x * 2\n", {7}),
    "nested-boolop-split": ("def f(x, y):\n    if (y.shape[0] > 9 or\n            (x.shape[0] > 0 and\n             (x > 0).any())):\n        x = x + 1\n    return x * 2\n", {7}),
    "nested-boolop-on-if-line": ("def f(x, y):\n    if y.shape[0] > 0 and (x.shape[0] > 0 and\n                           (x > 0).all()):\n        x = x + 1\n    return x * 2\n", {6}),
    "nested-boolop-while": ("def f(x, y):\n    while y.shape[0] > 9 or (\n        x.shape[0] > 0 and (x > 0).all()\n    ):\n        return x + 1\n    return x * 2\n", {7}),
    # a comprehension's `if` clause: a comparison at its own line, anything else where the comprehension starts
    "listcomp-filter-comparison": ("def f(x, y):\n    kept = [r for r in x.reshape(-1, 1) if r.shape[0] > 0 and\n            r.sum() > 0]\n    return y * len(kept)\n", {7}),
    "listcomp-filter-call": ("def f(x, y):\n    kept = [\n        r\n        for r in x.reshape(-1, 1)\n        if r.any()]\n    return y * len(kept)\n", {6}),
    # a method of a value breaks at the method's line, however the chain is split
    "item-end-of-chain": ("def f(x, y):\n    n = (x\n         .sum()\n         .item())\n    return x * n\n", {8}),
    "item-after-call-split": ("def f(x, y):\n    n = x.sum(\n    ).item()\n    return x * n\n", {7}),
    "tolist-split": ("def f(x, y):\n    v = (x * 2\n         ).tolist()\n    return x + v[0]\n", {7}),
    # a call that breaks by itself is logged where it is called, not where the test jumps
    "equal-below-if": ("def f(x, y):\n    if (x.shape[0] > 9\n            or torch.equal(x, y)):\n        x = x + 1\n    return x * 2\n", {7}),
    "is-inference-below-if": ("def f(x, y):\n    if (x.shape[0] > 9\n            or y.is_inference()):\n        x = x + 1\n    return x * 2\n", {7}),
    "item-inside-condition": ("def f(x, y):\n    if (x.sum()\n            .item() > 0):\n        x = x + 1\n    return x * 2\n", {7}),
    "logger-method-split": ("def f(x, y):\n    y = x * 2\n    (logger\n     .warning('v'))\n    return y + 1\n", {8}),
    "stdout-write-split": ("def f(x, y):\n    y = x * 2\n    (sys.stdout\n     .write('v'))\n    return y + 1\n", {8}),
    "tensor-nonzero-split": ("def f(x, y):\n    y = x * 2\n    u = (y\n         .nonzero())\n    return u.sum() + 1\n", {8}),
    # a function of a module, or a builtin, breaks where the call starts
    "torch-function-split": ("def f(x, y):\n    y = x * 2\n    i = (torch\n         .nonzero(y > 0))\n    return i.sum() + 1\n", {7}),
    "warnings-warn-split": ("def f(x, y):\n    y = x * 2\n    (warnings\n     .warn('v'))\n    return y + 1\n", {7}),
    "int-split": ("def f(x, y):\n    n = int(\n        x.sum())\n    return x * n\n", {6}),
    "print-split": ("def f(x, y):\n    y = x * 2\n    print(\n        'value',\n        y.shape)\n    return y + 1\n", {7}),
    "print-and-item": ("def f(x, y):\n    z = x * 2\n    print('a',\n          z.sum().item())\n    return z + 1\n", {7, 8}),
    # a break in a helper is logged at the helper's line; a helper has no harmless "epilogue"
    "print-ending-a-helper": ("def g(t):\n    u = t * 2\n    print('g')\n    return u\n\ndef f(x, y):\n    z = g(x)\n    return z * 2\n", {7}),
    "print-two-helpers-down": ("def h(t):\n    print('h', t.shape)\n\ndef g(t):\n    h(t)\n    return t + 1\n\ndef f(x, y):\n    z = g(x * 2)\n    return z * 2\n", {6}),
    # near misses (no break, no finding): what Dynamo specialises or guards on, never a tensor's data
    "near-miss-tensor-metadata": (
        "def f(x, y):\n    if x.dtype in (torch.float16, torch.bfloat16) or x.element_size() == 2:\n"
        "        x = x.float()\n"
        "    if x.device.type == 'cpu' and x.is_floating_point() and torch.is_floating_point(y):\n"
        "        x = x + 1\n    if x.requires_grad or not x.is_leaf or x.grad is not None:\n"
        "        x = x.detach()\n"
        "    if not x.is_contiguous() or x.stride(-1) != 1 or x.layout != torch.strided or x.is_sparse:\n"
        "        x = x.contiguous()\n"
        "    if torch.finfo(x.dtype).bits == 32 and x.dtype == y.dtype and x.device == y.device:\n"
        "        x = x * 2\n    return x\n",
        set(),
    ),
    "near-miss-shape-arithmetic": (
        "def f(x, y):\n    if x.dim() == 1 and x.ndim < 2 and x.numel() and x.shape:\n        x = x[None]\n"
        "    if x.shape[-1] % 2 == 0 and len(x) >= 1 and x.size(0) == y[None].size(0):\n        x = x + 1\n"
        "    if x.shape != y[None].shape or max(x.shape) > 4 or tuple(x.shape) == (1, 8):\n        x = x * 2\n"
        "    half = x.shape[-1] // 2\n    n = 1\n    while n < half:\n        n *= 2\n"
        "    return x[..., :half] * n\n",
        set(),
    ),
    "near-miss-runtime-predicates": (
        "def f(x, y):\n"
        "    if torch.is_tensor(y) and isinstance(y, torch.Tensor) and type(y) is torch.Tensor and hasattr(y, 'shape'):\n"
        "        x = x + y\n    if isinstance(y, (list, tuple)) or x is y:\n        y = y[0]\n"
        "    if torch.is_grad_enabled() and not torch.is_autocast_enabled():\n        x = x * 2\n"
        "    if torch.are_deterministic_algorithms_enabled() or torch.cuda.is_available():\n        x = x - 1\n"
        "    if torch.jit.is_scripting() or torch.jit.is_tracing():\n        return x\n"
        "    if not torch.compiler.is_compiling() or not torch._dynamo.is_compiling():\n        x = x / 2\n"
        "    return x\n",
        set(),
    ),
    # transformers' `is_torchdynamo_compiling` (utils/import_utils.py): the compiler's flag behind a helper
    "near-miss-is-torchdynamo-compiling": (
        "def is_torchdynamo_compiling():\n    try:\n        import torch\n"
        "        return torch.compiler.is_compiling()\n    except Exception:\n        return False\n\n"
        "def f(x, y):\n    if not is_torchdynamo_compiling():\n        x = x + 1\n    return x * 2\n",
        set(),
    ),
    "near-miss-module-flags": (
        IMPORTS + "class Config:\n    use_bias = True\n    scale = 0.5\n\nclass Block(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n        self.config = config\n"
        "        self.p = 0.1\n        self.layers = nn.ModuleList([nn.Identity()])\n"
        "        self.lin = nn.Linear(8, 8, bias=False)\n\n    def forward(self, x):\n"
        "        if self.training and self.p > 0:\n            x = x * 2\n"
        "        if self.config.use_bias and self.config.scale < 1:\n            x = x * self.config.scale\n"
        "        if self.layers:\n            x = self.layers[0](x)\n"
        "        if self.lin.weight.dtype != x.dtype:\n            x = x.to(self.lin.weight.dtype)\n"
        "        out = x @ self.lin.weight.t()\n        if self.lin.bias is not None:\n"
        "            out = out + self.lin.bias\n        return out\n\nblock = Block(Config())\n\ndef f(x, y):\n"
        "    return block(x)\n",
        set(),
    ),
    "near-miss-optional-and-defaults": (
        "def attend(q, mask=None, factor=1.0):\n    if mask is not None:\n"
        "        q = q.masked_fill(mask, 0.0)\n    if factor != 1.0:\n        q = q * factor\n    return q\n\n"
        "def f(x, y):\n    return attend(x) + attend(y, y > 0, 2.0)\n",
        set(),
    ),
    # torchaudio's `_AxisMasking.forward` (`float(mask_value) if isinstance(mask_value, Tensor) else ...`, default
    # 0.0 that no caller replaces): an isinstance-tensor branch nothing can take is dead code
    "near-miss-isinstance-python-default": (
        IMPORTS + "class Mask(nn.Module):\n    def forward(self, x, mask_value=0.0):\n"
        "        value = float(mask_value) if isinstance(mask_value, torch.Tensor) else mask_value\n"
        "        return x.masked_fill(x < 0, value)\n\ndef fill(t, value=0.0):\n"
        "    if isinstance(value, torch.Tensor):\n        value = value.item()\n    return t + value\n\n"
        "mask = Mask()\n\ndef f(x, y):\n    return mask(x) + fill(y)\n",
        set(),
    ),
    # diffusers' KVAE `temporal_upsample`: a Python float, then `if isinstance(time_factor, torch.Tensor): .item()`
    "near-miss-isinstance-python-binding": (
        "def f(x, y):\n    time_factor = 1.0 + 1.0 * (x.size(0) > 1)\n"
        "    if isinstance(time_factor, torch.Tensor):\n        time_factor = time_factor.item()\n"
        "    return x.repeat_interleave(int(time_factor), dim=0)\n",
        set(),
    ),
    # FastSpeech2-Conformer's attention: `output_attentions: torch.Tensor | None = False` is a flag all the same
    "near-miss-tensor-annotation-flag-default": (
        IMPORTS + "class Attention(nn.Module):\n"
        "    def forward(self, x, output_attentions: torch.Tensor | None = False, scale: torch.Tensor = 1.0):\n"
        "        weights = x.softmax(-1)\n        if not output_attentions:\n            weights = None\n"
        "        if scale != 1.0:\n            x = x * scale\n        return x * 2, weights\n\n"
        "attention = Attention()\n\ndef f(x, y):\n    return attention(x)[0]\n",
        set(),
    ),
    # `torch.is_tensor(scale)` asks because `scale` may be a number; `x = x * scale` says only that `x` is a tensor
    "near-miss-scalar-parameter-evidence": (
        IMPORTS + "class Scale(nn.Module):\n    def forward(self, x, scale=None):\n        if torch.is_tensor(scale):\n"
        "            scale = scale.to(x.dtype)\n        if scale is not None and scale > 1:\n"
        "            x = x * scale\n        return x\n\nmodule = Scale()\n\ndef f(x, y):\n"
        "    return module(x, 2.0)\n",
        set(),
    ),
    "near-miss-generators-over-python": (
        "def f(x, y):\n"
        "    if any(s == 1 for s in x.shape) or not all(isinstance(t, torch.Tensor) for t in (x, y)):\n"
        "        x = x[None]\n    total = sum(t.numel() for t in (x, y))\n"
        "    sizes = tuple(s // 2 for s in x.shape)\n    return x[: sizes[0]] * total\n",
        set(),
    ),
    # Python numbers from shapes and Python values
    "near-miss-scalars-from-shapes": (
        IMPORTS + "def f(x, y):\n"
        "    a = int(x.shape[0] * 0.5) + int(x.size(0)) + round(x.shape[0] / 3) + math.ceil(x.shape[0] / 3)\n"
        "    b = int(math.log2(x.shape[-1])) + int(x.numel() / 2) + int(x.dim()) + int(sum(x.shape))\n"
        "    c = max(int(x.shape[0] * 0.1), 1) + int(len(x) * 0.5) + int(x.size(-1) ** 0.5)\n"
        "    s = float(x.shape[-1]) ** -0.5 * float(x.requires_grad is False)\n"
        "    z = x.new_zeros(int(x.shape[0])).masked_fill(y > 0, float(torch.finfo(x.dtype).min))\n"
        "    return (x * s + z)[: a + b + c].clamp(max=int(torch.iinfo(torch.int32).max))\n",
        set(),
    ),
    "near-miss-python-number-conversions": (
        IMPORTS + "class Norm(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.eps = 1e-5\n"
        "\n    def forward(self, x, n=2):\n        return x / (x.norm() + float(self.eps)) * int(n)\n\n"
        "norm = Norm()\n\ndef f(x, y):\n    return norm(x)\n",
        set(),
    ),
    # a 0-d tensor computed before a break is an input of the resumed frame, and as a size it traces
    # (Longformer's `max_num_global_attn_indices`): only the break before it is logged
    "resumed-size-after-nonzero": (
        "def f(x, y):\n    m = x.reshape(2, 4) > 0\n    num = m.long().sum(dim=1)\n    top = num.max()\n"
        "    nz = m.nonzero(as_tuple=True)\n"
        "    local = torch.arange(top, device=x.device) < num.unsqueeze(-1)\n"
        "    return x.new_zeros(2, top).sum() + local.sum() + nz[0].sum()\n",
        {9},
    ),
    "resumed-size-from-breaking-helper": (
        "def helper(m):\n    nz = m.nonzero()\n    top = m.long().sum(1).max()\n    return top, nz\n\n"
        "def f(x, y):\n    top, nz = helper(x.reshape(2, 4) > 0)\n"
        "    return x.new_zeros(2, top).sum() + y + nz.sum()\n",
        {6},
    ),
    "resumed-size-after-print-and-branch": (
        "def f(x, y):\n    top = (x > 0).long().sum().max()\n    print('between')\n    if y.sum() > 0:\n"
        "        y = y + 1\n    return x.new_zeros(top).sum() + y\n",
        {7, 8},
    ),
    # ...not when computed after the break, or changed by arithmetic in the resumed frame
    "size-computed-after-break": (
        "def f(x, y):\n    m = x > 0\n    nz = m.nonzero()\n    top = m.long().sum()\n"
        "    return x.new_zeros(top).sum() + nz.sum()\n",
        {7, 9},
    ),
    "resumed-size-arithmetic": (
        "def f(x, y):\n    top = (x > 0).long().sum()\n    nz = x.nonzero()\n"
        "    return torch.arange(top + 1).sum() + nz.sum()\n",
        {7, 8},
    ),
    # NumPy on Python numbers that stays in the graph: int()/float()/.item() of a floating result, shapes, tensor math
    "near-miss-numpy-floating-casts": (
        IMPORTS + "def f(x, y):\n    side = int(np.sqrt(x.shape[0] * 2))\n    c = float(np.log(x.shape[0]))\n"
        "    v = np.sqrt(x.shape[0]).item()\n    if v > 2:\n        x = x * c\n"
        "    for _ in range(int(np.log2(x.shape[0]))):\n        x = x * 0.5\n"
        "    k = int(np.ceil(x.shape[0] / 3)) + int(np.floor(x.shape[0] / 2)) + int(np.round(x.shape[0] * 0.5))\n"
        "    return x.view(side, -1)[:, :k] * float(np.float32(2.0))\n",
        set(),
    ),
    # `np.prod` of a one-item shape slice as a size: a constant to fake tensors (over more items: GB0033)
    "near-miss-numpy-in-the-graph": (
        IMPORTS + "def f(x, y):\n    a = np.ones(x.shape[0])\n    if a.shape[0] > 4 and a.size > 4 and len(a) > 1:\n"
        "        x = x * 2\n    x = x / np.sqrt(x.shape[-1]) * np.pi + np.finfo(np.float32).eps\n"
        "    x = x.reshape(np.prod(x.shape[-1:])) * torch.from_numpy(np.arange(x.shape[0]))\n"
        "    return x * torch.as_tensor(np.linspace(0, 1, x.shape[0]), dtype=x.dtype) * np.float32(0.5)\n",
        set(),
    ),
    # a branch on a NumPy value is logged at the branch, not at the NumPy call
    "numpy-value-branch-below": (
        IMPORTS + "def f(x, y):\n    c = np.log(x.shape[0])\n    if c > 1:\n        x = x * 2\n    return x\n",
        {11},
    ),
    # NumPy on Python numbers only carried (a torch op's keyword, a helper that divides a tensor by it, an
    # augmented assignment, a conditional expression, a list or dict, the return value): nothing breaks
    "near-miss-numpy-carried": (
        IMPORTS + "def _norm(v, s):\n    return v / s\n\ndef f(x, y):\n    k = x.shape[0]\n    s = np.sqrt(k)\n"
        "    s *= 2\n    t = np.log(k) if k > 2 else 1.0\n    scales = [np.sqrt(k), {'s': np.log(k)}]\n"
        "    x = _norm(x, np.sqrt(k)) * t * s + y / np.sqrt(k)\n"
        "    x = x.clamp(min=np.log(k) - 9) + torch.full((2,), fill_value=np.log(k)).sum()\n"
        "    return x * scales[0] * scales[1]['s'], np.lcm(k, 4)\n",
        set(),
    ),
    # ...but a helper of the file that branches on it breaks there, at the helper's line
    "numpy-value-branch-in-helper": (
        IMPORTS + "def _pad(x, chunk):\n    if x.shape[-1] % chunk != 0:\n        x = x + 1\n    return x\n\n"
        "def f(x, y):\n    return _pad(x, np.lcm(x.shape[0], 3))\n",
        {10},
    ),
    # a comprehension whose body breaks: Dynamo steps a list, a list display or a shape in its own frame...
    "near-miss-comprehension-frame-sequences": (
        IMPORTS + "def f(x, y):\n    ws = list(x.split(4))\n    out = [\n        int(t.sum())\n        for t in ws\n    ]\n"
        "    both = [\n        float(t.max())\n        for t in [x, y]\n    ]\n"
        "    rows = [\n        int(x[:s].sum())\n        for s in x.shape\n    ]\n    return out, both, rows\n",
        {12, 16, 20},
    ),
    # ...but not a dict view: it breaks again where the comprehension starts (GB4347)
    "comprehension-frame-dict-values": (
        IMPORTS + "def f(x, y):\n    d = {'a': x, 'b': y}\n    out = [\n        int(t.sum())\n        for t in d.values()\n    ]\n"
        "    return out\n",
        {11, 12},
    ),
    # an integer buffer of the module as a size: Dynamo reads it like an argument of the frame, no break
    "near-miss-buffer-as-size": (
        IMPORTS + "class Pos(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('n', torch.tensor(4))\n\n    def forward(self, x):\n"
        "        a = torch.arange(self.n) + x.view(self.n, -1).sum() + x.new_zeros(self.n, 2).sum()\n"
        "        return a + torch.randint(0, self.n, (4,)) + x.narrow(0, 0, self.n).sum()\n\n"
        "pos = Pos()\n\ndef f(x, y):\n    return pos(x)\n",
        set(),
    ),
    # comprehensions Dynamo inlines: nothing in them, or in a loop or `try` of their function, breaks
    "near-miss-comprehensions": (
        IMPORTS + "class Stack(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])\n"
        "        self.weights = {'a': 0.5, 'b': 2.0}\n\n    def forward(self, x):\n"
        "        outs = [layer(x) for layer in self.layers]\n"
        "        scaled = {k: v * 2 for k, v in self.weights.items()}\n"
        "        dims = [x.shape[i] for i in range(x.dim())]\n"
        "        rows = torch.stack([x[i] for i in range(x.shape[0])])\n"
        "        parts = [t.float() for t in (x, rows)] + [t for t in x.unbind(0)]\n        for out in outs:\n"
        "            x = x + out * scaled['a']\n        return x * dims[0] + parts[0] + len(parts)\n\n"
        "stack = Stack()\n\ndef f(x, y):\n    return stack(x.reshape(2, 4).repeat(1, 2))\n",
        set(),
    ),
    "near-miss-comprehension-beside-clean-try": (
        IMPORTS + "FLAGS = {'hidden_states': 1}\n\nclass Wrapped(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.inner = nn.Linear(8, 8)\n"
        "        self.output_hidden_states = False\n\n    def project(self, x):\n"
        "        return self.inner(x) * 2\n\n    def forward(self, x):\n"
        "        keys = {f'output_{k}': getattr(self, f'output_{k}', False) for k in FLAGS}\n        try:\n"
        "            out = self.project(x)\n        finally:\n            keys.clear()\n        return out\n\n"
        "wrapped = Wrapped()\n\ndef f(x, y):\n    return wrapped(x)\n",
        set(),
    ),
}


def source(name: str) -> str:
    return HEADER + PROGRAMS[name][0]
