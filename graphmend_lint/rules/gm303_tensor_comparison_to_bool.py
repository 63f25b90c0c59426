"""GM303: ``torch.equal`` / ``torch.allclose`` / ``is_nonzero`` / ``v in t`` turn tensor data into a Python bool."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.lookup import runs_before
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.tensor_compare import isclose_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

MEMBERSHIP = Fix.advice(
    "no automatic fix: keep the answer a tensor, `(t == v).any()`, and select with `torch.where`, or test outside "
    "the compiled function"
)
PREDICATES = frozenset({"equal", "allclose"})
#: The one-tensor predicate: ``torch.is_nonzero(t)`` / ``t.is_nonzero()`` reads a one-element tensor's value.
UNARY_PREDICATES = frozenset({"is_nonzero"})
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, y: torch.Tensor):\n"


def tensor_predicate(values: ValueOracle, call: nodes.Call) -> str | None:
    """``"equal"`` / ``"allclose"`` / ``"is_nonzero"`` for ``torch.equal(a, b)``, ``a.allclose(b)``,
    ``t.is_nonzero()``..., else ``None``."""
    func = call.func
    name = values.qualified_name(func) or ""
    module, _, function = name.rpartition(".")
    if module == "torch" and function in PREDICATES and len(call.args) >= 2:
        return function
    if module == "torch" and function in UNARY_PREDICATES and len(call.args) == 1 and values.is_tensor(call.args[0]):
        return function
    if not isinstance(func, nodes.Attribute) or not values.is_tensor(func.expr):
        return None
    if (func.attrname in PREDICATES and call.args) or (func.attrname in UNARY_PREDICATES and not call.args):
        return func.attrname
    return None


def tensor_membership(values: ValueOracle, node: nodes.Compare) -> nodes.NodeNG | None:
    """The tensor of ``v in t`` / ``v not in t``: ``Tensor.__contains__`` reads ``(t == v).any()`` back with
    ``.item()`` (ChatGLM's ``MASK in input_ids``)."""
    if len(node.ops) != 1 or node.ops[0][0] not in ("in", "not in"):
        return None
    if isinstance(node.left, nodes.Const) and isinstance(node.left.value, (str, bytes)):
        return None  # ``"rgb_fine" in inputs``: a key looked up in a dict, whatever the container was typed
    container = node.ops[0][1]
    if not values.is_tensor(container) or _read_by_key(container):
        return None
    return container


def _read_by_key(container: nodes.NodeNG) -> bool:
    """*container* is a name its function also reads with a string key (``output["hm"]``): a dict, whatever typed
    it a tensor (CenterTrack's ``for head in heads: if head in output:``)."""
    if not isinstance(container, nodes.Name):
        return False
    return any(
        isinstance(read.value, nodes.Name)
        and read.value.name == container.name
        and isinstance(read.slice, nodes.Const)
        and isinstance(read.slice.value, str)
        for read in container.frame().nodes_of_class(nodes.Subscript)
    )


class TensorComparisonToBool(Rule):
    """## What it does
    Flags `torch.equal(a, b)` and `torch.allclose(a, b)` (and the tensor
    methods `a.equal(b)`, `a.allclose(b)`), and `torch.is_nonzero(t)` /
    `t.is_nonzero()` on a tensor, in code that `torch.compile` traces. And a
    membership test on a tensor, `v in t` / `v not in t` (ChatGLM's `mask_token
    = MASK if MASK in input_ids else gMASK`): `Tensor.__contains__` reads
    `(t == v).any()` back with `.item()` (GB0124), inside torch's own Python
    code, so Dynamo skips the rest of the function and runs it eagerly; later
    membership tests on the same path are not reported (measured, torch 2.13).
    `equal`, `allclose` and `aten._local_scalar_dense` are the operators
    torch 2.13 tags `data_dependent_output`; `is_nonzero` reads the value
    through the last.

    ## Why is this bad
    Both return a Python `bool` computed from the tensors' values. Dynamo
    cannot put a Python bool made from data in a graph, so it ends the graph
    at the call, syncs with the device and resumes in a new graph (GB0033,
    "Data dependent operator"), whatever the result is used for: the break is
    at the call, not at the `if` that reads it (measured, torch 2.13).
    `capture_scalar_outputs` does not help: `equal` / `allclose` break the
    same way, and `is_nonzero` then breaks on a guard of the captured value
    (measured).

    ## Example
    ```python
    @torch.compile
    def f(w, x):
        if torch.allclose(w, w.t()):
            return x @ w
        return x @ (0.5 * (w + w.t()))
    ```

    ## Use instead
    Keep the answer a 0-d bool tensor and select on the device:
    ```python
    @torch.compile
    def f(w, x):
        symmetric = torch.isclose(w, w.t()).all()
        return torch.where(symmetric, x @ w, x @ (0.5 * (w + w.t())))
    ```

    ## Fix safety
    `torch.allclose(a, b, ...)` that is the whole test of an `if` (or
    `not` of it) is rewritten to `torch.isclose(a, b, ...).all()`, which ATen
    computes identically (broadcasting, `rtol`/`atol`, `equal_nan`), so the
    truth value is the same on every input. It is offered only when GM101 can
    then predicate the branch (checked by linting the edited text; the next
    fix round applies the predication) and is **unsafe**, as that
    predication is. Otherwise, and for `torch.equal` (False for different
    shapes, where `==` broadcasts or raises), the finding carries advice only.
    """

    code = "GM303"
    name = "tensor-comparison-to-python-bool"
    summary = "`torch.equal` / `torch.allclose` / `is_nonzero` turn tensor data into a Python bool and split the graph"
    dynamo_gb = gb_types("GB0033", "GB0124")
    valid = (
        "import torch\n\n\ndef f(x, y):\n    return torch.equal(x, y)\n",
        _HEADER + "    same = torch.isclose(x, y).all()\n    return torch.where(same, x, y), x.eq(y)\n",
        _HEADER + "    names = ['a']\n    return x, names.__eq__(['a'])\n",
        # `is_nonzero` of something not known to be a tensor: quiet
        "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x):\n    return x, load(x).is_nonzero()\n",
        # membership in a Python list of tensors or in a shape (measured: no break)
        _HEADER + "    return x, 3 in [x, y], 4 in x.shape\n",
        # a string key is looked up in a dict (nerf_pl's `if 'rgb_fine' in inputs:`), whatever typed the container
        _HEADER + "    if 'rgb_fine' in y:\n        return x\n    return y\n",
        # a container the function reads by string keys is a dict (CenterTrack's decoded heads), whatever typed it
        _HEADER + "    for head in ['hm', 'wh']:\n        if head in y:\n            x = x + y[head]\n    return x, y['hm']\n",
    )
    invalid = (
        Example(
            _HEADER + "    if torch.allclose(x, y, atol=1e-6):\n        z = x\n    else:\n"
            "        z = y\n    return z\n",
            fixed=_HEADER + "    z = torch.where(torch.isclose(x, y, atol=1e-6).all(), x, y)\n    return z\n",
            unsafe=True,
        ),
        Example(_HEADER + "    if torch.equal(x, y):\n        return x + 1\n    return x + y\n"),
        Example(_HEADER + "    ok = x.allclose(y)\n    return x, ok\n"),
        Example(_HEADER + "    if torch.allclose(x, y):\n        print('same')\n    return x\n"),
        Example(_HEADER + "    if torch.is_nonzero(x.sum()):\n        return x\n    return x + y.sum().is_nonzero()\n"),
        # the first membership test skips the rest of the frame: one finding
        Example(_HEADER + "    token = 5 if 5 in x else 6\n    later = 7 not in x\n    return x + token + later\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced, predicate in ctx.recognised(tensor_predicate, nodes.Call):
            message = f"`{snippet(call.func)}` turns tensor data into a Python bool: graph break and host sync"
            yield ctx.report(call, message, traced, isclose_fix(ctx.analysis, call, predicate), breaks_itself=True)
        reported: list[nodes.Compare] = []
        for test, traced, container in ctx.recognised(tensor_membership, nodes.Compare):
            if any(earlier.frame() is test.frame() and runs_before(earlier, test) for earlier in reported):
                continue  # Dynamo ran the rest of the function eagerly after the earlier one
            reported.append(test)
            message = (
                f"`in` on the tensor `{snippet(container)}` reads its data back as a Python bool: graph break, host "
                "sync, and the rest of the function runs eagerly"
            )
            yield ctx.report(test, message, traced, MEMBERSHIP, breaks_itself=True)
