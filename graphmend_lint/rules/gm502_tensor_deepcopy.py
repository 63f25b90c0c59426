"""GM502: ``copy.deepcopy`` / ``copy.copy`` of tensors, modules or mutable containers inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.module_attributes import constructor_of, is_tensor_like
from graphmend_lint.analysis.values import ValueOracle, enclosing_class
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.tensor_copy import container_copy_fix, detach_clone_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: copy the module (or container) once, outside the compiled function",
)
SHALLOW_TENSOR_ADVICE = Fix.advice(
    "no automatic fix: `copy.copy` of a tensor shares its storage and cuts its autograd history; "
    "use `t.clone()` for a copy, or drop the copy",
)
#: What a display or comprehension builds, by node type.
_CONTAINERS: dict[type[nodes.NodeNG], str] = {
    nodes.List: "a list", nodes.ListComp: "a list", nodes.Dict: "a dict", nodes.DictComp: "a dict",
    nodes.Set: "a set", nodes.SetComp: "a set",
}  # fmt: skip
_HEADER = "import copy\n\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"


def _is_module(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``self`` of an ``nn.Module`` subclass, or a ``torch.nn`` layer built in the class or the function."""
    if isinstance(node, nodes.Name) and node.name == "self":
        klass = enclosing_class(node)
        return klass is not None and "forward" in klass.locals
    module, _, name = (constructor_of(values, node) or "").rpartition(".")
    return module.startswith("torch.nn") and name[:1].isupper() and name not in {"Parameter", "Buffer"}


def copies_tensors(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """What tensor-holding object *node* is: "a tensor", "a module", "a container of tensors", else ``None``."""
    if is_tensor_like(values, node):
        return "a tensor"
    if _is_module(values, node):
        return "a module"
    if isinstance(node, (nodes.List, nodes.Tuple, nodes.Set)):
        elements = node.elts
    elif isinstance(node, nodes.Dict):
        elements = [value for _, value in node.items]
    else:
        return None
    return "a container of tensors" if any(is_tensor_like(values, e) for e in elements) else None


def mutable_container(node: nodes.NodeNG) -> str | None:
    """Which mutable container *node* is ("a list", "a dict" or "a set") when it is a display or
    comprehension of one, or a name every binding of which is one; else ``None``. ``copy.copy`` of these calls the type's own ``copy``
    method, which Dynamo skips (GB0007); a tuple, a string or a plain object copies without a break
    (measured, torch 2.13)."""
    found = [node] if not isinstance(node, nodes.Name) else bound_values(node) or []
    kinds = {_CONTAINERS.get(type(value)) for value in found}
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


class TensorDeepcopy(Rule):
    """## What it does
    Flags `copy.deepcopy(...)` and `copy.copy(...)` of a tensor, a module
    (`self`, a submodule), or a list/tuple/dict literal holding a tensor, in
    code that `torch.compile` traces; and `copy.copy(...)` of a list, dict or
    set (a display, a comprehension, or a name bound only to one). Deep
    copies of plain Python values (a config dict) are traced and are not
    flagged, nor are shallow copies of tuples, strings or plain objects.

    ## Why is this bad
    Dynamo does not copy these objects: it ends the graph and runs the copy
    eagerly. A deep copy of a tensor logs GB4198 ("Attempted to copy.deepcopy
    a tensor"), inside `copy.py` rather than at your call. A shallow copy
    goes through the object's `__reduce_ex__`: GB0208 for a tensor, GB0008
    for a module; and through the container's own `copy` method for a list,
    dict or set, which Dynamo skips (GB0007). All measured on torch 2.13.
    This rule reports the call.

    ## Example
    ```python
    @torch.compile
    def f(x):
        y = x * 2
        snapshot = copy.deepcopy(y)
        sizes = copy.copy([1, 2])
        return y + snapshot * sizes[1]
    ```

    ## Use instead
    ```python
    @torch.compile
    def f(x):
        y = x * 2
        snapshot = y.detach().clone()
        sizes = [1, 2].copy()
        return y + snapshot * sizes[1]
    ```

    ## Fix safety
    `copy.deepcopy(t)` of a tensor becomes `t.detach().clone()`: same
    values, dtype and device, no autograd history. It is **unsafe**: a leaf
    that requires grad deep-copies into a new leaf that requires grad, while
    `detach().clone()` does not require grad; attributes set on the tensor
    object and a subclass's `__deepcopy__` are not carried over.
    `copy.copy(c)` of a list, dict or set becomes `c.copy()`, which is what
    `copy.copy` calls for those exact types: **safe**. A shallow copy of a
    tensor shares its storage and starts a new autograd leaf, which no
    traced operation reproduces: advice only, as for modules and containers
    holding tensors.
    """

    code = "GM502"
    name = "tensor-deepcopy"
    summary = "`copy.deepcopy` / `copy.copy` of a tensor, module or mutable container in compiled code splits the graph"
    dynamo_gb = gb_types("GB4198", "GB0208", "GB0008", "GB0007")
    valid = (
        _HEADER + "    cfg = copy.deepcopy({'a': 1})\n    return x * cfg['a']\n",
        "import copy\n\nimport torch\n\n\ndef f(x):\n    return copy.deepcopy(x)\n",
        _HEADER + "    return x.detach().clone(), copy.copy((1, 2))\n",
    )
    invalid = (
        Example(
            _HEADER + "    y = x * 2\n    return y + copy.deepcopy(y)\n",
            fixed=_HEADER + "    y = x * 2\n    return y + y.detach().clone()\n",
            unsafe=True,
        ),
        Example(
            "from copy import deepcopy\n\nimport torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
            "    def forward(self, x):\n        fc = deepcopy(self.fc)\n        return fc(x)\n\n\n"
            "model = torch.compile(M())\n"
        ),
        Example(_HEADER + "    state = copy.deepcopy([x, 1])\n    return state[0]\n"),
        Example(
            _HEADER + "    sizes = [1, 2]\n    return x * copy.copy(sizes)[1]\n",
            fixed=_HEADER + "    sizes = [1, 2]\n    return x * sizes.copy()[1]\n",
        ),
        Example(_HEADER + "    y = copy.copy(x)\n    return y + 1\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced in ctx.traced_nodes(nodes.Call):
            function = ctx.values.qualified_name(call.func)
            if function not in {"copy.deepcopy", "copy.copy"} or len(call.args) != 1:
                continue
            found = _copied(ctx, function == "copy.deepcopy", call)
            if found is not None:
                what, fix = found
                yield ctx.report(call, f"`{function}` of {what} in compiled code causes a graph break", traced, fix)


def _copied(ctx: RuleContext, deep: bool, call: nodes.Call) -> tuple[str, Fix] | None:
    """What the copy call copies that Dynamo cannot, and the fix for it; ``None`` when it traces.

    A shallow copy of a tuple of tensors traces (it returns the tuple), so shallow copies are judged
    by the container's own type, not by what it holds."""
    copied = call.args[0]
    container = None if deep else mutable_container(copied)
    if container is not None:
        return container, container_copy_fix(ctx.analysis, call, copied)
    what = copies_tensors(ctx.values, copied)
    if what is None or (not deep and what == "a container of tensors"):
        return None
    if what != "a tensor":
        return what, NO_FIX
    return what, detach_clone_fix(ctx.analysis, call, copied) if deep else SHALLOW_TENSOR_ADVICE
