"""Which values of traced code are sparse tensors, asked of the resolver.

Dynamo refuses to wrap a sparse tensor (GB0015, "Attempted to wrap sparse
Tensor"; measured on torch 2.13): wherever traced code first reads one (a
global adjacency matrix, a parameter given one, a name bound to
``torch.sparse_coo_tensor(...)``) it breaks and runs the rest of the frame
eagerly. Graph code builds its adjacency once (pygcn's
``torch.sparse.FloatTensor(indices, values, shape)`` in ``load_data``) and
passes it down through every layer (``model(features, adj)``, then
``self.gc1(x, adj)``), so the resolver of scope analysis
(:mod:`~graphmend_lint.analysis.resolve`) answers what a read denotes,
through tuple returns, globals and call sites, and a ``forward`` parameter is
what the file's calls of that module pass for it (the resolver itself leaves
``forward`` parameters to the module's caller).
"""

from __future__ import annotations

import ast

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import AstResolution, ast_resolution
from graphmend_lint.analysis.module_index import MODULE
from graphmend_lint.analysis.resolve import SPARSE_BUILDERS, SPARSE_VALUES, Target, What, passed_argument
from graphmend_lint.context import FileAnalysis

__all__ = ["SPARSE_BUILDERS", "SparseTensors", "sparse_tensors"]


def sparse_tensors(analysis: FileAnalysis) -> SparseTensors:
    """The file's :class:`SparseTensors`, built on first use."""
    return analysis.shared("sparse_tensors", lambda: SparseTensors(ast_resolution(analysis)))


class SparseTensors:
    """Answers "is this a sparse tensor?" for one file, remembering what ``forward`` parameters are given."""

    def __init__(self, resolution: AstResolution) -> None:
        self.resolution = resolution
        self._forward_arguments: dict[tuple[str, str], bool] = {}

    def is_sparse(self, node: nodes.NodeNG) -> bool:
        """Every object *node* may denote is a tensor one of :data:`SPARSE_BUILDERS` built, or a tensor's
        ``to_sparse()`` (nothing known: no)."""
        targets = self.resolution.targets(node)
        if targets:
            return _all_sparse(targets)
        if not isinstance(node, nodes.Name):
            return False
        return self._forward_parameter(self.resolution.scope_of(node), node.name)

    def _forward_parameter(self, scope: str, name: str) -> bool:
        if scope == MODULE:
            return False
        key = (scope, name)
        if key not in self._forward_arguments:
            self._forward_arguments[key] = False  # a cycle of modules passing it around proves nothing
            self._forward_arguments[key] = self._forward_given_sparse(scope, name)
        return self._forward_arguments[key]

    def _forward_given_sparse(self, function: str, name: str) -> bool:
        """*name* is a parameter of a module's ``forward`` that the function never rebinds, and every call in
        the file of an instance of that module (or of a subclass) passes a sparse tensor for it."""
        index, resolver = self.resolution.index, self.resolution.resolver
        owner = index.owner.get(function)
        if owner is None or function.rpartition(".")[2] != "forward" or index.bindings(function, name):
            return False
        definition = index.functions[function]
        positional = [p.arg for p in (*definition.args.posonlyargs, *definition.args.args)][1:]
        if name not in positional:
            return False
        position = positional.index(name)
        modules = {Target(What.INSTANCE, klass) for klass in (owner, *index.subclasses(owner))}
        passed, calls = [], 0
        for call, scope in index.calls():
            if modules.isdisjoint(resolver.resolve(call.func, scope)):
                continue
            calls += 1
            argument = passed_argument(call, name, position, is_keyword=True)
            if argument is None:
                return False
            targets = resolver.resolve(argument, scope)
            if not targets and isinstance(argument, ast.Name):  # ``self.gc1(x, adj)``: the caller's own parameter
                if not self._forward_parameter(scope, argument.id):
                    return False
                continue
            passed.append(targets)
        return calls > 0 and all(_all_sparse(targets) for targets in passed)


def _all_sparse(targets: frozenset[Target]) -> bool:
    return bool(targets) and all(t.what is What.EXTERNAL and t.name in SPARSE_VALUES for t in targets)
