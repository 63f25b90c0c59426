"""The line Dynamo logs for a break, so that a finding sits where ``TORCH_LOGS=graph_breaks`` points.

Dynamo blames the bytecode instruction it could not trace, and CPython 3.11
gives instructions the positions below (measured on torch 2.13, every shape
in ``tests/test_break_sites.py``, re-measured in ``test_break_sites_dynamo.py``):

* A jump on a tensor condition. Each operand of ``and``/``or`` jumps on its
  own (``not`` is folded into the jump). A comparison jumps at its own line;
  any other operand (a name, a call such as ``x.any()``) jumps at the line of
  the construct that tests it: the ``if``/``elif``/``while``/``assert``
  keyword, the start of a conditional expression, or the start of the
  comprehension whose ``if`` clause it is; an operand of an
  ``and``/``or`` that is itself an operand of another jumps where that inner
  ``and``/``or`` starts.
* A call whose callee is a method of a value (``x.sum().item()``,
  ``logger.warning``, ``sys.stdout.write``) breaks at the line of the method's
  name, which in a chain split over lines is not the line the call starts on.
  A function of an imported module (``torch.nonzero``, ``warnings.warn``)
  breaks at the line the call starts on, like a plain ``print(...)``.
* Anything else breaks where its expression starts.
"""

from __future__ import annotations

from astroid import nodes

_TESTED_BY = (nodes.If, nodes.While, nodes.Assert, nodes.IfExp)
#: ``from torch import nn`` binds a module too.
TORCH_SUBMODULES = frozenset(
    {"nn", "functional", "fft", "linalg", "special", "cuda", "autograd", "distributed", "jit", "optim", "utils"}
)


def break_position(node: nodes.NodeNG) -> tuple[int, int]:
    """Line and UTF-8 byte column where Dynamo attributes the break *node* causes."""
    owner = _testing_construct(node)
    if owner is not None:
        part = node
        while isinstance(part, nodes.UnaryOp) and part.op == "not":
            part = part.operand
        if isinstance(part, nodes.Compare):
            return part.lineno, part.col_offset
        jumper = _nested_bool_op(node) or owner
        return jumper.lineno, jumper.col_offset
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and not _is_module(node.func.expr):
        func = node.func
        if func.end_lineno is not None and func.end_col_offset is not None and func.end_lineno != node.lineno:
            return func.end_lineno, func.end_col_offset - len(func.attrname.encode())
    return node.lineno, node.col_offset


def _testing_construct(node: nodes.NodeNG) -> nodes.NodeNG | None:
    """The ``if``/``while``/``assert``/conditional expression whose test *node* is (an operand of)."""
    current = node
    parent = current.parent
    while isinstance(parent, nodes.BoolOp) or (isinstance(parent, nodes.UnaryOp) and parent.op == "not"):
        current, parent = parent, parent.parent
    if isinstance(parent, _TESTED_BY) and parent.test is current:
        return parent
    if isinstance(parent, nodes.Comprehension) and current in parent.ifs:
        return parent.parent  # ``[r for r in x if r.any()]`` jumps where the ``[`` is
    return None


def _nested_bool_op(operand: nodes.NodeNG) -> nodes.BoolOp | None:
    """The ``and``/``or`` holding *operand* when it is itself an operand of another ``and``/``or``.

    CPython 3.11 places the jump of such an operand where that inner
    ``and``/``or`` starts: ``if a or (``, newline, ``b and t.any()``, newline, ``):`` logs the second line.
    """
    current = operand
    while isinstance(current.parent, nodes.UnaryOp) and current.parent.op == "not":
        current = current.parent
    parent = current.parent
    if isinstance(parent, nodes.BoolOp) and isinstance(parent.parent, nodes.BoolOp):
        return parent
    return None


def _is_module(receiver: nodes.NodeNG) -> bool:
    """``torch``, ``F`` or ``torch.nn.functional``: a module (bound by an import), not a value.

    ``sys.stdout`` is rooted in a module but is a value; only ``torch.``
    chains are taken for modules (``torch.linalg``, ``torch.nn.functional``).
    """
    if isinstance(receiver, nodes.Attribute):
        root = receiver
        while isinstance(root, nodes.Attribute):
            root = root.expr
        return isinstance(root, nodes.Name) and receiver.as_string().startswith("torch.") and bound_to_module(root)
    return isinstance(receiver, nodes.Name) and bound_to_module(receiver)


def bound_to_module(name: nodes.Name) -> bool:
    """*name* is bound only by imports of modules (``import torch``, ``from torch import nn``)."""
    try:
        _, bindings = name.lookup(name.name)
    except Exception:  # astroid lookups can fail on odd code
        return False
    return bool(bindings) and all(_imports_module(binding, name.name) for binding in bindings)


def _imports_module(binding: nodes.NodeNG, local: str) -> bool:
    if isinstance(binding, nodes.Import):
        return True
    if isinstance(binding, nodes.ImportFrom):
        imported = next((n for n, alias in binding.names if (alias or n) == local), "")
        return imported in TORCH_SUBMODULES and (binding.modname or "").startswith("torch")
    return False
