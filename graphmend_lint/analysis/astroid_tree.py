"""Build the astroid tree of a module from its already-parsed ``ast``, pruned.

astroid costs about 5k lines/s on this project's 2-core machines, roughly ten
times the stdlib parser. Scope analysis already knows which functions
torch.compile traces, so astroid only sees those bodies (plus the
``__init__`` of their classes and of those classes' bases in the file, where
attributes get their values, with the methods it calls on ``self``, and of the classes traced code builds, and every method of a class with a
``functools.cached_property``: GM509 reads the getter, and looks for a
``self.<name> = ...`` that fills the cache). Every other
function body becomes ``...`` at its original line, so positions still match
the source. The file is never parsed twice: astroid rebuilds from the same
``ast`` tree the scope analysis used.
"""

from __future__ import annotations

import ast
import copy

from astroid import MANAGER, nodes
from astroid.rebuilder import TreeRebuilder

from graphmend_lint.analysis.ast_walk import ast_nodes
from graphmend_lint.analysis.imports import ImportTable, child_statements
from graphmend_lint.analysis.scope import ScopeFacts
from graphmend_lint.analysis.torch_stubs import preload_torch_stubs


def _duck_typed_classes(scope: ScopeFacts) -> set[str]:
    """Names of the file's classes that parameters of traced functions hold by the attributes read on them
    (:mod:`~graphmend_lint.analysis.duck_typing`): their ``__init__`` says what those attributes are."""
    if scope.resolver is None:
        return set()
    duck = scope.resolver.duck_typing
    return {klass.rpartition(".")[2] for f in scope.functions for klass in duck.classes_of_parameters(f.qualname)}


def _constructed_classes(tree: ast.Module, traced: set[tuple[int, int]], duck_typed: set[str]) -> set[str]:
    """Names of the file's classes that traced code calls or that have traced methods, and their base
    classes named in the file.

    Their ``__init__`` is kept: building a module in compiled code breaks
    inside it (GM506 reads where), and a traced method reads what the
    ``__init__`` of its class's bases assign to ``self`` (a buffer a base
    registers). Only statements are walked, and only traced bodies down to
    their expressions.
    """
    bases: dict[str, set[str]] = {}
    called: set[str] = set(duck_typed)
    stack = list(child_statements(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ClassDef):
            bases[node.name] = {base.id for base in node.bases if isinstance(base, ast.Name)}
            if any(
                (method.lineno, method.col_offset) in traced
                for method in node.body
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            ):
                called.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.lineno, node.col_offset) in traced:
            called.update(
                call.func.id for call in ast_nodes(node) if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            )
            continue  # the walk covered what is nested in it
        stack.extend(child_statements(node))
    pending, constructed = [name for name in called if name in bases], set()
    while pending:
        name = pending.pop()
        if name in bases and name not in constructed:
            constructed.add(name)
            pending.extend(bases[name])
    return constructed


CACHED_PROPERTY = "functools.cached_property"


def _is_cached_property(function: ast.FunctionDef | ast.AsyncFunctionDef, imports: ImportTable) -> bool:
    return any(imports.resolve_node(decorator) == CACHED_PROPERTY for decorator in function.decorator_list)


def _functions_to_keep(tree: ast.Module, scope: ScopeFacts, imports: ImportTable) -> set[int]:
    """ids of function nodes whose bodies astroid must see."""
    traced = {(f.line, f.col) for f in scope.functions}
    constructed = _constructed_classes(tree, traced, _duck_typed_classes(scope))
    keep: set[int] = set()
    initialised: list[list[ast.FunctionDef | ast.AsyncFunctionDef]] = []  # methods of classes whose __init__ is kept

    def visit(node: ast.AST, owner_has_traced: bool) -> bool:
        """Return whether *node* contains a traced function."""
        contains = False
        for child in child_statements(node):  # a def is always a statement
            if isinstance(child, ast.ClassDef):
                methods = [m for m in child.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
                has_traced = any((m.lineno, m.col_offset) in traced for m in methods)
                if any(_is_cached_property(m, imports) for m in methods):
                    keep.update(id(m) for m in methods)  # the getters, and every `self.<name> = ...`
                if has_traced or child.name in constructed:
                    initialised.append(methods)
                contains |= visit(child, has_traced or child.name in constructed)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = visit(child, False)
                is_traced = (child.lineno, child.col_offset) in traced
                if is_traced or inner or (owner_has_traced and child.name == "__init__"):
                    keep.add(id(child))
                contains |= inner or is_traced
            else:
                contains |= visit(child, owner_has_traced)
        return contains

    visit(tree, False)
    keep |= _init_helpers(initialised)
    return keep


def _init_helpers(classes: list[list[ast.FunctionDef | ast.AsyncFunctionDef]]) -> set[int]:
    """ids of the methods a kept ``__init__`` calls on ``self``, and those they call in turn.

    Attributes often get their values there: snntorch's ``SpikingNeuron.__init__`` calls
    ``self._snn_register_buffer(...)``, which registers the ``reset_mechanism_val`` buffer that
    ``Leaky`` branches on (GB0170). A helper is matched by name among the methods of every class
    whose ``__init__`` is kept, so one a subclass's ``__init__`` calls on its base is found too.
    """
    by_name: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for methods in classes:
        for method in methods:
            by_name.setdefault(method.name, []).append(method)
    found: set[int] = set()
    pending = list(by_name.get("__init__", []))
    while pending:
        method = pending.pop()
        for call in ast_nodes(method):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
                continue
            for helper in by_name.get(func.attr, []):
                if id(helper) not in found and helper.name != "__init__":
                    found.add(id(helper))
                    pending.append(helper)
    return found


def _prune(tree: ast.Module, keep: set[int]) -> ast.Module:
    pruned = copy.copy(tree)
    pruned.body = [_prune_statement(statement, keep) for statement in tree.body]
    return pruned


def _prune_statement(node: ast.stmt, keep: set[int]) -> ast.stmt:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        clone = copy.copy(node)
        if id(node) in keep:
            clone.body = [_prune_statement(s, keep) for s in node.body]
        else:
            first = node.body[0]
            stub = ast.Expr(value=ast.Constant(value=Ellipsis))
            ast.copy_location(stub, first)
            ast.copy_location(stub.value, first)
            clone.body = [stub]
        return clone
    if isinstance(node, ast.ClassDef):
        clone = copy.copy(node)
        clone.body = [_prune_statement(s, keep) for s in node.body]
        return clone
    return node


def build_astroid_module(
    tree: ast.Module,
    text: str,
    module_name: str,
    path: str,
    scope: ScopeFacts,
    imports: ImportTable,
    is_package: bool = False,
) -> nodes.Module:
    """An astroid module for *tree* holding only the bodies that matter.

    The module is not left in astroid's global cache: linting thousands of
    files must not keep thousands of trees alive.
    """
    preload_torch_stubs()
    pruned = _prune(tree, _functions_to_keep(tree, scope, imports))
    rebuilder = TreeRebuilder(MANAGER, text)
    module = rebuilder.visit_module(pruned, module_name, path, is_package)
    _bind_imported_names(rebuilder)
    return module


def _bind_imported_names(rebuilder: TreeRebuilder) -> None:
    """Make ``from m import x`` bind ``x`` for ``lookup``, without importing ``m``.

    astroid's own post-build step also infers every ``self.x = ...`` and runs
    its transforms; both import other modules from disk, which measured as
    half the lint time on transformers. The value oracle reads assignments
    itself, so only the name bindings are needed. Star imports stay unbound.
    """
    for from_node, _ in rebuilder._import_from_nodes:
        for name, alias in from_node.names:
            if name != "*":
                from_node.parent.set_local(alias or name, from_node)


def def_position(function: nodes.FunctionDef) -> tuple[int, int]:
    """Line and byte column of the ``def`` keyword, as the stdlib ``ast`` reports them.

    astroid's ``lineno`` of a decorated function is the first decorator's line;
    scope analysis (on ``ast``) identifies functions by the ``def`` itself.
    """
    if function.position is not None:
        return function.position.lineno, function.position.col_offset
    return function.lineno, function.col_offset
