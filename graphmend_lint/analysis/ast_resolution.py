"""What an object of traced code *is*, asked of scope analysis' resolver over the file's whole stdlib tree.

The astroid tree rules walk keeps only the bodies torch.compile traces (see
:mod:`astroid_tree`), but what an object is gets decided in the bodies it
drops: an optimizer built in ``main()`` and passed to the compiled step, a
factory's ``return``, a hook registered in a setup function. Scope analysis
answers "what does this expression denote?" on the full stdlib tree with
:class:`~graphmend_lint.analysis.resolve.Resolver` (bindings, factories,
parameters through their call sites, tuple unpacking). This module hands the
rules that need object identities the resolver scope analysis built for the
file (shared, never rebuilt), and puts astroid nodes to it: an astroid expression is re-read as a stdlib
expression and resolved in the scope (``C.method``, ``f.inner``) it sits in.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from astroid import nodes

from graphmend_lint.analysis.ast_walk import ast_nodes
from graphmend_lint.analysis.imports import ImportTable, dotted_name
from graphmend_lint.analysis.module_index import MODULE, ModuleIndex
from graphmend_lint.analysis.resolve import Resolver, Target

if TYPE_CHECKING:
    from graphmend_lint.context import FileAnalysis

_SHARED_KEY = "ast-resolution"


@dataclass(frozen=True)
class AstResolution:
    """The file's stdlib index and resolver, and the bridge from astroid nodes to them."""

    index: ModuleIndex
    resolver: Resolver
    imports: ImportTable
    #: Each astroid expression's stdlib twin, kept alive: the resolver memoises by ``id()``.
    _expressions: dict[nodes.NodeNG, ast.expr | None] = field(default_factory=dict)

    def scope_of(self, node: nodes.NodeNG) -> str:
        """The qualified name of the function (or module) whose body *node* is in, as the index names scopes."""
        names = [
            parent.name for parent in _ancestors(node) if isinstance(parent, (nodes.FunctionDef, nodes.ClassDef))
        ]
        scope = ".".join(reversed(names))
        while scope and scope not in self.index.functions:
            scope = scope.rpartition(".")[0]  # a class body is no scope of its own
        return scope or MODULE

    def targets(self, node: nodes.NodeNG) -> frozenset[Target]:
        """What the astroid expression *node* may denote, resolved where it stands."""
        if node not in self._expressions:
            self._expressions[node] = stdlib_expression(node)
        expression = self._expressions[node]
        if expression is None:
            return frozenset()
        scope = self.scope_of(node)
        found = self.resolver.resolve(expression, scope)
        return found | self._global_assignments(node.name, scope) if isinstance(node, nodes.Name) else found

    def _global_assignments(self, name: str, scope: str) -> frozenset[Target]:
        """What functions declaring ``global name`` assign to it (``def main(): global optimizer; optimizer = ...``),
        when *name*, seen from *scope*, is the module's."""
        lookup = self.resolver.lookup(name, scope)
        if lookup is not None and lookup.scope != MODULE:
            return frozenset()
        found: set[Target] = set()
        for function in self._global_declarations.get(name, ()):
            for binding in self.index.bindings(function, name):
                if not binding.element:
                    found.update(self.resolver.resolve(binding.value, function, binding.path))
        return frozenset(found)

    @cached_property
    def _global_declarations(self) -> dict[str, list[str]]:
        """Name -> the functions whose ``global`` statement names it."""
        declared: dict[str, list[str]] = {}
        if self.index.text is not None and "global" not in self.index.text:
            return declared  # most files have none: skip walking every function
        for qualname, function in self.index.functions.items():
            for statement in ast_nodes(function):
                if isinstance(statement, ast.Global):
                    for name in statement.names:
                        declared.setdefault(name, []).append(qualname)
        return declared

    def imported(self, expression: ast.expr) -> str | None:
        """The qualified name an annotation or base class names through the imports (``Optimizer``
        -> ``torch.optim.Optimizer``), also when it is written as a string."""
        if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
            try:
                expression = ast.parse(expression.value, mode="eval").body
            except SyntaxError:
                return None
        name = dotted_name(expression)
        return self.imports.resolve(name) if name is not None and self.imports.is_imported(name) else None


def ast_resolution(analysis: FileAnalysis) -> AstResolution:
    """The file's :class:`AstResolution`, built on first use and shared by every rule that asks."""
    return analysis.shared(_SHARED_KEY, lambda: _build(analysis))


def _build(analysis: FileAnalysis) -> AstResolution:
    """Scope analysis' own index and resolver: it already parsed and indexed the file the same way."""
    index, resolver = analysis.scope.index, analysis.scope.resolver
    if index is None or resolver is None:
        raise ValueError("the file's scope facts were not computed by scope analysis (no index or resolver)")
    return AstResolution(index, resolver, analysis.imports)


def stdlib_expression(node: nodes.NodeNG) -> ast.expr | None:
    """*node* as a stdlib expression (names only matter to the resolver, not positions)."""
    try:
        parsed = ast.parse(node.as_string(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    return parsed.body


def _ancestors(node: nodes.NodeNG) -> list[nodes.NodeNG]:
    found = []
    parent = node.parent
    while parent is not None:
        found.append(parent)
        parent = parent.parent
    return found
