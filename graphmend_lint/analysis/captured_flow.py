"""Where a list captured by ``t.tolist()`` goes, across the calls of one file.

Under ``capture_scalar_outputs`` Dynamo traces ``t.tolist()`` of an integer
tensor of static length as a list of unbacked symbols. Used as the sizes of
``x.split(sizes)`` they stay in the graph: jetmoe's router returns
``gates.long().sum(0).tolist()`` to its caller, which hands it to two
``JetMoeParallelExperts`` whose ``forward`` splits the routed tokens by it
(measured on the real model, torch 2.13: the GB0033 site goes, outputs and
gradients equal). The file-wide hazard scan
(:mod:`graphmend_lint.analysis.capture_hazards`) treats any captured number
that is returned or passed to a call as needed concretely, since the other
side's uses are out of its sight. This module follows such a list to the
other side instead, and says whether every use is known and harmless:

* a name bound to it, a tuple it is packed into (``topo_info = (..., sizes)``)
  and the element unpacked or indexed back out of it;
* ``return``: every call in traced code of this file that resolves to the
  function (:meth:`ValueOracle.called_function`) is followed; none found is
  unresolved;
* an argument of a call that resolves to a function of this file: the
  parameter it binds is followed in the callee;
* the sink: the split sizes of ``x.split(sizes)`` / ``torch.split(x, sizes)``,
  and ``len(sizes)`` (the tensor's static length).

Anything else (an element read as a number, a loop over the list, a call
that does not resolve to a traced function of this file, ``*args``, a
closure) is an escape, and the walk stops with its reason. Callers in
other files are not seen: a compiled caller there that branches on the list
would break at that branch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.host_values import bound_parameter, builtin_name, method_call
from graphmend_lint.analysis.lookup import is_parameter, reaching_bindings
from graphmend_lint.analysis.values import Kind, ValueOracle

if TYPE_CHECKING:
    from graphmend_lint.context import FileAnalysis

#: Calls, returns and packings followed before giving up; jetmoe's attention path needs 6.
_MAX_DEPTH = 10
_SPLIT_KEYWORDS = frozenset({"split_size", "split_size_or_sections"})

Path = tuple[int, ...]  # the element of nested tuples that holds the list: () is the list itself


@dataclass(frozen=True)
class Escape:
    """A use of the captured list the walk cannot prove harmless."""

    node: nodes.NodeNG
    why: str

    def __str__(self) -> str:
        return f"`{snippet(self.node)}` (line {self.node.lineno}) {self.why}"


class _Walk:
    """One walk from one ``.tolist()``: each (expression, path) is followed once."""

    def __init__(self, analysis: FileAnalysis) -> None:
        self.analysis = analysis
        self.seen: set[tuple[int, Path]] = set()
        self.traced = {id(function) for function, _ in analysis.traced_functions()}

    def value(self, expression: nodes.NodeNG, path: Path, depth: int) -> Escape | None:
        """Follow the value of *expression*, whose element at *path* is the captured list."""
        if depth > _MAX_DEPTH:
            return Escape(expression, "is passed on too far to follow")
        if (id(expression), path) in self.seen:
            return None
        self.seen.add((id(expression), path))
        parent = expression.parent
        if isinstance(parent, (nodes.Tuple, nodes.List)) and _packed(parent, expression):
            return self.value(parent, (parent.elts.index(expression), *path), depth)
        if isinstance(parent, nodes.Subscript) and parent.value is expression:
            return self._element(parent, path, depth)
        if isinstance(parent, nodes.Assign) and parent.value is expression:
            return next((e for t in parent.targets if (e := self.target(t, path, depth)) is not None), None)
        if isinstance(parent, nodes.Return):
            return self._returned(parent, path, depth)
        if isinstance(parent, nodes.Call) and expression is not parent.func:
            return self._argument(parent, expression, path, depth)
        if isinstance(parent, nodes.Keyword) and isinstance(parent.parent, nodes.Call):
            return self._argument(parent.parent, parent, path, depth)
        return Escape(parent, "uses it as a Python value")

    def target(self, target: nodes.NodeNG, path: Path, depth: int) -> Escape | None:
        """Follow an assignment target that receives the value."""
        if isinstance(target, nodes.AssignName):
            reads = _reads(target)
            if reads is None:
                return Escape(target, "is rebound or read from another scope")
            return next((e for read in reads if (e := self.value(read, path, depth)) is not None), None)
        if isinstance(target, (nodes.Tuple, nodes.List)) and path:
            if any(isinstance(element, nodes.Starred) for element in target.elts) or path[0] >= len(target.elts):
                return Escape(target, "unpacks it with `*`")
            return self.target(target.elts[path[0]], path[1:], depth)
        return Escape(target, "stores it where it cannot be followed")

    def _element(self, subscript: nodes.Subscript, path: Path, depth: int) -> Escape | None:
        """``topo_info[3]``: the list when the index is its position, nothing captured for another element."""
        index = subscript.slice
        if not (path and isinstance(index, nodes.Const) and type(index.value) is int and index.value >= 0):
            return Escape(subscript, "reads an element of it as a number")
        return self.value(subscript, path[1:], depth) if index.value == path[0] else None

    def _returned(self, statement: nodes.Return, path: Path, depth: int) -> Escape | None:
        function = statement.frame()
        callers = [call for call, _ in self.analysis.traced_nodes(nodes.Call) if self._callee(call) is function]
        if not isinstance(function, nodes.FunctionDef) or not callers:
            return Escape(statement, "returns it to callers this file does not show")
        return next((e for call in callers if (e := self.value(call, path, depth + 1)) is not None), None)

    def _argument(self, call: nodes.Call, argument: nodes.NodeNG, path: Path, depth: int) -> Escape | None:
        if not path and (self._split_sizes(call, argument) or builtin_name(call) == "len"):
            return None
        callee = self._callee(call)
        parameter = bound_parameter(callee, call, argument) if callee is not None else None
        if parameter is None:
            return Escape(call, "passes it to a call this file does not resolve to one parameter")
        return self.target(parameter, path, depth + 1)

    def _callee(self, call: nodes.Call) -> nodes.FunctionDef | None:
        """The traced function of this file *call* runs (an untraced body is pruned to ``...``: nothing to follow)."""
        function = self.analysis.values.called_function(call)
        return function if function is not None and id(function) in self.traced else None

    def _split_sizes(self, call: nodes.Call, argument: nodes.NodeNG) -> bool:
        """*argument* is the sizes of ``x.split(sizes, ...)`` or ``torch.split(x, sizes, ...)`` on a tensor."""
        values = self.analysis.values
        if values.qualified_name(call.func) == "torch.split":
            tensor, position = (call.args[0] if call.args else None), 1
        elif method_call(call, "split") is not None:
            tensor, position = call.func.expr, 0
        else:
            return False
        if tensor is None or not (values.is_tensor(tensor) or _untyped_parameter(values, tensor)):
            return False
        if isinstance(argument, nodes.Keyword):
            return argument.arg in _SPLIT_KEYWORDS
        return position < len(call.args) and call.args[position] is argument


def _untyped_parameter(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """A parameter the oracle cannot type (jetmoe's ``inputs``): splitting it by a list of ints makes it a tensor.

    ``str.split`` takes no list and NumPy arrays have no ``split`` method, so
    eagerly only a tensor accepts ``inputs.split(sizes)``.
    """
    return isinstance(node, nodes.Name) and values.kind(node) is not Kind.STATIC and is_parameter(node)


def _packed(container: nodes.Tuple | nodes.List, element: nodes.NodeNG) -> bool:
    """*element* is an element of *container*, and no ``*`` before it shifts its position."""
    if element not in container.elts:
        return False
    before = container.elts[: container.elts.index(element) + 1]
    return not any(isinstance(part, nodes.Starred) for part in before)


def _reads(target: nodes.AssignName) -> list[nodes.Name] | None:
    """The reads of its name that *target*'s binding reaches, or ``None`` when a nested scope reads the name."""
    scope = target.scope()
    reads = []
    for read in _names(scope, target.name):
        if read.scope() is not scope:
            return None
        try:
            reaching = reaching_bindings(read)
        except Exception:  # astroid lookups can fail on odd code: then the flow is not known
            return None
        if target in reaching:
            reads.append(read)
    return reads


def _names(scope: nodes.LocalsDictNodeNG, name: str) -> Iterator[nodes.Name]:
    return (node for node in scope.nodes_of_class(nodes.Name) if node.name == name)


def tolist_escape(analysis: FileAnalysis, call: nodes.Call) -> Escape | None:
    """The first use of ``t.tolist()``'s list that is not split sizes through known calls, or ``None``.

    Computed once per call and file.
    """
    return analysis.shared(f"tolist-escape:{id(call)}", lambda: _Walk(analysis).value(call, (), 0))
