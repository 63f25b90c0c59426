"""Which code does torch.compile trace? (GraphMend's entry-point analysis.)

Starting from entry points (``@torch.compile``, ``torch.compile(fn)``,
``torch.compile(Model())``, ``m.compile()``...), follow what Dynamo would
inline: calls to project functions and methods, ``self.sub(x)`` where
``self.sub = Block(...)``, iteration over ``nn.ModuleList``, ``super()``
calls and the inner wrapper of project decorators. Stop at functions marked
``torch.compiler.disable`` and at code that only runs eagerly
(``if not torch.compiler.is_compiling():``).

This runs on the stdlib ``ast`` of every file, so it is cheap enough to decide
which functions are worth handing to astroid at all. Calls that leave the file
become :class:`Seed` records; the engine routes them to the file that defines
the target and re-runs the analysis there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath

from graphmend_lint.analysis.imports import ImportTable, dotted_name, statements

COMPILE_FUNCTIONS = frozenset({"torch.compile", "torch._dynamo.optimize"})
DISABLE_DECORATORS = frozenset({"torch._dynamo.disable", "torch.compiler.disable", "torch._disable_dynamo"})
#: Dynamo calls these functions once while tracing and bakes in the result: their bodies are never traced.
CONSTANT_DECORATORS = frozenset({"torch._dynamo.assume_constant_result", "torch.compiler.assume_constant_result"})
#: The attribute those decorators set; a project decorator that sets it (transformers'
#: ``_make_compile_constant``, written so that ``import_utils`` need not import torch) works the same.
CONSTANT_MARKER = "_dynamo_marked_constant"
COMPILING_PREDICATES = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"})
MAX_DEPTH = 24
_COMPILE_CALL_HINT = re.compile(r"\b(compile|optimize)\b")
_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Seed:
    """A function in another module that traced code in this module reaches."""

    qualname: str  # fully qualified, e.g. ``pkg.utils.helper`` or ``pkg.blocks.Block``
    via_decorator: bool
    chain: tuple[str, ...]


@dataclass(frozen=True)
class TracedFunction:
    """A function (or method) whose body Dynamo traces, and why."""

    qualname: str
    line: int
    col: int
    chain: tuple[str, ...]


@dataclass(frozen=True)
class ScopeFacts:
    """The compile scope of one module."""

    functions: tuple[TracedFunction, ...] = ()
    eager_only: tuple[tuple[int, int], ...] = ()
    seeds: tuple[Seed, ...] = ()

    def function_at(self, line: int, col: int) -> TracedFunction | None:
        return self._by_position.get((line, col))

    @cached_property
    def _by_position(self) -> dict[tuple[int, int], TracedFunction]:
        return {(function.line, function.col): function for function in self.functions}

    def is_eager_only(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.eager_only)


def is_compiling_check(node: ast.expr, imports: ImportTable) -> bool:
    """``torch.compiler.is_compiling()`` and its aliases (transformers' too)."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    name = imports.resolve_node(node.func)
    return name is not None and name.rsplit(".", 1)[-1] in COMPILING_PREDICATES


def eager_only_branch(test: ast.expr, imports: ImportTable) -> str | None:
    """Which branch of ``if test:`` only runs eagerly: ``"body"``, ``"orelse"`` or ``None``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and is_compiling_check(test.operand, imports):
        return "body"
    if is_compiling_check(test, imports):
        return "orelse"
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) and any(eager_only_branch(v, imports) == "body" for v in test.values):
            return "body"
        if isinstance(test.op, ast.Or) and any(is_compiling_check(v, imports) for v in test.values):
            return "orelse"
    return None


@dataclass
class _ModuleIndex:
    """Definitions of one module by qualified name (``f``, ``C.m``, ``f.inner``)."""

    functions: dict[str, _FunctionNode] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)  # method qualname -> class qualname
    nested: dict[str, list[str]] = field(default_factory=dict)  # function -> functions defined directly in it

    @classmethod
    def build(cls, tree: ast.Module) -> _ModuleIndex:
        index = cls()
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
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.stmt, ast.excepthandler)):
                        self._add([child] if isinstance(child, ast.stmt) else child.body, prefix, owner)


class ScopeAnalyzer:
    """Compute :class:`ScopeFacts` for one module."""

    def __init__(
        self,
        tree: ast.Module,
        imports: ImportTable,
        path: str,
        mode: str = "compiled",
        extra_compile_functions: Iterable[str] = (),
        text: str | None = None,
    ) -> None:
        self.tree = tree
        self.text = text
        self.imports = imports
        self.label = PurePath(path).name
        self.mode = mode
        self.compile_functions = COMPILE_FUNCTIONS | frozenset(extra_compile_functions)
        self.index = _ModuleIndex.build(tree)
        self._traced: dict[str, TracedFunction] = {}
        self._eager: list[tuple[int, int]] = []
        self._seeds: dict[tuple[str, bool], Seed] = {}
        self._attribute_classes: dict[str, dict[str, list[str]]] = {}

    # -- public -----------------------------------------------------------------

    def run(self, seeds: Iterable[Seed] = ()) -> ScopeFacts:
        for qualname, chain in self._roots():
            self._reach(qualname, chain, 0)
        for seed in seeds:
            self._reach_seed(seed)
        functions = sorted(self._traced.values(), key=lambda f: (f.line, f.col))
        return ScopeFacts(
            functions=tuple(functions),
            eager_only=tuple(sorted(set(self._eager))),
            seeds=tuple(self._seeds.values()),
        )

    def _reach_seed(self, seed: Seed) -> None:
        local = seed.qualname.removeprefix(self.imports.module + ".")
        if local in self.index.functions and seed.via_decorator:
            for inner in self._returned_wrappers(local):
                self._reach(inner, seed.chain + (local,), 0)
        elif local in self.index.functions or local in self.index.classes:
            for target in self._callable_targets(local):
                self._reach(target, seed.chain, 0)
        elif self.imports.is_imported(local):  # re-exported name: forward the seed
            self._add_seed(self.imports.resolve(local), seed.via_decorator, seed.chain)

    # -- entry points -----------------------------------------------------------

    def _is_compile(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return self.imports.resolve_node(target) in self.compile_functions

    def _roots(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        if self.mode == "all":
            for qualname in self.index.functions:
                yield qualname, ("scope=all",)
            return
        for qualname, function in self.index.functions.items():
            for decorator in function.decorator_list:
                if self._is_compile(decorator):
                    yield qualname, (f"{self.label}:{decorator.lineno} @{ast.unparse(decorator)}",)
        yield from self._compile_call_roots()
        if self.mode == "modules":
            for class_name in self.index.classes:
                if f"{class_name}.forward" in self.index.functions:
                    yield f"{class_name}.forward", ("scope=modules",)

    def _compile_call_roots(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        if self.text is not None and not _COMPILE_CALL_HINT.search(self.text):
            return  # no `compile(` or `optimize(` anywhere: skip walking every expression
        for scope_node, call in self._calls_with_scope(self.tree):
            is_method_compile = (
                isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and not call.args
            )
            if self._is_compile(call) and call.args:
                subject = call.args[0]
            elif is_method_compile:
                subject = call.func.value  # m.compile()
            else:
                continue
            origin = (f"{self.label}:{call.lineno} {ast.unparse(call)}",)
            targets = list(self._subject_targets(subject, scope_node))
            if is_method_compile and not targets:
                continue
            for target in targets:
                yield target, origin

    @staticmethod
    def _calls_with_scope(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.Call]]:
        """Every call with its enclosing function (or the module)."""
        stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
        while stack:
            node, scope = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call):
                    yield scope, child
                inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
                stack.append((child, inner))

    def _subject_targets(self, subject: ast.expr, scope: ast.AST) -> Iterator[str]:
        """What ``torch.compile(subject)`` will trace: a function or a module's forward."""
        if isinstance(subject, ast.Call):
            yield from self._instance_targets(subject.func, scope)
            return
        if isinstance(subject, ast.Attribute) and subject.attr == "forward":
            for class_name in self._expression_classes(subject.value, scope):
                yield from self._method_targets(class_name, "forward")
            return
        name = dotted_name(subject)
        if name is None:
            return
        if name in self.index.functions:
            yield name
            return
        if self.imports.is_imported(name):
            self._add_seed(self.imports.resolve(name), False, (f"{self.label} torch.compile({name})",))
            return
        for class_name in self._expression_classes(subject, scope):
            yield from self._callable_targets(class_name)

    def _instance_targets(self, constructor: ast.expr, scope: ast.AST) -> Iterator[str]:
        name = dotted_name(constructor)
        if name is None:
            return
        if name in self.index.classes:
            yield from self._callable_targets(name)
        elif self.imports.is_imported(name) and not self.imports.resolve(name).startswith("torch."):
            self._add_seed(self.imports.resolve(name), False, (f"{self.label} {name}(...)",))

    def _expression_classes(self, expr: ast.expr, scope: ast.AST) -> list[str]:
        """Local classes an expression may be an instance of, from ``name = Cls(...)``."""
        if isinstance(expr, ast.Call):
            name = dotted_name(expr.func)
            return [name] if name in self.index.classes else []
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            owner = self._enclosing_class(scope)
            return self._attribute_types(owner).get(expr.attr, []) if owner else []
        if not isinstance(expr, ast.Name):
            return []
        classes: list[str] = []
        body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else []
        for node in statements(body):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == expr.id for t in node.targets
            ):
                classes.extend(self._expression_classes(node.value, scope))
        return classes

    def _enclosing_class(self, scope: ast.AST) -> str | None:
        for qualname, function in self.index.functions.items():
            if function is scope:
                return self.index.owner.get(qualname)
        return None

    # -- reachability -----------------------------------------------------------

    def _reach(self, qualname: str, chain: tuple[str, ...], depth: int) -> None:
        function = self.index.functions.get(qualname)
        if function is None or qualname in self._traced or depth > MAX_DEPTH:
            return
        if any(self._stops_tracing(decorator) for decorator in function.decorator_list):
            return
        chain = chain + (qualname,)
        self._traced[qualname] = TracedFunction(qualname, function.lineno, function.col_offset, chain)
        for decorator in function.decorator_list:
            self._reach_decorator(decorator, chain, depth)
        owner = self.index.owner.get(qualname)
        loop_sources = self._loop_sources(function)
        for call in self._traced_calls(function.body):
            for target in self._call_targets(call, owner, loop_sources, chain):
                self._reach(target, chain, depth + 1)
        for inner in self._nested_functions(qualname):
            self._reach(inner, chain, depth + 1)

    def _stops_tracing(self, decorator: ast.expr) -> bool:
        """Dynamo does not trace the body of a function with this decorator (disabled, or a constant result)."""
        callee = self._decorator_callee(decorator)
        name = self.imports.resolve_node(callee)
        if name in DISABLE_DECORATORS or name in CONSTANT_DECORATORS:
            return True
        local = dotted_name(callee)
        return local in self.index.functions and _sets_constant_marker(self.index.functions[local])

    @staticmethod
    def _decorator_callee(decorator: ast.expr) -> ast.expr:
        return decorator.func if isinstance(decorator, ast.Call) else decorator

    def _reach_decorator(self, decorator: ast.expr, chain: tuple[str, ...], depth: int) -> None:
        if self._is_compile(decorator):
            return
        name = dotted_name(self._decorator_callee(decorator))
        if name is None:
            return
        if name in self.index.functions:
            for inner in self._returned_wrappers(name):
                self._reach(inner, chain + (f"@{name}",), depth + 1)
        elif self.imports.is_imported(name) and not self.imports.resolve(name).startswith(("torch.", "functools.")):
            self._add_seed(self.imports.resolve(name), True, chain)

    def _nested_functions(self, qualname: str) -> list[str]:
        return self.index.nested.get(qualname, [])

    def _returned_wrappers(self, decorator: str, depth: int = 0) -> list[str]:
        """The nested functions a decorator returns: what runs in place of the decorated function.

        A returned function counts when it calls the decorated function (the
        decorator's parameter); a decorator factory returns the real decorator,
        whose own wrapper counts. Nested helpers the wrapper calls are reached
        as calls. A decorator that only edits and returns its argument
        (``auto_docstring``) reaches nothing: none of its code runs when the
        decorated function is called.
        """
        nested = set(self.index.nested.get(decorator, []))
        function = self.index.functions[decorator]
        wrapped = {argument.arg for argument in function.args.args}
        wrappers: list[str] = []
        for statement in function.body:
            if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Name):
                candidate = f"{decorator}.{statement.value.id}"
                if candidate not in nested:
                    continue
                if self._calls_any(candidate, wrapped):
                    wrappers.append(candidate)  # calls the decorated function: a call-time wrapper
                elif depth < 2:
                    wrappers.extend(self._returned_wrappers(candidate, depth + 1))  # a decorator factory
        return wrappers

    def _calls_any(self, qualname: str, names: set[str]) -> bool:
        return any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
            for node in ast.walk(self.index.functions[qualname])
        )

    def _traced_calls(self, body: list[ast.stmt]) -> Iterator[ast.Call]:
        """Calls in *body*, skipping eager-only branches (and recording them)."""
        stack: list[ast.AST] = list(reversed(body))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.If):
                branch = eager_only_branch(node.test, self.imports)
                if branch is not None:
                    eager_body = node.body if branch == "body" else node.orelse
                    if eager_body:
                        self._eager.append((eager_body[0].lineno, eager_body[-1].end_lineno or eager_body[-1].lineno))
                    traced = node.orelse if branch == "body" else node.body
                    stack.extend(reversed(traced))
                    continue
            if isinstance(node, ast.Call):
                yield node
            stack.extend(reversed(list(ast.iter_child_nodes(node))))

    def _loop_sources(self, function: _FunctionNode) -> dict[str, str]:
        """``for layer in self.layers`` (or ``enumerate(self.layers)``): loop name -> attribute."""
        sources: dict[str, str] = {}
        for node in statements(function.body):
            if not isinstance(node, ast.For):
                continue
            iterable, target = node.iter, node.target
            if isinstance(iterable, ast.Call) and dotted_name(iterable.func) == "enumerate" and iterable.args:
                iterable = iterable.args[0]
                if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                    target = target.elts[1]
            attribute = dotted_name(iterable)
            if isinstance(target, ast.Name) and attribute and attribute.startswith("self."):
                sources[target.id] = attribute.removeprefix("self.")
        return sources

    def _call_targets(
        self, call: ast.Call, owner: str | None, loop_sources: dict[str, str], chain: tuple[str, ...]
    ) -> Iterator[str]:
        func = call.func
        if isinstance(func, ast.Subscript):  # self.layers[i](x)
            func = func.value
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and dotted_name(func.value.func) == "super"
            and owner
        ):
            for base in self._local_bases(owner):
                yield from self._method_targets(base, func.attr)
            return
        name = dotted_name(func)
        if name is None:
            return
        if name.startswith("self.") and owner:
            attribute = name.removeprefix("self.")
            if "." in attribute:
                return
            methods = list(self._method_targets(owner, attribute))
            if methods:
                yield from methods
                return
            for class_name in self._attribute_types(owner).get(attribute, []):
                yield from self._callable_targets(class_name)
            return
        if name in loop_sources and owner:
            for class_name in self._attribute_types(owner).get(loop_sources[name], []):
                yield from self._callable_targets(class_name)
            return
        lexical = self._lexical(name, chain[-1])
        if lexical is not None:
            yield lexical
        elif name in self.index.classes:
            return  # constructing an object; Dynamo traces __init__, rarely interesting
        elif self.imports.is_imported(name):
            resolved = self.imports.resolve(name)
            if not resolved.startswith(("torch.", "builtins.")) and resolved.count(".") >= 1:
                self._add_seed(resolved, False, chain)

    def _lexical(self, name: str, caller: str) -> str | None:
        """The function a bare name means inside *caller*: nested scopes first, then the module."""
        scope = caller
        while scope:
            candidate = f"{scope}.{name}"
            if candidate in self.index.functions and self.index.owner.get(candidate) is None:
                return candidate
            scope = scope.rpartition(".")[0]
        return name if name in self.index.functions else None

    def _callable_targets(self, class_or_function: str) -> Iterator[str]:
        """A function itself, or what calling an instance of a class runs."""
        if class_or_function in self.index.functions:
            yield class_or_function
            return
        yield from self._method_targets(class_or_function, "forward")
        yield from self._method_targets(class_or_function, "__call__")

    def _method_targets(self, class_name: str, method: str) -> Iterator[str]:
        """Resolve ``class_name.method`` through local base classes (a simple MRO)."""
        seen: set[str] = set()
        queue = [class_name]
        while queue:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            if f"{current}.{method}" in self.index.functions:
                yield f"{current}.{method}"
                return
            queue.extend(self._local_bases(current))
            for base in self._imported_bases(current):
                self._add_seed(f"{base}.{method}", False, (f"{class_name}.{method}",))

    def _local_bases(self, class_name: str) -> list[str]:
        node = self.index.classes.get(class_name)
        if node is None:
            return []
        names = [dotted_name(base) for base in node.bases]
        return [name for name in names if name in self.index.classes]

    def _imported_bases(self, class_name: str) -> list[str]:
        node = self.index.classes.get(class_name)
        if node is None:
            return []
        bases = []
        for base in node.bases:
            name = dotted_name(base)
            if name and self.imports.is_imported(name):
                resolved = self.imports.resolve(name)
                if not resolved.startswith("torch."):
                    bases.append(resolved)
        return bases

    def _attribute_types(self, class_name: str) -> dict[str, list[str]]:
        """``self.attr = Block(...)`` anywhere in the class: attr -> local classes."""
        cached = self._attribute_classes.get(class_name)
        if cached is not None:
            return cached
        types: dict[str, list[str]] = {}
        for base in reversed(self._local_bases(class_name)):
            for attribute, classes in self._attribute_types(base).items():
                types.setdefault(attribute, []).extend(classes)
        node = self.index.classes.get(class_name)
        for statement in statements(node.body) if node else ():
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            attributes = [
                name.removeprefix("self.")
                for target in targets
                if (name := dotted_name(target)) and name.startswith("self.") and name.count(".") == 1
            ]
            if not attributes:  # walk the value only for `self.x = ...` (most assignments are locals)
                continue
            classes = [
                name
                for call in ast.walk(statement.value)
                if isinstance(call, ast.Call) and (name := dotted_name(call.func)) in self.index.classes
            ]
            for attribute in attributes:
                if classes:
                    types.setdefault(attribute, []).extend(classes)
        self._attribute_classes[class_name] = types
        return types

    def _add_seed(self, qualname: str, via_decorator: bool, chain: tuple[str, ...]) -> None:
        self._seeds.setdefault((qualname, via_decorator), Seed(qualname, via_decorator, chain))


def analyze_scope(
    tree: ast.Module,
    imports: ImportTable,
    path: str,
    mode: str = "compiled",
    seeds: Iterable[Seed] = (),
    extra_compile_functions: Iterable[str] = (),
    text: str | None = None,
) -> ScopeFacts:
    """The compile scope of one module; see :class:`ScopeAnalyzer`.

    With the module's *text*, the search for ``torch.compile(...)`` calls is
    skipped when no such call can be there.
    """
    return ScopeAnalyzer(tree, imports, path, mode, extra_compile_functions, text).run(seeds)


def _sets_constant_marker(function: _FunctionNode) -> bool:
    """The function sets ``_dynamo_marked_constant`` on something (``setattr(fn, "...", True)`` or ``fn.x = True``)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and node.attr == CONSTANT_MARKER and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.Constant) and node.value == CONSTANT_MARKER:
            return True
    return False
