"""Edge cases of GM301-GM403 beyond the rules' VALID/INVALID examples: precision first.

Each negative is a construct a careless rule would flag; each fix case pins
the exact text the fix writes, including parentheses, aliases and imports.
"""

from __future__ import annotations

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.diagnostics import Applicability

HEAD = "import numpy as np\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, k: int, mask: torch.Tensor):\n"


def codes(source: str) -> list[str]:
    return [d.code for d in lint_source(source)]


def only(source: str, code: str):
    found = [d for d in lint_source(source) if d.code == code]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("    int = type(k)\n    return int(x.sum())\n", "GM301"),  # shadowed builtin
        ("    return x * k.bit_length(), {1: 2}.items()\n", "GM301"),
        ("    return np.array([1, 2]).tolist()\n", "GM302"),  # NumPy of constants, not of a tensor
        ("    a = x.numpy()\n    return x, a + 1, len(a)\n", "GM302"),  # traced: no break
        # a 0/1 attention mask, or a mask a call in the file passes an integer tensor for, is an index
        ("    return g(x)\n\n\ndef g(h: torch.Tensor, attention_mask=None):\n    return h[attention_mask].sum()\n", "GM401"),
        ("    return g(x, x.long())\n\n\ndef g(h, mask):\n    return h[mask].sum()\n", "GM401"),
        ("    return x[x.argsort()], x[..., 0], x[None]\n", "GM401"),
        ("    return torch.where(x > 0, x, 0), torch.unique_consecutive\n", "GM401"),
        ("    return x[:k], x[k : 2 * k], x[: x.numel() // 2]\n", "GM402"),
        ("    return np.sum(x.numpy()), np.lcm(mask.sum(), 2)\n", "GM403"),  # tensors, not Python values
        ("    return np.maximum(k, 2, 3)\n", "GM403"),  # not the arity of max(a, b)
    ],
)
def test_stays_quiet(body: str, code: str) -> None:
    assert code not in codes(HEAD + body)


@pytest.mark.parametrize(
    "uses",
    [
        "    return x * s, range(s)\n",  # a Python use
        "    s = s + 1\n    return x * s\n",  # rebound
        "    return x * s, lambda: s\n",  # read from a closure
        "    x *= s\n    return x\n",  # in place: what x holds before is not provable
    ],
)
def test_item_with_a_python_use_keeps_the_copy(uses: str) -> None:
    """No edit touches the `.item()` line: at most the capture switch goes in after the imports."""
    source = HEAD + "    s = mask.sum().item()\n" + uses
    diagnostic = only(source, "GM301")
    assert diagnostic.fix is not None
    item_line = source.splitlines().index("    s = mask.sum().item()") + 1
    assert all(edit.start.line != item_line for edit in diagnostic.fix.edits)


@pytest.mark.parametrize(
    ("uses", "switch"),
    [
        ("    return x * s, range(s)\n", False),  # `range` needs the number
        ("    if s > 2:\n        x = x + 1\n    return x * s\n", False),  # so does a branch
        ("    return x * s, s\n", False),  # and whoever the number is returned to may
        ("    x *= s\n    return x\n", True),  # only tensor work: traced as a symbol
    ],
)
def test_capture_switch_only_when_no_use_needs_the_number(uses: str, switch: bool) -> None:
    source = HEAD + "    s = mask.sum().item()\n" + uses
    fixed = fix_source(source, unsafe=True).source
    assert ("torch._dynamo.config.capture_scalar_outputs = True" in fixed) is switch


@pytest.mark.parametrize(
    ("uses", "switch"),
    [
        ("    return x[tuple(idx.t())], len(idx.T)\n", True),  # one row per dimension of x: a static count
        ("    return [x[i] for i in idx.t()]\n", True),
        ("    return x[tuple(idx)]\n", False),  # one row per hit: Python needs the count
        ("    return [x[i] for i in idx]\n", False),
        ("    rows = idx.t() if k else idx\n    return x[tuple(rows)]\n", False),
        # sizes unpacked from the shape (Mistral's `N_txt, D_txt = text_features.shape`): an assert with a
        # formatted message is no runtime check, it breaks on the unbacked count (GB0170, measured switch on)...
        ("    hits, dims = idx.shape\n    assert hits < x.shape[0], f'{hits} hits'\n    return idx\n", False),
        # ...tensor math with them does not
        ("    hits, dims = idx.shape\n    return idx * dims\n", True),
    ],
)
def test_dynamic_switch_iterates_only_over_static_rows(uses: str, switch: bool) -> None:
    source = HEAD + "    idx = torch.nonzero(x > 0)\n" + uses
    fixed = fix_source(source, unsafe=True).source
    assert ("torch._dynamo.config.capture_dynamic_output_shape_ops = True" in fixed) is switch


HELPERS = (
    "import torch\n\n\ndef pick(x, m):\n    keep = m > 0\n    return x[keep], m[keep]\n\n\n"
    "def top(p, k: int):\n    if k >= len(p):\n        return p\n    return p[:k]\n\n\n"
    "def scale(p, w):\n    if isinstance(p, torch.Tensor) and p.dim() == 1 and w.shape[-1] > 4:\n"
    "        return p * w.shape[1]\n    return p\n\n\n"
    "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.bn = torch.nn.BatchNorm1d(4)\n        self.ln = torch.nn.LayerNorm(4)\n\n"
    "    def forward(self, x: torch.Tensor, w: torch.Tensor):\n        m = x > 0\n"
)


@pytest.mark.parametrize(
    ("uses", "switch"),
    [
        # measured (torch 2.13, switch on): a break at the helper's branch, fullgraph fails on `u0 <= 3`
        ("        p, q = pick(x, x)\n        return top(p, 3), q\n", False),
        ("        return top(x[m], 3)\n", False),
        ("        return self.bn(w[m])\n", False),  # batch norm guards on the batch size
        ("        return torch.nn.functional.batch_norm(w[m], None, None, training=True)\n", False),
        # tensor math, type checks, dim() and static dimensions: no break, fullgraph passes
        ("        p, q = pick(x, x)\n        return scale(p, w[m, :]), q\n", True),
        ("        return self.ln(w[m]), scale(x[m], w)\n", True),
    ],
)
def test_dynamic_switch_follows_sizes_into_helpers(uses: str, switch: bool) -> None:
    source = HELPERS + uses + "\n\nf = torch.compile(Net())\n"
    fixed = fix_source(source, unsafe=True).source
    assert ("torch._dynamo.config.capture_dynamic_output_shape_ops = True" in fixed) is switch
    if not switch:
        advice = [d.fix.message for d in lint_source(source) if d.code == "GM401" and d.fix is not None]
        assert advice and all("would only move the break" in message for message in advice)


@pytest.mark.parametrize(
    ("test", "fixed"),
    [
        ("mask.max().item() <= k", "mask.max() <= k"),
        ("k >= float(mask.max())", "k >= mask.max()"),
        # the `not` would still ask for the tensor's truth on the host (GB0170, measured): GM105 then makes it `~`
        ("not mask.any().item()", "~mask.any()"),
        ("mask.all().item()", "mask.all()"),
    ],
)
def test_assert_drops_the_copy_when_the_comparison_keeps_its_meaning(test: str, fixed: str) -> None:
    source = HEAD + f"    assert {test}\n    return x\n"
    assert fix_source(source, unsafe=True).source == HEAD + f"    assert {fixed}\n    return x\n"


@pytest.mark.parametrize("test", ["mask.max().item() <= 0.1", "int(mask.max()) <= k", "0 < mask.max().item() < k"])
def test_assert_keeps_the_copy_when_the_meaning_could_change(test: str) -> None:
    """A float literal rounds differently in float32; int() truncates; chains become `and`."""
    source = HEAD + f"    assert {test}\n    return x\n"
    assert fix_source(source, unsafe=True).source == source


def test_masked_mean_is_parenthesised_where_precedence_needs_it() -> None:
    # ``T.abs(x)`` makes ``x`` a tensor (``x.float()`` alone would not: modules have ``.float()`` too)
    source = "import torch as T\n\n\n@T.compile\ndef f(x):\n    y = T.abs(x).float() - 1\n    m = y > 0\n"
    source += "    return 2 ** y[m].mean()\n"
    fixed = fix_source(source, unsafe=True).source
    assert fixed.endswith("    return 2 ** (T.where(m, y, 0).sum() / m.sum())\n")


def test_masked_max_of_a_tensor_of_unknown_dtype_is_only_shown() -> None:
    diagnostic = only(HEAD + "    return x[x > 0].max()\n", "GM401")
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert "floating" in diagnostic.fix.message
    assert diagnostic.fix.edits[0].content == "torch.where(x > 0, x, -torch.inf).max()"


def test_masked_reduction_over_a_mask_of_another_shape_is_only_shown() -> None:
    source = HEAD + "    rows = x[:, 0] > 0\n    return x[rows].sum()\n"
    diagnostic = only(source, "GM401")
    assert diagnostic.fix.applicability is Applicability.DISPLAY_ONLY
    assert "shaped like" in diagnostic.fix.message


def test_numpy_twin_import_goes_after_future_imports() -> None:
    source = "from __future__ import annotations\n\n" + HEAD + "    return x[: np.gcd(k, 4)]\n"
    fixed = fix_source(source).source
    assert fixed.startswith("from __future__ import annotations\n\nimport math\nimport numpy as np\n")
    assert "math.gcd(k, 4)" in fixed


def test_numpy_twin_is_not_offered_when_math_is_taken() -> None:
    source = HEAD + "    math = k\n    return x[: np.gcd(k, math)]\n"
    assert only(source, "GM403").fix is None


def test_expert_dispatch_loop_gets_a_precise_display_only_message() -> None:
    loop = HEAD + "    hit = (mask.sum(-1) > 0).nonzero()\n    for e in hit:\n        x = x + e\n    return x\n"
    hint = only(loop, "GM401").fix
    assert hint.applicability is Applicability.DISPLAY_ONLY and not hint.edits
    assert "expert dispatch loop (line 8)" in hint.message and "range(num_experts)" in hint.message
    plain = HEAD + "    hit = (mask.sum(-1) > 0).nonzero()\n    return hit\n"
    assert "capture_dynamic_output_shape_ops" in only(plain, "GM401").fix.message


_ROUTED = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Experts(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.weight = nn.Parameter(torch.randn(4, 8, 8))\n\n"
    "    def forward(self, inputs, sizes):\n{experts}\n\n"
    "class Router(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.layer = nn.Linear(8, 4)\n\n"
    "    def forward(self, x):\n"
    "        hits = torch.zeros(x.size(0), 4).scatter(1, self.layer(x).argmax(-1, keepdim=True), 1)\n"
    "        sizes = hits.long().sum(0).tolist()\n{router}\n\n"
    "class MoE(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.router = Router()\n        self.experts = Experts()\n\n"
    "    def forward(self, x):\n{caller}\n\n"
    "compiled = torch.compile(MoE())\n"
)
_SPLIT = (
    "        parts = inputs.split(sizes, dim=0)\n"
    "        return torch.cat([parts[i] @ self.weight[i] for i in range(4)])"
)
_RETURN = "        return x, sizes"
_CALL = "        order, sizes = self.router(x)\n        return self.experts(x[order.argsort()], sizes)"


@pytest.mark.parametrize(
    ("experts", "router", "caller", "switch"),
    [
        (_SPLIT, _RETURN, _CALL, True),  # returned, unpacked, passed on, split: jetmoe's flow
        (_SPLIT, "        topo = (x, sizes)\n        return topo", "        topo = self.router(x)\n"
         "        return self.experts(x, topo[1])", True),  # packed in a tuple and indexed back out
        (_SPLIT, _RETURN, "        order, sizes = self.router(x)\n        return self.experts(x, sizes=sizes)", True),
        (_SPLIT, _RETURN, "        order, sizes = self.router(x)\n"
         "        return self.experts(x, sizes), sizes[0] + 1", False),  # an element read as a number
        (_SPLIT + "\n        for s in sizes:\n            pass", _RETURN, _CALL, False),  # iterated over
        ("        return inputs.split(sizes[:2])", _RETURN, _CALL, False),  # sliced
        ("        return [p for p in inputs.split(sizes)]", _RETURN, _CALL, False),  # read in a comprehension
        (_SPLIT, _RETURN, "        order, sizes = self.router(x)\n        return helper(x, sizes)", False),  # unresolved
        (_SPLIT, _RETURN, "        order, *rest = self.router(x)\n        return self.experts(x, rest[0])", False),
        (_SPLIT, _RETURN, "        order, sizes = self.router(x)\n        return self.experts(x, *[sizes])", False),
    ],
)
def test_tolist_sizes_followed_across_calls(experts: str, router: str, caller: str, switch: bool) -> None:
    """The capture switch for a router's `.tolist()` only when every use, in callers and callees, is split sizes."""
    source = _ROUTED.format(experts=experts, router=router, caller=caller)
    diagnostic = only(source, "GM302")
    assert (diagnostic.fix.applicability is Applicability.UNSAFE) is switch
    fixed = fix_source(source, unsafe=True).source
    assert ("torch._dynamo.config.capture_scalar_outputs = True" in fixed) is switch
    if not switch:
        assert "; here `" in diagnostic.fix.message  # the declined advice says which use stops it


@pytest.mark.parametrize(
    "receiver",
    [
        "x.float().sum(0)",  # float: `tolist()` is never traced (GB0109)
        "x.sum(0)",  # dtype unknown
        "x.long().sum(0, dtype=torch.float32)",
    ],
)
def test_tolist_switch_only_for_integer_tensors(receiver: str) -> None:
    source = HEAD + f"    sizes = {receiver}.tolist()\n    return x.split(sizes)\n"
    assert only(source, "GM302").fix.applicability is Applicability.DISPLAY_ONLY


def test_integer_tolist_is_quiet_under_the_switch() -> None:
    source = HEAD.replace("import torch\n", "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n", 1)
    assert "GM302" not in codes(source + "    sizes = mask.long().sum(0).tolist()\n    return x.split(sizes)\n")
    assert "GM302" in codes(source + "    return x.float().tolist()\n")  # float: still breaks
