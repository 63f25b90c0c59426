"""GM512: computing with ``t.data_ptr()`` inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

_POINTER_METHODS = frozenset({"data_ptr", "const_data_ptr"})
_ORDERING = frozenset({"<", "<=", ">", ">="})
_EQUALITY = frozenset({"==", "!="})
NO_FIX = Fix.advice(
    "no source fix: check the pointer outside the compiled function, or skip the check under compile "
    "(`torch.compiler.is_compiling() or ...`), since Dynamo's tensors have no address",
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"


@dataclass(frozen=True)
class PointerUse:
    """An expression that needs a data pointer's number, and what Dynamo does with it."""

    pointer: nodes.NodeNG  # the ``t.data_ptr()`` call, or a name bound to one
    outcome: str


def _pointer_call(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``t.data_ptr()`` / ``t.const_data_ptr()`` on anything not known to be a plain Python value."""
    return (
        isinstance(node, nodes.Call)
        and isinstance(node.func, nodes.Attribute)
        and node.func.attrname in _POINTER_METHODS
        and not node.args
        and not node.keywords
        and values.kind(node.func.expr) is not Kind.STATIC
    )


def _is_pointer(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """A data-pointer call, or a name every binding of which is one."""
    if _pointer_call(values, node):
        return True
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(_pointer_call(values, value) for value in bound)
    return False


def pointer_use(values: ValueOracle, node: nodes.NodeNG) -> PointerUse | None:
    """*node* computes with a data pointer the way Dynamo cannot follow (measured, torch 2.13), else ``None``.

    Arithmetic (``ptr % 16``, ``ptr + n``) and ordering (``ptr < other``) raise
    inside Dynamo, which gives up on the frame ("Observed exception",
    GB0088); ``ptr == 0`` breaks as an unproven pointer comparison (GB5976).
    ``a.data_ptr() == b.data_ptr()`` is left alone: Dynamo folds it when both
    are the same tensor, which a linter cannot tell.
    """
    if isinstance(node, nodes.BinOp):
        for operand in (node.left, node.right):
            if _is_pointer(values, operand):
                return PointerUse(operand, "Dynamo cannot compute with it and gives up on the function")
        return None
    if not isinstance(node, nodes.Compare) or len(node.ops) != 1:
        return None
    op, right = node.ops[0]
    left_pointer, right_pointer = _is_pointer(values, node.left), _is_pointer(values, right)
    if op in _ORDERING and (left_pointer or right_pointer):
        return PointerUse(node.left if left_pointer else right, "Dynamo cannot order it and gives up on the function")
    if op in _EQUALITY and left_pointer != right_pointer:
        return PointerUse(node.left if left_pointer else right, "Dynamo cannot prove the comparison: graph break")
    return None


class DataPointerArithmetic(Rule):
    """## What it does
    Flags arithmetic and comparisons on a tensor's data pointer
    (`t.data_ptr()`, `t.const_data_ptr()`, or a name bound to one) in code
    that `torch.compile` traces: an alignment test `x.data_ptr() % 16 == 0`
    (flash-attention's `maybe_align`), pointer offsets, `ptr == 0`.

    ## Why is this bad
    Under Dynamo a tensor has no address: `data_ptr()` is a symbolic value
    that can be passed around and compared with another pointer of the same
    tensor, nothing more. Arithmetic or ordering on it raises inside Dynamo,
    which gives up on the whole function and runs it eagerly ("Observed
    exception", GB0088), and `ptr == 0` is an unproven pointer comparison
    (GB5976; measured, torch 2.13). `a.data_ptr() == b.data_ptr()` is not
    flagged: it is folded when both are the same tensor.

    ## Example
    ```python
    def maybe_align(x, alignment_in_bytes=16):
        return x if x.data_ptr() % alignment_in_bytes == 0 else x.clone()
    ```

    ## Use instead
    Check alignment outside the compiled function, or skip the check under
    compile (the compiler allocates and aligns its own buffers):
    ```python
    def maybe_align(x, alignment_in_bytes=16):
        if torch.compiler.is_compiling() or x.data_ptr() % alignment_in_bytes == 0:
            return x
        return x.clone()
    ```

    ## Fix safety
    No automatic fix: what the pointer check guards (a kernel's alignment
    requirement, aliasing) decides whether skipping it under compile is right.
    """

    code = "GM512"
    name = "data-pointer-arithmetic"
    summary = "arithmetic or comparisons on `data_ptr()` make Dynamo give up on the function"
    dynamo_gb = gb_types("GB0088", "GB5976")
    valid = (
        # passing the pointer on, or comparing two pointers, is traced (measured)
        _HEADER + "    ptr = x.data_ptr()\n    same = x.data_ptr() == x.detach().data_ptr()\n    return x * 2, ptr, same\n",
        _HEADER + "    if torch.compiler.is_compiling() or x.data_ptr() % 16 == 0:\n        return x\n    return x.clone()\n",
        "import torch\n\n\ndef f(x):\n    return x.data_ptr() % 16\n",
    )
    invalid = (
        Example(_HEADER + "    return x if x.data_ptr() % 16 == 0 else x.clone()\n"),
        Example(_HEADER + "    ptr = x.data_ptr()\n    y = x * 2\n    return y, ptr + 4\n"),
        Example(_HEADER + "    y = x * 2\n    return y + int(x.data_ptr() == 0)\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced, found in ctx.recognised(pointer_use, nodes.BinOp, nodes.Compare):
            message = f"`{snippet(node)}` uses the data pointer `{snippet(found.pointer)}`: {found.outcome}"
            yield ctx.report(node, message, traced, NO_FIX)
