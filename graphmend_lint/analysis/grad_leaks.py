"""Where a tensor switched on with ``requires_grad_()`` leaves the compiled graph (GB8985).

Dynamo traces ``t.requires_grad_()`` on a tensor computed in the frame, then
checks the graph's outputs: when an output that requires grad derives from
that tensor, it restarts and breaks at the ``requires_grad_()`` call
("requires_grad_() intermediate leaked as output"). A graph's outputs are what
the function returns, what it stores on the module, and what is still alive
at a later graph break. Measured on torch 2.13 (CPU), each breaks:

* ``h = y.detach().requires_grad_(); return h * 3`` (a derived value);
* ``z.requires_grad_(); out = x + z; return out`` (derived through a name);
* ``z.requires_grad_(); self.cache = z``;
* ``h = x.detach().requires_grad_()`` then ``torch.autograd.grad(y, h)`` or
  ``y.backward()``, which break while ``h`` is alive;

and these do not: a derived value that is detached, compared (``> 0``:
booleans need no grad), reduced to ``argmax``, computed under
``torch.no_grad()``, or only measured (``z.shape``); a name bound again to a
fresh tensor before the ``return``.

Derivation is followed through assignments to plain names in the same
function, through arithmetic, indexing, containers and tensor methods; a
read under anything else (a comparison, an attribute that is not a method
call, a call of a non-tensor function) is not followed: when unsure, no leak.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import ValueOracle

#: Tensor methods whose result needs no grad, or is no tensor: a value derived through them does not leak.
_NON_DIFFERENTIABLE_METHODS = frozenset(
    {"detach", "argmax", "argmin", "long", "int", "bool", "short", "byte", "item", "tolist", "size", "dim",
     "numel", "nonzero", "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "sign", "data_ptr",
     "stride", "storage_offset", "numpy", "any", "all"}
)  # fmt: skip
#: Calls that break the graph while their tensor arguments are alive (``trace_autograd_ops`` off).
_AUTOGRAD_BREAKS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
_GRAD_DISABLING = frozenset({"torch.no_grad", "torch.inference_mode"})


@dataclass(frozen=True)
class Leak:
    """How the switched-on tensor leaves the graph, as the message names it (``"the compiled function returns"``)."""

    what: str


def leak_of(values: ValueOracle, call: nodes.Call, autograd_breaks: bool = True) -> Leak | None:
    """How the tensor *call* (``<t>.requires_grad_()``) switches on reaches a graph output, else ``None``.

    *autograd_breaks*: ``torch.autograd.grad`` and ``.backward()`` break the
    graph (``trace_autograd_ops`` off, the default), so a tensor they read is
    alive at a break.
    """
    if _directly_returned(call):
        return Leak("the compiled function returns")
    tainted = _seed_bindings(call)
    if not tainted:
        return None
    function = call.scope()
    after = call.statement().tolineno
    reads = [
        name for name in function.nodes_of_class(nodes.Name, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef))
        if name.lineno > after
    ]  # fmt: skip
    _spread(values, reads, tainted)
    for name in reads:
        if not _reads_tainted(name, tainted):
            continue
        leak = _leak_at(values, name, autograd_breaks)
        if leak is not None:
            return leak
    return None


def _directly_returned(node: nodes.NodeNG) -> bool:
    """*node* is a ``return`` value, or an element of a returned tuple (``return torch.zeros_like(q).requires_grad_()``)."""
    parent = node.parent
    while isinstance(parent, (nodes.Tuple, nodes.List)):
        parent = parent.parent
    return isinstance(parent, nodes.Return)


def _seed_bindings(call: nodes.Call) -> set[nodes.NodeNG]:
    """The bindings whose later reads see the switched-on tensor.

    ``n = <...>.requires_grad_()`` binds *n* to it; a bare ``z.requires_grad_()``
    switches on the tensor the bindings of *z* reaching the call hold.
    """
    statement = call.parent
    if isinstance(statement, nodes.Assign) and statement.value is call:
        return {target for target in statement.targets if isinstance(target, nodes.AssignName)}
    receiver = call.func.expr if isinstance(call.func, nodes.Attribute) else None
    if isinstance(statement, nodes.Expr) and isinstance(receiver, nodes.Name):
        try:
            return set(reaching_bindings(receiver))
        except Exception:  # astroid lookups can fail on odd code: then nothing is known to leak
            return set()
    return set()


def _reads_tainted(name: nodes.Name, tainted: set[nodes.NodeNG]) -> bool:
    try:
        return any(binding in tainted for binding in reaching_bindings(name))
    except Exception:  # astroid lookups can fail on odd code: no taint known
        return False


def _spread(values: ValueOracle, reads: list[nodes.Name], tainted: set[nodes.NodeNG]) -> None:
    """Add to *tainted* every plain name assigned a value derived from a tainted read, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for name in reads:
            if not _reads_tainted(name, tainted):
                continue
            root = _derived_root(values, name)
            statement = root.parent if root is not None else None
            if isinstance(statement, nodes.Assign) and statement.value is root and not _grad_disabled(values, statement):
                for target in statement.targets:
                    if isinstance(target, nodes.AssignName) and target not in tainted:
                        tainted.add(target)
                        changed = True


def _derived_root(values: ValueOracle, read: nodes.Name) -> nodes.NodeNG | None:
    """The outermost expression whose value still carries *read*'s autograd history, or ``None`` when one step drops it."""
    node: nodes.NodeNG = read
    while True:
        parent = node.parent
        if isinstance(parent, nodes.BinOp) or (isinstance(parent, nodes.UnaryOp) and parent.op in {"-", "+"}):
            node = parent
        elif isinstance(parent, (nodes.Tuple, nodes.List, nodes.Starred, nodes.Dict)):
            node = parent
        elif isinstance(parent, nodes.Subscript) and parent.value is node:
            node = parent
        elif isinstance(parent, nodes.IfExp) and node is not parent.test:
            node = parent
        elif isinstance(parent, nodes.Attribute) and isinstance(parent.parent, nodes.Call) and parent.parent.func is parent:
            if parent.attrname in _NON_DIFFERENTIABLE_METHODS:
                return None
            node = parent.parent
        elif isinstance(parent, (nodes.Call, nodes.Keyword)):
            call = parent if isinstance(parent, nodes.Call) else parent.parent
            if not (isinstance(call, nodes.Call) and call.func is not node and _tensor_function(values, call)):
                return None
            node = call
        else:
            return node


def _tensor_function(values: ValueOracle, call: nodes.Call) -> bool:
    """A ``torch.*`` function, or a call giving a tensor, whose result carries its tensor arguments' history.

    Not ``torch.zeros_like`` and friends (a fresh tensor), nor ``torch.argmax``
    and the other functions named like the methods in :data:`_NON_DIFFERENTIABLE_METHODS`.
    """
    name = values.qualified_name(call.func) or ""
    last = name.rpartition(".")[2] if name else (call.func.attrname if isinstance(call.func, nodes.Attribute) else "")
    if last in _NON_DIFFERENTIABLE_METHODS or last.endswith("_like") or name in _AUTOGRAD_BREAKS:
        return False
    return name.startswith("torch.") or values.is_tensor(call)


def _grad_disabled(values: ValueOracle, statement: nodes.NodeNG) -> bool:
    """*statement* runs under ``with torch.no_grad():`` / ``torch.inference_mode()`` in its function."""
    for ancestor in _ancestors_in_function(statement):
        if isinstance(ancestor, nodes.With):
            for item, _ in ancestor.items:
                func = item.func if isinstance(item, nodes.Call) else item
                if values.qualified_name(func) in _GRAD_DISABLING:
                    return True
    return False


def _ancestors_in_function(node: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    parent = node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        yield parent
        parent = parent.parent


def _leak_at(values: ValueOracle, read: nodes.Name, autograd_breaks: bool) -> Leak | None:
    """How a tainted *read* makes the tensor a graph output: returned, stored on ``self``, or alive at an autograd break."""
    autograd = _autograd_break_of(values, read) if autograd_breaks else None
    if autograd is not None:
        return Leak(f"still alive at the `{autograd}` break on line {read.lineno}")
    root = _derived_root(values, read)
    if root is None or _grad_disabled(values, root.parent):
        return None
    statement = root.parent
    if isinstance(statement, nodes.Return):
        return Leak("the compiled function returns (through a value derived from it)")
    if isinstance(statement, nodes.Assign) and statement.value is root:
        for target in statement.targets:
            if isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == "self":
                return Leak(f"stored on `self.{target.attrname}`")
    return None


def _autograd_break_of(values: ValueOracle, read: nodes.Name) -> str | None:
    """The autograd call that breaks with *read* among its tensors (``torch.autograd.grad(y, h)``, ``h.backward()``)."""
    node: nodes.NodeNG = read
    while not node.is_statement:
        parent = node.parent
        if isinstance(parent, nodes.Call) and values.qualified_name(parent.func) in _AUTOGRAD_BREAKS:
            return values.qualified_name(parent.func)
        if isinstance(parent, nodes.Attribute) and parent.attrname == "backward" and isinstance(parent.parent, nodes.Call):
            return ".backward()"
        node = parent
    return None
