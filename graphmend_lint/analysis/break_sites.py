"""The line Dynamo logs for a break, so that a finding sits where ``TORCH_LOGS=graph_breaks`` points.

Dynamo blames the bytecode instruction it could not trace, and CPython 3.11
gives instructions the positions below (measured on torch 2.13, every shape
in ``tests/test_break_sites.py``, re-measured in ``test_break_sites_dynamo.py``):

* A jump on a tensor condition. Each operand of ``and``/``or`` jumps on its
  own (``not`` is folded into the jump). A comparison jumps at its own line,
  and the compiler keeps that position for what follows: any other operand (a
  name, a call such as ``x.any()``) jumps where the last comparison before it
  in the test jumped, or, with none before it, at the line of the construct
  that tests it: the ``if``/``elif``/``while``/``assert`` keyword, the start
  of a conditional expression, or the start of the comprehension whose ``if``
  clause it is (``if (``, newline, ``mask is None``, newline, ``and
  x.eq(pad).any()`` logs the second line: metaseq's decoder, and every
  ``a > 0 and (b and t.any())`` split over lines).
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


def break_position(node: nodes.NodeNG, *, breaks_itself: bool = False) -> tuple[int, int]:
    """Line and UTF-8 byte column where Dynamo attributes the break *node* causes.

    A tensor operand of a test breaks where the test jumps on it; a call that *breaks_itself* (``torch.equal``,
    ``t.is_inference()``) breaks where it is called, even as an operand of a test spread over several lines
    (nomic's ``or (self.training and self._cos_cached.is_inference())``: GB0045 on that line, measured).
    """
    tested = None if breaks_itself else _testing_construct(node)
    if tested is not None:
        owner, test = tested
        part = node
        while isinstance(part, nodes.UnaryOp) and part.op == "not":
            part = part.operand
        if isinstance(part, nodes.Compare):
            return part.lineno, part.col_offset
        jumper = _last_comparison_before(test, part) or owner
        return jumper.lineno, jumper.col_offset
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and not _is_module(node.func.expr):
        func = node.func
        if func.end_lineno is not None and func.end_col_offset is not None and func.end_lineno != node.lineno:
            return func.end_lineno, func.end_col_offset - len(func.attrname.encode())
    return node.lineno, node.col_offset


def _testing_construct(node: nodes.NodeNG) -> tuple[nodes.NodeNG, nodes.NodeNG] | None:
    """The ``if``/``while``/``assert``/conditional expression whose test *node* is (an operand of), and that
    whole test."""
    current = node
    parent = current.parent
    while isinstance(parent, nodes.BoolOp) or (isinstance(parent, nodes.UnaryOp) and parent.op == "not"):
        current, parent = parent, parent.parent
    if isinstance(parent, _TESTED_BY) and parent.test is current:
        return parent, current
    if isinstance(parent, nodes.Comprehension) and current in parent.ifs:
        return parent.parent, current  # ``[r for r in x if r.any()]`` jumps where the ``[`` is
    return None


def _last_comparison_before(test: nodes.NodeNG, operand: nodes.NodeNG) -> nodes.Compare | None:
    """The last comparison among the operands the test jumps on before *operand* (in the order Python
    evaluates them), whose position CPython 3.11 keeps for the jumps after it; ``None`` when there is none."""
    last = None
    for leaf in _jump_operands(test):
        if leaf is operand:
            return last
        if isinstance(leaf, nodes.Compare):
            last = leaf
    return None


def _jump_operands(test: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The operands a test jumps on, in order: the leaves of its ``and``/``or``, with ``not`` folded."""
    if isinstance(test, nodes.BoolOp):
        return [leaf for value in test.values for leaf in _jump_operands(value)]
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        return _jump_operands(test.operand)
    return [test]


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
