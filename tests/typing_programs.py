"""Small programs whose tensors show only through how they are used or passed, and the lines Dynamo logs
their breaks at (torch 2.13.0, CPython 3.11, measured).

The value-typing mechanisms of ``analysis/values.py`` each have programs here
that break (the linter must flag exactly those lines) and programs that look
alike but do not break (it must flag nothing). ``test_break_sites.py`` checks
the findings, ``test_break_sites_dynamo.py`` that Dynamo still logs exactly
these lines. Each program defines ``f(x, y)``, called with ``x`` and ``y``
all positive, all negative and random (8 floats each). ``operator.mul(x, 2)``
is a tensor the linter cannot type (a function of another library), the way a
library call's result is in real code. Lines count from the top of the
program, header included (``f`` or the first helper starts on line 5).
"""

from __future__ import annotations

HEADER = "import operator\nimport numpy as np\nimport torch\n\n"

#: name -> (body, lines Dynamo logs in this file)
PROGRAMS: dict[str, tuple[str, set[int]]] = {
    # methods only arrays have, on a receiver of unknown kind (values.ARRAY_ONLY_METHODS)
    "item-of-an-untyped-value": ("def f(x, y):\n    z = operator.mul(x, 2)\n    n = z[0].item()\n    return y * n\n", {7}),
    "tolist-of-an-untyped-array": ("def f(x, y):\n    a = operator.mul(x.numpy(), 2)\n    v = a.tolist()\n    return y + v[0]\n", {7}),
    "item-of-an-untyped-array": ("def f(x, y):\n    a = operator.mul(x.numpy(), 2)\n    return y * a[0].item()\n", {7}),
    "unique-of-an-untyped-value": ("def f(x, y):\n    u = operator.mul(x, 2).unique()\n    return y.sum() + u.sum()\n", {6}),
    "repeat-interleave-untyped-receiver": (
        "def f(x, y):\n    r = operator.mul(x, 2).repeat_interleave((y > 0).long())\n    return r.sum() + y\n", {6}),
    "repeat-interleave-int-repeats": (
        "def f(x, y):\n    r = operator.mul(x, 2).repeat_interleave(2)\n    return r.sum() + y\n", set()),
    "item-of-a-numpy-scalar-constant": ("def f(x, y):\n    return y * np.float32(2.0).item()\n", set()),
    "item-of-a-local-class": (
        "class Slot:\n    def item(self):\n        return 2\n\ndef f(x, y):\n"
        "    slots = operator.add([Slot()], [])\n    return y * slots[0].item()\n", set()),
    # boolean masks known through their producers: returned by a helper, passed to one, kept on a module
    "mask-returned-by-a-helper": (
        "def get_mask(t):\n    return t > 0, t.shape[0]\n\ndef f(x, y):\n    h = x.abs()\n"
        "    mask, n = get_mask(y)\n    return h[mask].sum() * n\n", {11}),
    "mask-returned-directly": (
        "def make_mask(t):\n    return (t > 0) & (t.abs() < 1)\n\ndef f(x, y):\n    return x.abs()[make_mask(y)].sum()\n", {9}),
    "mask-passed-to-a-helper": ("def pick(t, m):\n    return t[m]\n\ndef f(x, y):\n    return pick(x.abs(), y.abs() > 0.5).sum()\n", {6}),
    "mask-registered-as-a-buffer": (
        "class Gate(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('keep', torch.arange(8) % 2 == 0)\n\n    def forward(self, h):\n"
        "        return h.abs()[self.keep]\n\ngate = Gate()\n\ndef f(x, y):\n    return gate(x).sum() + y\n", {11}),
    "mask-indexes-an-untyped-value": ("def f(x, y):\n    return operator.mul(x, 2)[y.abs() > 0.5].sum()\n", {6}),
    "integer-index-of-an-untyped-value": ("def f(x, y):\n    return operator.mul(x, 2)[(y > 0).long()].sum()\n", set()),
    "mask-joined-flipped-and-moved": (
        "def f(x, y):\n    m = torch.cat([y.abs() > 0.5, torch.flip(y.abs() < 0.5, [0])]).cpu()\n    return x.repeat(2)[m].sum()\n", {7}),
    "mask-filled-with-true": ("def f(x, y):\n    m = torch.full((8,), True)\n    return x.abs()[m].sum()\n", {7}),
    "index-filled-with-one": ("def f(x, y):\n    m = torch.full((8,), 1)\n    return x.abs()[m].sum()\n", set()),
    "integer-index-returned-by-a-helper": (
        "def get_index(t):\n    return (t > 0).long(), t.shape[0]\n\ndef f(x, y):\n    h = x.abs()\n"
        "    idx, n = get_index(y)\n    return h[idx].sum() * n\n", set()),
    "integer-index-passed-to-a-helper": (
        "def pick(t, m):\n    return t[m]\n\ndef f(x, y):\n    return pick(x.abs(), (y > 0).long()).sum()\n", set()),
    # an augmented assignment to a tensor runs in place and keeps its dtype, whatever the operand
    "mask-updated-in-place": (
        "def valid_of(t):\n    valid = t > -1\n    valid &= t.abs() < 2\n    valid |= t > 5\n    return valid\n\n"
        "def f(x, y):\n    valid = valid_of(y)\n    return x[valid].sum()\n", {13}),
    "integer-index-updated-in-place": (
        "def f(x, y):\n    idx = (y > 0).long()\n    idx |= (y > 1).long()\n    return x[idx].sum()\n", set()),
    # a mask joined with a tensor of unknown dtype: as an index, a mask (an integer 0/1 index gathers rows 0 and 1)
    "mask-and-a-tensor-of-unknown-dtype": (
        "def f(x, y):\n    keep = torch.as_tensor(operator.gt(y, 0))\n    m = (x.abs() > 1) & keep\n    return x[m].sum()\n", {8}),
    "mask-and-an-integer-tensor": ("def f(x, y):\n    m = (x.abs() > 1) & (y > 0).long()\n    return x[m].sum()\n", set()),
    "mask-and-a-python-number": ("def f(x, y):\n    m = (x.abs() > 1) & 1\n    return x[m].sum() + y\n", set()),
    # what the classes of this file that a class derives from assign to ``self`` (snntorch's neuron buffers)
    "buffer-registered-by-a-base-class": (
        "class Base(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('mode', torch.tensor(0))\n        self.k = 2\n\n"
        "class Neuron(Base):\n    def forward(self, h):\n        if self.mode == 0:\n            h = h + 1\n"
        "        return h\n\nneuron = Neuron()\n\ndef f(x, y):\n    return neuron(x) + y\n", {13}),
    "number-set-by-a-base-class": (
        "class Base(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('mode', torch.tensor(0))\n        self.k = 2\n\n"
        "class Neuron(Base):\n    def forward(self, h):\n        if self.k > 0:\n            h = h + 1\n"
        "        return h\n\nneuron = Neuron()\n\ndef f(x, y):\n    return neuron(x) + y\n", set()),
    # the items of ``list``/``reversed``/``sorted`` over a tensor are tensors (torchaudio's HuBERT span lengths;
    # ``sorted`` over a tensor breaks itself, GB0059, which no rule flags yet)
    "items-of-a-reversed-tensor": (
        "def f(x, y):\n    for v in reversed(y.abs()[:2]):\n        if v > 1:\n            x = x + v\n"
        "    return x\n", {7}),
    "items-of-a-list-of-a-tensor": (
        "def f(x, y):\n    xs = list(y.abs()[:2])\n    for v in xs:\n        if v > 1:\n            x = x + v\n"
        "    return x\n", {8}),
    "items-of-a-sorted-shape": (
        "def f(x, y):\n    for v in sorted(x.shape):\n        if v > 1:\n            x = x + y\n    return x\n", set()),
    # torch.randint's bounds and size, torch.randperm's size: a tensor there is copied to a Python int
    "randint-bound-from-data": ("def f(x, y):\n    n = (y > 0).sum()\n    return x + torch.randint(0, n + 1, (8,))\n", {7}),
    "randperm-size-from-data": ("def f(x, y):\n    n = (y > 0).sum()\n    return torch.randperm(n + 1).sum() + x\n", {7}),
    "randint-bound-from-a-shape": (
        "def f(x, y):\n    return x + torch.randint(0, y.shape[0], (x.shape[0],)) + torch.randperm(8)\n", set()),
    # Python sequences indexed by a tensor: a parameter annotated as a list, a helper's returned list,
    # ``torch.jit.annotate``'s value (torchaudio's RNN-T beam search, ``b_hypos[idx]``)
    "annotated-list-indexed-by-a-tensor": (
        "def pick(items: list, i):\n    return items[i]\n\ndef f(x, y):\n    order = y.argsort()\n"
        "    return x * pick(operator.add([1.0], [2.0] * 7), order[0])\n", {6}),
    "returned-list-indexed-by-a-tensor": (
        "def ranked(n):\n    return [float(k) for k in range(n)]\n\ndef f(x, y):\n    order = y.argsort()\n"
        "    names = torch.jit.annotate(list, []) if x.shape[0] > 8 else ranked(8)\n    return x * names[order[0]]\n", {11}),
    "returned-tensor-indexed-by-a-tensor": (
        "def ranked(n):\n    return torch.arange(float(n))\n\ndef f(x, y):\n    order = y.argsort()\n"
        "    names = ranked(8)\n    return x * names[order[:2]].sum()\n", set()),
    # a loop whose body calls a helper that breaks: Dynamo runs the function eagerly, and a comprehension
    # over a list that closes over a tensor breaks again in its own frame (GB4347, Python 3.11)
    "comprehension-after-a-loop-calling-a-breaking-helper": (
        "ITEMS = [1.0, 2.0]\n\ndef helper(t):\n    return float(t.sum())\n\ndef f(x, y):\n    h = x.abs()\n    for i in range(2):\n"
        "        h = h + helper(y)\n    return [h * v for v in ITEMS]\n", {8, 14}),
    "comprehension-after-a-loop-calling-a-clean-helper": (
        "ITEMS = [1.0, 2.0]\n\ndef helper(t):\n    return t.sum()\n\ndef f(x, y):\n    h = x.abs()\n    for i in range(2):\n"
        "        h = h + helper(y)\n    return [h * v for v in ITEMS]\n", set()),
    # ``if isinstance(n, int):`` narrows ``n`` to a Python value: a caller passing a tensor never runs the branch
    "python-branch-of-an-int-or-tensor-parameter": (
        "def scale(t, n):\n    if isinstance(n, (int, float)):\n        if n > 0:\n            t = t * n\n"
        "    return t\n\ndef f(x, y):\n    return scale(x, y.sum())\n", set()),
    "tensor-branch-of-an-int-or-tensor-parameter": (
        "def scale(t, n):\n    if isinstance(n, int):\n        return t * n\n    if n > 0:\n        t = t * n\n"
        "    return t\n\ndef f(x, y):\n    return scale(x, y.sum())\n", {8}),
    # a helper's parameter given a tensor computed in the traced caller is no frame input: as a size it breaks
    "size-passed-to-a-helper": (
        "def grid(n):\n    return torch.arange(n)\n\ndef f(x, y):\n    n = (y > 0).sum() + 1\n"
        "    return x + grid(n).sum()\n", {6}),
    "shape-passed-to-a-helper": (
        "def grid(n):\n    return torch.arange(n)\n\ndef f(x, y):\n    return x + grid(y.shape[0]).sum()\n", set()),
    "size-of-an-int-branch-passed-a-tensor": (
        "def grid(n):\n    if isinstance(n, int):\n        n = torch.arange(n)\n    return n * 2\n\ndef f(x, y):\n"
        "    return x + grid(y[:3] + 1).sum()\n", set()),
    # after a size breaks, the rest of the statement runs in the resumed frame: a name bound before it is an
    # input there and traces as a size, arithmetic on it breaks again
    "second-size-in-the-same-call": (
        "def f(x, y):\n    n = (y > 0).sum() + 1\n    m = (y < 0).sum() + 1\n    a, b = torch.meshgrid(\n"
        "        torch.arange(n),\n        torch.arange(m),\n        indexing='ij',\n    )\n"
        "    return x + a.sum() + b.sum()\n", {9}),
    "second-size-computed-in-the-same-call": (
        "def f(x, y):\n    n = (y > 0).sum() + 1\n    m = (y < 0).sum() + 1\n    a, b = torch.meshgrid(\n"
        "        torch.arange(n),\n        torch.arange(m + 1),\n        indexing='ij',\n    )\n"
        "    return x + a.sum() + b.sum()\n", {9, 10}),
    # the items of a NumPy array made from a tensor are NumPy scalars, 0-d tensors to Dynamo (UDOP's prefix rows)
    # (a break in a loop body that reads a slice also logs "step_unsupported" at the loop: measured outside one)
    "slice-bound-from-a-numpy-scalar": (
        "def f(x, y):\n    n = (y > 0).sum(-1, keepdim=True)\n    k = n.numpy()[0]\n    return x + x[:k].sum()\n", {8}),
    "int-of-a-numpy-item": (
        "def f(x, y):\n    n = (y > 0).sum(-1, keepdim=True)\n    for k in n.numpy():\n        x = x + x[:int(k)].sum()\n"
        "    return x\n", {8}),
    "branch-on-a-numpy-item": (
        "def f(x, y):\n    n = (y > 0).sum(-1, keepdim=True)\n    for i, k in enumerate(n.cpu().numpy()):\n"
        "        if k > 2:\n            x = x + i\n    return x\n", {8}),
    "arithmetic-on-a-numpy-item": (
        "def f(x, y):\n    n = (y > 0).sum(-1, keepdim=True)\n    for k in n.numpy():\n        x = x * k\n"
        "    return x\n", set()),
    # masks a loop takes from a mask (its rows) or from a container of masks; a tensor of bool literals
    "rows-of-a-mask": (
        "def f(x, y):\n    m = (y > 0).reshape(2, 4)\n    h = x.reshape(2, 4)\n    total = x.sum()\n"
        "    for row, keep in zip(h, m):\n        total = total + row[keep].sum()\n    return total\n", {10}),
    "masks-in-a-tuple": (
        "def f(x, y):\n    total = x.sum()\n    for keep in (y.abs() > 1, y.abs() < 1):\n        total = total + x[keep].sum()\n"
        "    return total\n", {8}),
    "rows-of-an-integer-index": (
        "def f(x, y):\n    m = (y > 0).long().reshape(2, 4)\n    total = x.sum()\n    for idx in m:\n"
        "        total = total + x[idx].sum()\n    return total\n", set()),
    "tensor-of-bool-literals": (
        "def f(x, y):\n    keep = torch.tensor([True, False, True, False, True, False, True, False])\n"
        "    return x[keep].sum() + y\n", {7}),
    "tensor-of-int-literals": (
        "def f(x, y):\n    idx = torch.tensor([1, 0, 1, 0])\n    return x[idx].sum() + y\n", set()),
    # a module's forward typed from the calls of its instances (as scope analysis resolves them)
    "mask-passed-to-a-module": (
        "class Select(torch.nn.Module):\n    def forward(self, h, m):\n        return h[m]\n\nselect = Select()\n\n"
        "def f(x, y):\n    return select(x.abs(), y.abs() > 0.5).sum()\n", {7}),
    "mask-passed-to-a-submodule": (
        "class Select(torch.nn.Module):\n    def forward(self, h, m):\n        return h[m]\n\n"
        "class Outer(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.select = Select()\n\n"
        "    def forward(self, h, g):\n        return self.select(h, g > 0).sum()\n\nouter = Outer()\n\n"
        "def f(x, y):\n    return outer(x.abs(), y.abs())\n", {7}),
    "integer-index-passed-to-a-module": (
        "class Select(torch.nn.Module):\n    def forward(self, h, m):\n        return h[m]\n\nselect = Select()\n\n"
        "def f(x, y):\n    return select(x.abs(), (y > 0).long()).sum()\n", set()),
    "python-number-passed-to-a-module": (
        "class Scale(torch.nn.Module):\n    def forward(self, h, k):\n        if k > 0:\n            h = h.abs() * k\n"
        "        return h\n\nscale = Scale()\n\ndef f(x, y):\n    return scale(x, 2) + y\n", set()),
    # values kept in containers this file builds: dataclass and NamedTuple fields, attributes, dict entries
    "field-of-a-returned-dataclass": (
        "import dataclasses\n\n@dataclasses.dataclass\nclass Out:\n    sample: torch.Tensor\n    steps: int = 0\n\n"
        "def step(t):\n    return Out(sample=t * 2, steps=3)\n\ndef f(x, y):\n    out = step(x.sum())\n"
        "    if out.steps > 2:\n        y = y + 1\n    if out.sample > 0:\n        y = y - 1\n    return y\n", {19}),
    "field-of-a-named-tuple": (
        "import typing\n\nclass Pair(typing.NamedTuple):\n    mask: torch.Tensor\n    count: int\n\n"
        "def pair(t):\n    return Pair(t.abs() > 0.5, 2)\n\ndef f(x, y):\n    p = pair(y)\n"
        "    return x.abs()[p.mask].sum() * p.count\n", {16}),
    "value-kept-by-a-class": (
        "class Cache:\n    def __init__(self, index, size=4):\n        self.index = index\n        self.size = size\n\n"
        "def f(x, y):\n    c = Cache(x.sum())\n    if c.size > 2:\n        y = y + 1\n    if c.index > 0:\n"
        "        y = y - 1\n    return y\n", {14}),
    "dict-entry-returned-by-a-helper": (
        "def stats(t):\n    return {'total': t.sum(), 'n': t.shape[0]}\n\ndef f(x, y):\n    s = stats(x)\n"
        "    if s['n'] > 4:\n        y = y + 1\n    if s['total'] > 0:\n        y = y - 1\n    return y\n", {12}),
}


def source(name: str) -> str:
    return HEADER + PROGRAMS[name][0]
