"""The definitions, bindings and call sites of one module, from its stdlib ``ast``, each found once.

Scope analysis asks the same questions many times (what does ``m`` hold in
``train()``? who calls ``step``?). Answering each by walking the module again
made a file of 1,000 compiled functions quadratic, so everything here is
indexed on first use. Scopes are named by qualified name: ``""`` for the
module, ``f``, ``C.m``, ``f.inner``.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from graphmend_lint.analysis.ast_walk import ast_nodes
from graphmend_lint.analysis.imports import dotted_name

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
MODULE = ""

#: A path step meaning "an element of this container": what a loop variable is bound to.
ELEMENTS = -1


@dataclass(frozen=True)
class Binding:
    """``name = value`` in a scope; *path* picks the part of *value* the name gets.

    ``m, args = make()`` binds ``m`` to ``make()`` at path ``(0,)``;
    ``for layer in self.layers`` binds ``layer`` to an element of
    ``self.layers``, path ``(ELEMENTS,)``. An *element* binding adds to what
    the name holds: ``layers.append(Block())`` makes ``Block()`` one of its
    elements (``layers.extend(more)``: ``more``'s elements, path ``(ELEMENTS,)``).
    """

    value: ast.expr
    path: tuple[int, ...] = ()
    element: bool = False


@dataclass
class ModuleIndex:
    """Definitions of one module by qualified name, and lazily built indexes over them."""

    tree: ast.Module
    text: str | None = None  # the source, when known: lets call sites be found without walking every node
    functions: dict[str, FunctionNode] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)  # method qualname -> class qualname
    nested: dict[str, list[str]] = field(default_factory=dict)  # function -> functions defined directly in it
    _bindings: dict[str, dict[str, list[Binding]]] = field(default_factory=dict)
    _returns: dict[str, list[ast.expr]] = field(default_factory=dict)
    _calls_named: dict[str, list[tuple[ast.Call, str]]] = field(default_factory=dict)

    @classmethod
    def build(cls, tree: ast.Module, text: str | None = None) -> ModuleIndex:
        index = cls(tree, text)
        index._add(tree.body, prefix="", owner=None)
        return index

    def _add(self, body: list[ast.stmt], prefix: str, owner: str | None) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + node.name
                self.functions.setdefault(qualname, node)
                if owner is not None:
                    self.owner[qualname] = owner
                elif prefix[:-1] in self.functions:
                    self.nested.setdefault(prefix[:-1], []).append(qualname)
                self._add(node.body, qualname + ".", None)
            elif isinstance(node, ast.ClassDef):
                qualname = prefix + node.name
                self.classes.setdefault(qualname, node)
                self._add(node.body, qualname + ".", qualname)
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.stmt, ast.excepthandler)):
                        self._add([child] if isinstance(child, ast.stmt) else child.body, prefix, owner)

    # -- scopes -------------------------------------------------------------------

    def qualname_of(self, node: ast.AST) -> str | None:
        return self._qualnames.get(id(node))

    @cached_property
    def _qualnames(self) -> dict[int, str]:
        found = {id(node): name for name, node in self.functions.items()}
        found.update({id(node): name for name, node in self.classes.items()})
        return found

    def enclosing_scope(self, qualname: str) -> str | None:
        """The scope whose names *qualname*'s body sees next: class bodies are skipped, as Python does."""
        if qualname == MODULE:
            return None
        parent = qualname.rpartition(".")[0]
        while parent in self.classes:
            parent = parent.rpartition(".")[0]
        return parent

    def scope_body(self, scope: str) -> list[ast.stmt]:
        if scope == MODULE:
            return self.tree.body
        node = self.functions.get(scope) or self.classes.get(scope)
        return node.body if node is not None else []

    def bindings(self, scope: str, name: str) -> list[Binding]:
        """Assignments to *name* made directly in *scope* (not in functions or classes inside it)."""
        return self.all_bindings(scope).get(name, [])

    def all_bindings(self, scope: str) -> dict[str, list[Binding]]:
        table = self._bindings.get(scope)
        if table is None:
            table = self._bindings[scope] = _collect_bindings(self.scope_body(scope))
            if scope == MODULE:
                self._add_global_assignments(table)
        return table

    def _add_global_assignments(self, table: dict[str, list[Binding]]) -> None:
        """Module variables a function assigns under ``global``: PSMNet's ``main()`` runs ``global model`` then
        ``model = stackhourglass(...)``, and the compiled ``test()`` calls ``model(imgL, imgR)``."""
        for function in self.functions.values():
            declared = {name for node in _own_statements(function.body) if isinstance(node, ast.Global) for name in node.names}
            if not declared:
                continue
            for name, bindings in _collect_bindings(function.body).items():
                if name in declared:
                    table.setdefault(name, []).extend(bindings)

    def returns(self, function: str) -> list[ast.expr]:
        """The values *function*'s own ``return`` statements give back."""
        found = self._returns.get(function)
        if found is None:
            body = self.functions[function].body
            found = [s.value for s in _own_statements(body) if isinstance(s, ast.Return) and s.value is not None]
            self._returns[function] = found
        return found

    def parameters(self, function: str) -> list[ast.arg]:
        """Every parameter of *function*, positional ones first, in order."""
        arguments = self.functions[function].args
        return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]

    def is_method(self, function: str) -> bool:
        return function in self.owner and not any(
            dotted_name(d) == "staticmethod" for d in self.functions[function].decorator_list
        )

    # -- calls ---------------------------------------------------------------------

    def calls_named(self, name: str) -> list[tuple[ast.Call, str]]:
        """Calls spelled ``name(...)`` or ``<expr>.name(...)`` anywhere in the module, with their scope.

        With the source text, only the statements on lines where ``name(``
        appears are walked (a module walk per file cost more than the rest of
        scope analysis on transformers); calls split as ``name\n(`` are missed.
        """
        if "_calls_by_name" in self.__dict__ or self.text is None:
            return self._calls_by_name.get(name, [])
        found = self._calls_named.get(name)
        if found is None:
            starts = self._line_starts
            lines = {bisect.bisect_right(starts, m.start()) for m in re.finditer(rf"\b{re.escape(name)}\s*\(", self.text)}
            found = self._calls_named[name] = list(self._calls_on_lines(name, lines)) if lines else []
        return found

    def lines_of(self, node: ast.stmt) -> str | None:
        """The source text of the lines *node* spans, when the text is known."""
        if self.text is None:
            return None
        starts = self._line_starts
        end = node.end_lineno or node.lineno
        return self.text[starts[node.lineno - 1] : starts[end] if end < len(starts) else len(self.text)]

    @cached_property
    def _line_starts(self) -> list[int]:
        """Offsets where each line of the text starts (line ``n`` starts at index ``n - 1``)."""
        return [0, *(m.end() for m in re.finditer("\n", self.text or ""))]

    def _calls_on_lines(self, name: str, lines: set[int]) -> Iterator[tuple[ast.Call, str]]:
        """Calls named *name* in the statements spanning *lines*, entering only those statements."""
        stack: list[tuple[ast.stmt, str]] = [(s, MODULE) for s in reversed(self.tree.body)]
        while stack:
            statement, scope = stack.pop()
            if not any(statement.lineno <= line <= (statement.end_lineno or statement.lineno) for line in lines):
                continue
            inner = self._qualnames.get(id(statement), scope) if isinstance(statement, _DEFINITIONS) else scope
            children: list[tuple[ast.stmt, str]] = []
            for child in ast.iter_child_nodes(statement):
                if isinstance(child, ast.stmt):
                    children.append((child, inner))
                elif isinstance(child, ast.excepthandler):
                    children.extend((s, inner) for s in child.body)
                    yield from _named_calls(child.type, name, inner)
                elif isinstance(child, ast.match_case):
                    children.extend((s, inner) for s in child.body)
                else:  # decorators, tests, targets and values belong to the enclosing scope
                    yield from _named_calls(child, name, scope)
            stack.extend(reversed(children))

    def calls(self) -> Iterator[tuple[ast.Call, str]]:
        """Every call of the module with its scope, in one walk."""
        for found in self._calls_by_name.values():
            yield from found

    @cached_property
    def _calls_by_name(self) -> dict[str, list[tuple[ast.Call, str]]]:
        index: dict[str, list[tuple[ast.Call, str]]] = {}
        stack: list[tuple[ast.AST, str]] = [(self.tree, MODULE)]
        while stack:
            node, scope = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call):
                    func = child.func
                    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                    index.setdefault(name, []).append((child, scope))
                inner = self._qualnames.get(id(child), scope) if isinstance(child, _DEFINITIONS) else scope
                stack.append((child, inner))
        return index

    # -- classes -------------------------------------------------------------------

    def local_bases(self, class_name: str) -> list[str]:
        node = self.classes.get(class_name)
        if node is None:
            return []
        names = [dotted_name(base) for base in node.bases]
        return [name for name in names if name in self.classes and name != class_name]

    def mro(self, class_name: str) -> list[str]:
        """*class_name* and its local base classes, breadth first (a simple MRO), each once."""
        seen: list[str] = []
        queue = [class_name]
        while queue:
            current = queue.pop(0)
            if current not in seen:
                seen.append(current)
                queue.extend(self.local_bases(current))
        return seen

    def method(self, class_name: str, name: str) -> str | None:
        """``C.name`` through local base classes."""
        for current in self.mro(class_name):
            if f"{current}.{name}" in self.functions:
                return f"{current}.{name}"
        return None

    def overrides(self, class_name: str, name: str) -> list[str]:
        """The other methods ``self.name(...)`` in a method of *class_name* may run: what each subclass
        of this module that the module instantiates (a call spelled ``Subclass(``) resolves ``name`` to.

        pytorch-metric-learning's ``BaseMetricLossFunction.forward`` calls
        ``self.compute_loss(...)``, which the base leaves abstract; the
        compiled ``ContrastiveLoss(...)`` runs ``GenericPairLoss.compute_loss``.
        A subclass nothing here builds is left out: that keeps the classes a
        library only defines out of compiled scope.
        """
        inherited = self.method(class_name, name)
        found: list[str] = []
        for subclass in self.instantiated_subclasses(class_name):
            method = self.method(subclass, name)
            if method is not None and method != inherited and method not in found:
                found.append(method)
        return found

    def subclasses(self, class_name: str) -> list[str]:
        """The local classes deriving from *class_name*, at any depth."""
        return list(self._subclasses.get(class_name, ()))

    def instantiated_subclasses(self, class_name: str) -> list[str]:
        """The local classes deriving from *class_name* (at any depth) that a call spelled ``Subclass(`` builds,
        or that code reads as a value (``rnn = LSTM`` in a factory that returns the class to call)."""
        return [
            subclass
            for subclass in self._subclasses.get(class_name, ())
            if self.calls_named(name := subclass.rpartition(".")[2]) or name in self._names_read_as_values
        ]

    @cached_property
    def _names_read_as_values(self) -> frozenset[str]:
        """Names the module reads anywhere except as a class's base."""
        everything = ast_nodes(self.tree)
        bases = {id(base) for node in everything if isinstance(node, ast.ClassDef) for base in node.bases}
        return frozenset(
            node.id for node in everything
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in bases
        )

    @cached_property
    def _subclasses(self) -> dict[str, list[str]]:
        """Class -> the local classes that derive from it, at any depth."""
        found: dict[str, list[str]] = {}
        for subclass in self.classes:
            for base in self.mro(subclass)[1:]:
                found.setdefault(base, []).append(subclass)
        return found

    def method_names_of(self, class_name: str) -> set[str]:
        """The names of the methods *class_name* and its local bases define."""
        return {name for owner in self.mro(class_name) for name in self._methods_by_class.get(owner, ())}

    @cached_property
    def _methods_by_class(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for method, owner in self.owner.items():
            found.setdefault(owner, []).append(method.rpartition(".")[2])
        return found

    def self_assignments(self, class_name: str) -> dict[str, list[tuple[ast.expr, str]]]:
        """``self.attr = value`` in every method of the class, and the same store spelled
        ``setattr(self, "attr", value)`` or ``self.add_module("attr", value)``: attr -> (value, method qualname)."""
        return self._self_assignments.get(class_name, {})

    @cached_property
    def _self_assignments(self) -> dict[str, dict[str, list[tuple[ast.expr, str]]]]:
        index: dict[str, dict[str, list[tuple[ast.expr, str]]]] = {}
        for method, class_name in self.owner.items():
            for statement in _own_statements(self.functions[method].body):
                found: list[tuple[ast.expr, ast.expr]] = [
                    (container, added.value) for container, added in _element_additions(statement)
                ]  # ``self.blocks.append(Block())``: the attribute holds what is added (elements count as it)
                if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                    found.extend((target, statement.value) for target in targets)
                stores = [(attribute, value) for target, value in found if (attribute := _self_attribute(target))]
                stores.extend(_named_self_stores(statement))
                for attribute, value in stores:
                    index.setdefault(class_name, {}).setdefault(attribute, []).append((value, method))
        return index

    def self_additions(self, class_name: str) -> dict[str, list[tuple[Binding, str]]]:
        """Elements added to ``self.<attr>`` in every method of the class (``self.lstms.append(nn.LSTM(...))``,
        ``self.blocks.extend(more)``): attr -> (the element binding, method qualname). Iterating or indexing
        the attribute gives one of them."""
        return self._self_additions.get(class_name, {})

    @cached_property
    def _self_additions(self) -> dict[str, dict[str, list[tuple[Binding, str]]]]:
        index: dict[str, dict[str, list[tuple[Binding, str]]]] = {}
        for method, class_name in self.owner.items():
            for statement in _own_statements(self.functions[method].body):
                for container, added in _element_additions(statement):
                    attribute = _self_attribute(container)
                    if attribute is not None:
                        index.setdefault(class_name, {}).setdefault(attribute, []).append((added, method))
        return index

    def self_unpackings(self, class_name: str) -> dict[str, list[tuple[ast.expr, str, tuple[int, ...]]]]:
        """``self.a, self.b = value`` in every method of the class: attr -> (value, method qualname, path).

        The path picks the part of *value* the attribute gets (``(1,)`` for
        ``self.b``), as :class:`Binding` does for names: transformers' Perceiver
        builds ``self.position_embeddings, self.positions_projection`` with one
        factory call that returns both.
        """
        return self._self_unpackings.get(class_name, {})

    @cached_property
    def _self_unpackings(self) -> dict[str, dict[str, list[tuple[ast.expr, str, tuple[int, ...]]]]]:
        index: dict[str, dict[str, list[tuple[ast.expr, str, tuple[int, ...]]]]] = {}
        for method, class_name in self.owner.items():
            for statement in _own_statements(self.functions[method].body):
                if not isinstance(statement, ast.Assign):
                    continue
                for target in statement.targets:
                    if not isinstance(target, (ast.Tuple, ast.List)) or any(
                        isinstance(element, ast.Starred) for element in target.elts
                    ):
                        continue
                    for position, element in enumerate(target.elts):
                        name = dotted_name(element)
                        if name and name.startswith("self.") and name.count(".") == 1:
                            attributes = index.setdefault(class_name, {})
                            attributes.setdefault(name[5:], []).append((statement.value, method, (position,)))
        return index

    def attribute_stores(self, attribute: str) -> list[tuple[ast.expr, str, int]]:
        """``<expr>.attribute = value`` and ``setattr(<expr>, "attribute", value)`` in any function or at
        module level: ``(value, scope, line)``. With the source text, only a module that spells such a
        store is walked."""
        if self.text is not None and not re.search(rf"\.{re.escape(attribute)}\s*=[^=]|setattr\(", self.text):
            return []
        found: list[tuple[ast.expr, str, int]] = []
        for scope in (MODULE, *self.functions):
            for statement in _own_statements(self.scope_body(scope)):
                if isinstance(statement, ast.Assign):
                    if any(isinstance(t, ast.Attribute) and t.attr == attribute for t in statement.targets):
                        found.append((statement.value, scope, statement.lineno))
                elif isinstance(statement, ast.Expr) and _is_setattr_of(statement.value, attribute):
                    found.append((statement.value.args[2], scope, statement.lineno))  # type: ignore[attr-defined]
        return found

    @cached_property
    def attribute_names(self) -> frozenset[str]:
        """Names of every ``self.<attr>`` some local class assigns."""
        return frozenset(name for attributes in self._self_assignments.values() for name in attributes)

    @cached_property
    def class_attribute_names(self) -> frozenset[str]:
        """Names every local class body binds (``class augment: Shift = Shift``)."""
        return frozenset(name for klass in self.classes for name in self.all_bindings(klass))

    @cached_property
    def method_names(self) -> frozenset[str]:
        """Names of every method some local class defines."""
        return frozenset(name.rpartition(".")[2] for name in self.owner)


#: ``nn.Module`` methods that store a submodule under a name: ``self.add_module("rnn", nn.GRU(...))``.
_NAMED_MODULE_STORES = frozenset({"add_module", "register_module"})


def _named_self_stores(statement: ast.stmt) -> Iterator[tuple[str, ast.expr]]:
    """``(attr, value)`` for ``setattr(self, "attr", value)`` and ``self.add_module("attr", value)``."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or call.keywords:
        return
    func, args = call.func, call.args
    if isinstance(func, ast.Name) and func.id == "setattr" and len(args) == 3 and _names_self(args[0]):
        name, value = args[1], args[2]
    elif (
        isinstance(func, ast.Attribute) and func.attr in _NAMED_MODULE_STORES and _names_self(func.value) and len(args) == 2
    ):
        name, value = args
    else:
        return
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier():
        yield name.value, value


def _names_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_setattr_of(node: ast.expr, attribute: str) -> bool:
    """``setattr(obj, "attribute", value)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) == 3
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == attribute
    )


def _named_calls(node: ast.AST | None, name: str, scope: str) -> Iterator[tuple[ast.Call, str]]:
    for call in ast.walk(node) if node is not None else ():
        if isinstance(call, ast.Call):
            func = call.func
            if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")) == name:
                yield call, scope


def _own_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a scope's body, nested blocks included, without entering functions or classes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        statement = stack.pop()
        yield statement  # type: ignore[misc]
        if isinstance(statement, _DEFINITIONS):
            continue
        for block_name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(statement, block_name, None)
            if isinstance(block, list):
                stack.extend(reversed(block))
        for case in getattr(statement, "cases", ()) or ():
            stack.extend(reversed(case.body))


def _collect_bindings(body: list[ast.stmt]) -> dict[str, list[Binding]]:
    table: dict[str, list[Binding]] = {}
    for statement in _own_statements(body):
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                _bind(table, target, statement.value, ())
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            _bind(table, statement.target, statement.value, ())
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            _bind_loop(table, statement.target, statement.iter)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    _bind(table, item.optional_vars, item.context_expr, ())
        for container, added in _element_additions(statement):
            if isinstance(container, ast.Name):
                table.setdefault(container.id, []).append(added)
    _bind_comprehension_loops(table, body)
    return table


_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bind_comprehension_loops(table: dict[str, list[Binding]], body: list[ast.stmt]) -> None:
    """``[rnn(x)[0] for rnn in self.rnns]``: a comprehension's variable takes the elements of its iterable,
    like a loop's. Python scopes it to the comprehension, so it is bound here only when the function binds
    no name it uses otherwise (a function's own ``rnn`` keeps its own bindings)."""
    loops = [
        generator
        for statement in _own_statements(body)
        for field, value in ast.iter_fields(statement)
        if field not in _BLOCK_FIELDS and not isinstance(statement, _DEFINITIONS)
        for child in (value if isinstance(value, list) else [value])
        if isinstance(child, ast.AST)
        for node in ast_nodes(child)
        if isinstance(node, _COMPREHENSIONS)
        for generator in node.generators
    ]
    own = set(table)
    for generator in loops:
        names = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        if names and own.isdisjoint(names):
            _bind_loop(table, generator.target, generator.iter)


#: ``xs.append(v)`` / ``xs.insert(i, v)`` / ``xs.add_module(name, v)``: the position of the element argument.
_ADDING_METHODS = {"append": 0, "insert": 1, "add_module": 1}


def _self_attribute(target: ast.expr) -> str | None:
    """``attr`` for ``self.attr``; ``None`` for anything else."""
    name = dotted_name(target)
    return name[5:] if name and name.startswith("self.") and name.count(".") == 1 else None


def _element_additions(statement: ast.stmt) -> Iterator[tuple[ast.expr, Binding]]:
    """Containers *statement* adds elements to: ``xs.append(Block())``, ``xs.extend(more)``, ``xs += more``,
    ``xs[k] = Block()``."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        func = call.func
        if isinstance(func, ast.Attribute) and not call.keywords:
            position = _ADDING_METHODS.get(func.attr)
            if position is not None and len(call.args) > position:
                yield func.value, Binding(call.args[position], (), element=True)
            elif func.attr == "extend" and len(call.args) == 1:
                yield func.value, Binding(call.args[0], (ELEMENTS,), element=True)
    elif isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Subscript):
                yield target.value, Binding(statement.value, (), element=True)
    elif isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add):
        # ``augments += [FlipChannels(), FlipSign()]`` (demucs) extends the list
        yield statement.target, Binding(statement.value, (ELEMENTS,), element=True)


def _bind(table: dict[str, list[Binding]], target: ast.expr, value: ast.expr, path: tuple[int, ...]) -> None:
    if isinstance(target, ast.Name):
        table.setdefault(target.id, []).append(Binding(value, path))
    elif isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
        for position, element in enumerate(target.elts):
            _bind(table, element, value, (*path, position))


def _bind_loop(table: dict[str, list[Binding]], target: ast.expr, iterable: ast.expr) -> None:
    """``for layer in xs``; ``for i, layer in enumerate(xs)``; ``for a, b in zip(xs, ys)``."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and isinstance(target, ast.Tuple):
        if iterable.func.id == "enumerate" and iterable.args and len(target.elts) == 2:
            _bind(table, target.elts[1], iterable.args[0], (ELEMENTS,))
            return
        if iterable.func.id == "zip" and len(iterable.args) == len(target.elts):
            for element, source in zip(target.elts, iterable.args):
                _bind(table, element, source, (ELEMENTS,))
            return
    _bind(table, target, iterable, (ELEMENTS,))

