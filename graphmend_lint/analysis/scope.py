"""Which code does torch.compile trace? (GraphMend's entry-point analysis.)

Starting from entry points (``@torch.compile``, ``torch.compile(fn)``,
``torch.compile(Model())``, ``m.compile()``...), follow what Dynamo would
inline: calls to project functions and methods, ``self.sub(x)`` where
``self.sub = Block(...)``, iteration over ``nn.ModuleList``, ``super()``
calls, the inner wrapper of project decorators, functions handed to
``checkpoint`` or ``map``, and the ``__getitem__`` and ``@property`` getters
of local classes that subscripts and attribute reads run. Stop at functions marked
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
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath

from graphmend_lint.analysis.imports import ImportTable, dotted_name
from graphmend_lint.analysis.module_index import MODULE, ModuleIndex
from graphmend_lint.analysis.resolve import COMPILER_FACTORIES, Resolver, Target, What, instance_of_class_read

DISABLE_DECORATORS = frozenset({"torch._dynamo.disable", "torch.compiler.disable", "torch._disable_dynamo"})
#: Dynamo puts a call to these functions in the graph as one opaque op: their bodies run eagerly, at run time.
OPAQUE_OP_DECORATORS = frozenset({"torch.library.custom_op", "torch._library.custom_ops.custom_op"})
#: Base classes of custom autograd functions: Dynamo traces ``forward`` and ``backward`` behind ``.apply(...)``.
AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
#: Dynamo calls these functions eagerly once while tracing and bakes in the result: their bodies are not traced.
CONSTANT_DECORATORS = frozenset({"torch._dynamo.assume_constant_result", "torch.compiler.assume_constant_result"})
#: The attribute those decorators set; a project decorator that sets it (transformers'
#: ``_make_compile_constant``, written so that ``import_utils`` need not import torch) works the same.
CONSTANT_MARKER = "_dynamo_marked_constant"
COMPILING_PREDICATES = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"})
#: Predicates Dynamo folds to ``False``: the TorchScript scripting and tracing checks (measured, torch 2.13:
#: ``t.sum() if torch.jit.is_tracing() else 3`` and ``if torch.jit.is_tracing(): print(...)`` compile with
#: ``fullgraph=True``), so their branches never run compiled (transformers' ``torch_int``, Swin's windows).
#: Imported functions that call their first argument with the rest: Dynamo traces into it (measured, torch 2.13:
#: a mask read in a checkpointed function logs GB0036 at that read).
ARGUMENT_CALLING = frozenset({"torch.utils.checkpoint.checkpoint"})
SCRIPTING_PREDICATES = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing"})
#: Imported callees never worth routing to another file.
_NOT_SEEDED = ("torch.", "builtins.", "functools.")


def _compile_call_hint(compile_functions: Iterable[str]) -> re.Pattern[str]:
    """A pattern one of whose words every compiling call spells: the last part of each compile function
    (configured ones too) and of each compiler factory, and ``compile`` for ``nn.Module.compile``."""
    words = {"compile"} | {name.rsplit(".", 1)[-1] for name in [*compile_functions, *COMPILER_FACTORIES]}
    return re.compile(r"\b(" + "|".join(sorted(map(re.escape, words))) + r")\b")


@dataclass(frozen=True)
class Seed:
    """A function in another module that traced code in this module reaches."""

    qualname: str  # fully qualified, e.g. ``pkg.utils.helper`` or ``pkg.blocks.Block``
    via_decorator: bool
    chain: tuple[str, ...]


@dataclass(frozen=True)
class SeedSinks:
    """The names of a module through which a seed from another file can still add traced code.

    The engine re-lints a file for a fresh seed only when :meth:`takes` says so. Most seeds in a
    big package change nothing where they land: transformers routes ~10,000, mostly for attributes
    (``BertLayer.dropout``), ``__call__`` of classes that define none, and classes whose ``forward``
    is traced already, and re-linting their 238 files cost about a quarter of a cold lint.
    """

    untraced: frozenset[str] = frozenset()  # functions not traced yet, and classes a call of which reaches more
    functions: frozenset[str] = frozenset()  # every function (a decorator seed may reach the wrappers it returns)
    imported: frozenset[str] = frozenset()  # the roots of imported names (a re-export forwards the seed)

    def takes(self, local: str, via_decorator: bool) -> bool:
        """Would a seed for *local* (a name in this module) change its scope? Mirrors ``_reach_seed``."""
        if via_decorator and local in self.functions:
            return True
        return local in self.untraced or local.partition(".")[0] in self.imported


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
    #: ``def`` positions of functions traced code calls that a decorator marks ``torch.compiler.disable``:
    #: Dynamo runs them eagerly, and each call from traced code breaks the graph.
    disabled: tuple[tuple[int, int], ...] = ()
    #: ``(def line, def col, call line, call col)``: a call in traced code that runs the function defined there,
    #: as scope analysis resolved it (``self.block(x)`` runs ``Block.forward``), for typing parameters from calls.
    calls_into: tuple[tuple[int, int, int, int], ...] = ()
    seed_sinks: SeedSinks = SeedSinks()
    #: The file's stdlib index and resolver this analysis built, kept for the rules that ask what an object
    #: of traced code is (:mod:`~graphmend_lint.analysis.ast_resolution`), so the file is not parsed and
    #: indexed a second time. Tools, not facts: they take no part in comparisons.
    index: ModuleIndex | None = field(default=None, compare=False, repr=False)
    resolver: Resolver | None = field(default=None, compare=False, repr=False)

    def function_at(self, line: int, col: int) -> TracedFunction | None:
        return self._by_position.get((line, col))

    @cached_property
    def _by_position(self) -> dict[tuple[int, int], TracedFunction]:
        return {(function.line, function.col): function for function in self.functions}

    def calls_of(self, line: int, col: int) -> tuple[tuple[int, int], ...]:
        """Positions of the traced calls that run the function whose ``def`` is at *line*, *col*."""
        return self._calls_by_callee.get((line, col), ())

    @cached_property
    def _calls_by_callee(self) -> dict[tuple[int, int], tuple[tuple[int, int], ...]]:
        found: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for def_line, def_col, call_line, call_col in self.calls_into:
            found.setdefault((def_line, def_col), []).append((call_line, call_col))
        return {position: tuple(calls) for position, calls in found.items()}

    def is_eager_only(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.eager_only)

    #: ``getattr(<module>, <name>)`` calls whose name is a string known to the file (a literal reaching it
    #: through parameters and call sites): ``(line, col)`` of the call -> the qualified names it may give.
    attribute_lookups: tuple[tuple[tuple[int, int], tuple[str, ...]], ...] = ()

    def is_disabled(self, line: int, col: int) -> bool:
        return (line, col) in self.disabled

    def looked_up(self, line: int, col: int) -> tuple[str, ...]:
        """What the ``getattr(<module>, <name>)`` call at *line*, *col* may give; ``()`` when unknown."""
        return dict(self.attribute_lookups).get((line, col), ())


def is_compiling_check(node: ast.expr, imports: ImportTable) -> bool:
    """``torch.compiler.is_compiling()`` and its aliases (transformers' too)."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    name = imports.resolve_node(node.func)
    return name is not None and name.rsplit(".", 1)[-1] in COMPILING_PREDICATES


def compiled_value(test: ast.expr, imports: ImportTable) -> bool | None:
    """The value *test* has while Dynamo traces, when it is a constant there.

    ``torch.compiler.is_compiling()`` (and its aliases) is ``True``;
    ``torch.jit.is_scripting()`` and ``torch.jit.is_tracing()`` are ``False``
    (Dynamo folds them; the scripting branch never runs compiled, measured on
    torchvision's GoogLeNet).
    """
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        value = compiled_value(test.operand, imports)
        return None if value is None else not value
    if isinstance(test, ast.BoolOp):
        values = [compiled_value(v, imports) for v in test.values]
        decisive = isinstance(test.op, ast.Or)  # ``or`` is decided by a True operand, ``and`` by a False one
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    if is_compiling_check(test, imports):
        return True
    if isinstance(test, ast.Call) and not test.args and imports.resolve_node(test.func) in SCRIPTING_PREDICATES:
        return False
    return None


def eager_only_branch(test: ast.expr, imports: ImportTable) -> str | None:
    """Which branch of ``if test:`` never runs compiled: ``"body"``, ``"orelse"`` or ``None``."""
    value = compiled_value(test, imports)
    return None if value is None else ("orelse" if value else "body")


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
        self.index = ModuleIndex.build(tree, text)
        self.resolver = Resolver(self.index, imports, extra_compile_functions)
        self._compile_hint = _compile_call_hint(self.resolver.compile_functions)
        self._traced: dict[str, TracedFunction] = {}
        self._queue: deque[tuple[str, tuple[str, ...]]] = deque()
        self._eager: list[tuple[int, int]] = []
        self._seeds: dict[tuple[str, bool], Seed] = {}
        self._disabled: set[tuple[int, int]] = set()
        self._patches_reached = False
        self._calls_into: set[tuple[int, int, int, int]] = set()

    # -- public -----------------------------------------------------------------

    def run(self, seeds: Iterable[Seed] = ()) -> ScopeFacts:
        for qualname, chain in self._roots():
            self._enqueue(qualname, chain)
        for seed in seeds:
            self._reach_seed(seed)
        self._drain()
        while self._reach_module_hooks():
            self._drain()
        functions = sorted(self._traced.values(), key=lambda f: (f.line, f.col))
        return ScopeFacts(
            functions=tuple(functions),
            eager_only=tuple(sorted(set(self._eager))),
            seeds=tuple(self._seeds.values()),
            disabled=tuple(sorted(self._disabled)),
            attribute_lookups=tuple(self._attribute_lookups()) if self._traced else (),
            calls_into=tuple(sorted(self._calls_into)),
            seed_sinks=self._seed_sinks(),
            index=self.index,
            resolver=self.resolver,
        )

    def _seed_sinks(self) -> SeedSinks:
        """What a later seed could still reach here (see :class:`SeedSinks`), once this run is drained."""
        untraced = {name for name in self.index.functions if name not in self._traced}
        untraced.update(name for name in self.index.classes if self._call_reaches_more(name))
        return SeedSinks(frozenset(untraced), frozenset(self.index.functions), frozenset(self.imports.aliases))

    def _call_reaches_more(self, class_name: str) -> bool:
        """Would a seed for *class_name* enqueue an untraced method or add a new seed (:meth:`_method_targets`)?"""
        for method in ("forward", "__call__"):
            found = self.index.method(class_name, method)
            if found is not None:
                if found not in self._traced:
                    return True
            elif any((f"{base}.{method}", False) not in self._seeds for base in self.resolver.imported_bases(class_name)):
                return True
        return False

    def _attribute_lookups(self) -> Iterator[tuple[tuple[int, int], tuple[str, ...]]]:
        """``getattr(nn, rnn_type)`` where every value ``rnn_type`` may hold is a literal of this file.

        torchaudio's SQUIM, asteroid and ESPnet build their recurrent layer as
        ``getattr(nn, rnn_type)(...)`` with ``rnn_type="LSTM"`` passed down
        through constructors: which layer it is decides whether Dynamo can
        trace its call (GM501).
        """
        for call, scope in self.index.calls_named("getattr"):
            if len(call.args) != 2 or call.keywords or not isinstance(call.func, ast.Name):
                continue
            module = self.resolver.imported_name(call.args[0], scope)
            if module is None or self.resolver.lookup("getattr", scope) is not None:
                continue
            names = self.resolver.constant_strings(call.args[1], scope)
            if names and all(name.isidentifier() for name in names):
                yield (call.lineno, call.col_offset), tuple(sorted(f"{module}.{name}" for name in names))

    def _reach_seed(self, seed: Seed) -> None:
        local = seed.qualname.removeprefix(self.imports.module + ".")
        if local in self.index.functions and seed.via_decorator:
            for inner in self._returned_wrappers(local):
                self._enqueue(inner, seed.chain + (local,))
        elif local in self.index.functions or local in self.index.classes:
            for target in self._callable_targets(local):
                self._enqueue(target, seed.chain)
        elif self.imports.is_imported(local):  # re-exported name: forward the seed
            self._add_seed(self.imports.resolve(local), seed.via_decorator, seed.chain)

    # -- entry points -----------------------------------------------------------

    def _roots(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        if self.mode == "all":
            for qualname in self.index.functions:
                yield qualname, ("scope=all",)
            return
        for qualname, function in self.index.functions.items():
            where = self.index.enclosing_scope(qualname) or MODULE
            for decorator in function.decorator_list:
                if self.resolver.is_compiling_decorator(decorator, where):
                    yield qualname, (f"{self.label}:{decorator.lineno} @{ast.unparse(decorator)}",)
        yield from self._compile_call_roots()
        if self.mode == "modules":
            for class_name in self.index.classes:
                if f"{class_name}.forward" in self.index.functions:
                    yield f"{class_name}.forward", ("scope=modules",)

    def _compile_call_roots(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """``torch.compile(subject)`` in every spelling, and ``subject.compile()`` (``nn.Module.compile``)."""
        if self.text is not None and not self._compile_hint.search(self.text):
            return  # no compile function's name anywhere: no call can compile anything
        for call, scope in self.index.calls():
            subject = self.resolver.compiled_subject(call, scope)
            is_method_compile = subject is None and _is_module_compile(call)
            if is_method_compile:
                subject = call.func.value  # type: ignore[union-attr]
            if subject is None:
                continue
            origin = (f"{self.label}:{call.lineno} {_short(call)}",)
            if isinstance(subject, ast.Lambda):  # ``torch.compile(lambda x: model(x) + 1)``: its calls are traced
                for inner in (node for node in ast.walk(subject.body) if isinstance(node, ast.Call)):
                    yield from ((name, origin) for name in self._call_targets(inner, scope, origin))
                continue
            targets = self.resolver.resolve(subject, scope)
            if not targets and isinstance(subject, ast.Name):
                targets = self.resolver.narrowed_instances(subject.id, call, scope)
            if not targets and not is_method_compile and _names_a_value(subject):
                yield from self._unresolved_module_roots(origin)
            for target in targets:
                if is_method_compile and target.what is not What.INSTANCE:
                    continue
                yield from ((name, origin) for name in self._targets_of(target, origin))

    def _unresolved_module_roots(self, origin: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
        """``torch.compile(model)`` where nothing says what ``model`` is: every module of this file.

        Training code compiles a parameter (``def train(model, ...): model =
        torch.compile(model)``) that no call in the file passes; the model it
        compiles is, as far as anything can tell, one of the file's own
        ``nn.Module`` classes. Each class with a ``forward`` is a root, as under
        ``--scope modules``, but only in files that compile such a value.
        """
        for class_name in self.index.classes:
            forward = self.index.method(class_name, "forward")
            if forward is not None:
                yield forward, origin + (f"(unresolved: every module of {self.label})",)

    def _targets_of(self, target: Target, chain: tuple[str, ...]) -> Iterator[str]:
        """The functions that run when *target* is called; imported ones become seeds."""
        if target.what is What.FUNCTION:
            yield target.name
        elif target.what is What.INSTANCE:
            yield from self._callable_targets(target.name)
        elif target.what is What.EXTERNAL:
            if not target.name.startswith(_NOT_SEEDED) and "." in target.name:
                self._add_seed(target.name, False, chain)

    # -- reachability -----------------------------------------------------------

    def _enqueue(self, qualname: str, chain: tuple[str, ...]) -> None:
        if qualname in self.index.functions and qualname not in self._traced:
            self._queue.append((qualname, chain))

    def _drain(self) -> None:
        """Breadth first, so every function keeps its shortest chain; no depth limit (Dynamo has none)."""
        while self._queue:
            qualname, chain = self._queue.popleft()
            if qualname not in self._traced:
                self._reach(qualname, chain)

    def _reach(self, qualname: str, chain: tuple[str, ...]) -> None:
        function = self.index.functions[qualname]
        where = self.index.enclosing_scope(qualname) or MODULE
        stops = [self._stops_tracing(decorator, where) for decorator in function.decorator_list]
        if DISABLE_DECORATORS.intersection(stops):
            self._disabled.add((function.lineno, function.col_offset))
        if any(stops):
            return
        chain = chain + (qualname,)
        self._traced[qualname] = TracedFunction(qualname, function.lineno, function.col_offset, chain)
        for decorator in function.decorator_list:
            self._reach_decorator(decorator, where, chain)
        for call in self._traced_calls(function.body):
            if isinstance(call, ast.Attribute):
                self._reach_property(call, qualname, chain)
                continue
            if isinstance(call, ast.Subscript):
                for target in self._item_reads(call, qualname):
                    self._enqueue(target, chain)
                continue
            if call.args and self._calls_its_argument(call.func, qualname):
                # not a call of the argument in ``_calls_into``: its arguments are shifted by one
                for called in self.resolver.resolve(call.args[0], qualname):
                    for target in self._targets_of(called, chain):
                        self._enqueue(target, chain)
                continue
            for target in self._call_targets(call, qualname, chain):
                callee = self.index.functions.get(target)
                if callee is not None:
                    self._calls_into.add((callee.lineno, callee.col_offset, call.lineno, call.col_offset))
                self._enqueue(target, chain)
        for inner in self.index.nested.get(qualname, []):
            self._enqueue(inner, chain)
        if not self._patches_reached and qualname in self.index.owner and qualname.endswith(".forward"):
            self._patches_reached = True
            self._reach_forward_patches(chain)

    def _reach_forward_patches(self, chain: tuple[str, ...]) -> None:
        """What the file installs as a module's ``forward``, once some module's ``forward`` is traced.

        Hook registries replace a submodule's forward at run time
        (``module.forward = functools.partial(hook.new_forward, module)``,
        diffusers' ``HookRegistry``; ``module.forward = types.MethodType(fn,
        module)``; ``setattr(module, "forward", wrapper)``): calling that
        module in compiled code runs the replacement. Which module got it is
        rarely provable (``for name, m in model.named_modules()``), so every
        replacement counts as soon as any ``forward`` is traced.
        """
        for value, scope, line in self.index.attribute_stores("forward"):
            origin = chain + (f"{self.label}:{line} .forward = {_short(value)}",)
            for target in self.resolver.resolve(value, scope):
                for name in self._targets_of(target, origin):
                    self._enqueue(name, origin)

    def _reach_module_hooks(self) -> bool:
        """Hooks registered on a module whose ``forward`` is traced: calling the module runs them, and Dynamo
        traces them with it (``m.register_forward_pre_hook(fn)`` then ``torch.compile(m)``; measured, torch
        2.13). Whether anything new was reached, so that the caller drains again until nothing is."""
        reached = False
        for registration in _FORWARD_HOOK_REGISTRATIONS:
            for call, scope in self.index.calls_named(registration):
                if not (call.args and isinstance(call.func, ast.Attribute)):
                    continue
                modules = self.resolver.resolve(call.func.value, scope)
                if not any(self._forward_traced(module) for module in modules):
                    continue
                origin = (f"{self.label}:{call.lineno} {_short(call)}",)
                for target in self.resolver.resolve(call.args[0], scope):
                    for name in self._targets_of(target, origin):
                        if name in self.index.functions and name not in self._traced:
                            self._enqueue(name, origin)
                            reached = True
        return reached

    def _forward_traced(self, module: Target) -> bool:
        forward = self.index.method(module.name, "forward") if module.what is What.INSTANCE else None
        return forward is not None and forward in self._traced

    def _stops_tracing(self, decorator: ast.expr, scope: str) -> str | None:
        """What stops Dynamo tracing the decorated function, else ``None``.

        ``@torch.compiler.disable`` (also through an alias, see
        ``Resolver.denoted_import``), ``@assume_constant_result``, custom ops,
        and project decorators that mark constants.
        """
        callee = _decorator_callee(decorator)
        name = self.resolver.denoted_import(callee, scope) or self.imports.resolve_node(callee)
        if name in DISABLE_DECORATORS or name in CONSTANT_DECORATORS or name in OPAQUE_OP_DECORATORS:
            return name
        local = dotted_name(callee)
        if local in self.index.functions and _sets_constant_marker(self.index.functions[local]):
            return CONSTANT_MARKER
        return None

    def _reach_decorator(self, decorator: ast.expr, scope: str, chain: tuple[str, ...]) -> None:
        """Reach the wrapper a project decorator puts around a traced function."""
        if self.resolver.is_compiling_decorator(decorator, scope):
            return
        name = dotted_name(_decorator_callee(decorator))
        if name is None:
            return
        name = self._factory_behind(name, decorator) or name
        if name in self.index.functions:
            for inner in self._returned_wrappers(name):
                self._enqueue(inner, chain + (f"@{name}",))
        elif self.imports.is_imported(name) and not self.imports.resolve(name).startswith(("torch.", "functools.")):
            self._add_seed(self.imports.resolve(name), True, chain)

    def _factory_behind(self, name: str, decorator: ast.expr) -> str | None:
        """The local decorator factory a module-level name holds the decorator of: ``deprecated`` for
        ``@dropping_support`` after ``dropping_support = deprecated(message, version="2.9")`` (torchaudio's
        prototype DSP functions); ``None`` when the name is not bound once to such a call."""
        if isinstance(decorator, ast.Call) or name in self.index.functions:
            return None
        bindings = self.index.bindings(MODULE, name)
        if len(bindings) != 1 or bindings[0].path or not isinstance(bindings[0].value, ast.Call):
            return None
        factory = dotted_name(bindings[0].value.func)
        return factory if factory in self.index.functions else None

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
            if not isinstance(statement, ast.Return) or statement.value is None:
                continue
            built = self._built_by_helper(decorator, statement.value, wrapped)
            if built is not None and depth < 2:
                wrappers.extend(self._returned_wrappers(built, depth + 1))  # ``return wrap(func, ...)``
                continue
            if not isinstance(statement.value, ast.Name):
                continue
            candidate = f"{decorator}.{statement.value.id}"
            if candidate not in nested:
                continue
            if self._calls_any(candidate, wrapped):
                wrappers.append(candidate)  # calls the decorated function: a call-time wrapper
            elif depth < 2:
                wrappers.extend(self._returned_wrappers(candidate, depth + 1))  # a decorator factory
        return wrappers

    def _built_by_helper(self, decorator: str, returned: ast.expr, wrapped: set[str]) -> str | None:
        """The module-level function that builds the returned wrapper from the decorated function:
        ``wrap_deprecated`` for ``wrapped = wrap_deprecated(func, name)`` then ``return wrapped`` (or
        ``return wrap_deprecated(func, name)``); its own returned wrapper is what runs."""
        if isinstance(returned, ast.Name):
            bindings = self.index.bindings(decorator, returned.id)
            if len(bindings) != 1 or bindings[0].path:
                return None
            returned = bindings[0].value
        if not isinstance(returned, ast.Call) or not isinstance(returned.func, ast.Name):
            return None
        helper = returned.func.id
        passes_wrapped = any(isinstance(arg, ast.Name) and arg.id in wrapped for arg in returned.args)
        return helper if helper in self.index.functions and passes_wrapped else None

    def _calls_any(self, qualname: str, names: set[str]) -> bool:
        return any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
            for node in ast.walk(self.index.functions[qualname])
        )

    @cached_property
    def _properties(self) -> frozenset[str]:
        """Methods of this module's classes decorated ``@property``: reading the attribute runs them."""
        return frozenset(
            qualname
            for qualname, function in self.index.functions.items()
            if qualname in self.index.owner and any(dotted_name(d) == "property" for d in function.decorator_list)
        )

    @cached_property
    def _property_names(self) -> frozenset[str]:
        return frozenset(qualname.rpartition(".")[2] for qualname in self._properties)

    def _reach_property(self, read: ast.Attribute, caller: str, chain: tuple[str, ...]) -> None:
        """``self.attn.kv_cache.size`` in traced code runs ``KVCache.size``'s body when ``size`` is a property
        (torchtune's ``return self.cache_pos[0].item()``, GB0124 at the property's line, measured)."""
        for base in self.resolver.resolve(read.value, caller):
            # the property of the object read, not one whose result an attribute holds
            # (``self.hop_length = config.encoder_hop_length`` ran the property at construction)
            getter = self.index.method(base.name, read.attr) if base.what in (What.INSTANCE, What.CLASS) else None
            if getter in self._properties:
                self._enqueue(getter, chain)

    def _traced_calls(self, body: list[ast.stmt]) -> Iterator[ast.Call | ast.Attribute | ast.Subscript]:
        """Calls in *body*, reads of attributes named like a property of this module, and reads
        ``obj[item]`` where a local class defines ``__getitem__``, skipping eager-only branches (and
        recording them)."""
        reads = "__getitem__" in self.index.method_names
        stack: list[ast.AST] = list(reversed(body))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # reached on their own when called (a lambda's calls are the caller's)
            if isinstance(node, ast.If):
                branch = eager_only_branch(node.test, self.imports)
                if branch is not None:
                    eager_body = node.body if branch == "body" else node.orelse
                    if eager_body:
                        self._eager.append((eager_body[0].lineno, eager_body[-1].end_lineno or eager_body[-1].lineno))
                    traced = node.orelse if branch == "body" else node.body
                    stack.extend(reversed(traced))
                    continue
            if isinstance(node, ast.Call) or (
                isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in self._property_names
            ) or (isinstance(node, ast.Subscript) and reads and isinstance(node.ctx, ast.Load)):
                yield node
            stack.extend(reversed(list(ast.iter_child_nodes(node))))

    def _item_reads(self, read: ast.Subscript, caller: str) -> Iterator[str]:
        """``boxes[keep]`` on an instance of a local class runs its ``__getitem__``, which Dynamo inlines
        (detectron2's ``Boxes``, whose ``self.tensor[item]`` is the mask read, measured)."""
        for target in self.resolver.resolve(read.value, caller):
            method = self.index.method(target.name, "__getitem__") if target.what is What.INSTANCE else None
            if method is not None:  # an imported base's ``__getitem__`` (``nn.ModuleList``'s) is no project code
                yield method

    def _call_targets(self, call: ast.Call, caller: str, chain: tuple[str, ...]) -> Iterator[str]:
        """The functions a call in traced code runs: what its callee resolves to, or a seed for imported ones."""
        func = call.func
        owner = self.index.owner.get(caller)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and dotted_name(func.value.func) == "super":
            for base in self.index.local_bases(owner) if owner else ():
                yield from self._method_targets(base, func.attr)
            return
        if isinstance(func, ast.Attribute) and func.attr == "apply":
            functions = [t.name for t in self.resolver.resolve(func.value, caller) if t.what is What.CLASS]
            if functions and all(self._is_autograd_function(name) for name in functions):
                # Dynamo traces ``forward`` and speculates ``backward`` when ``Function.apply`` is called
                # (guided-diffusion's ``CheckpointFunction``: GB9186 at ``torch.autograd.grad`` in backward)
                for name in functions:
                    yield from self._method_targets(name, "forward")
                    yield from self._method_targets(name, "backward")
                return
        if isinstance(func, ast.Attribute) and not self._may_be_local(func, caller):
            return  # ``hidden.view(...)``: no local class has such a method or attribute
        for target in self.resolver.resolve(func, caller):
            if target.what is not What.CLASS:
                yield from self._targets_of(target, chain)
                continue
            # constructing an object of a local class: Dynamo traces its ``__init__`` (PSMNet builds
            # ``disparityregression(self.maxdisp)`` in ``forward``; its ``Variable(...)`` logs GB0007 there)
            init = self.index.method(target.name, "__init__")
            if init is not None:
                yield init

    def _is_autograd_function(self, class_name: str) -> bool:
        """*class_name* derives (through local classes) from ``torch.autograd.Function``."""
        return any(
            self.imports.resolve(name) in AUTOGRAD_FUNCTIONS
            for klass in self.index.mro(class_name)
            for name in map(dotted_name, self.index.classes[klass].bases)
            if name is not None
        )

    def _calls_its_argument(self, func: ast.expr, caller: str) -> bool:
        """``checkpoint(self.block, h)``, ``map(helper, rows)``: the first argument runs in traced code."""
        if isinstance(func, ast.Name) and func.id == "map":
            return self.resolver.lookup("map", caller) is None  # the builtin, not a local ``map``
        return self.resolver.imported_name(func, caller) in ARGUMENT_CALLING

    def _may_be_local(self, func: ast.Attribute, caller: str) -> bool:
        """Could ``<expr>.attr(...)`` run project code? (Saves resolving every tensor method call.)"""
        if isinstance(func.value, ast.Name) and func.value.id == "self" or instance_of_class_read(func.value):
            return True  # a method of the class or of an imported base class (a seed); ``type(self).f``, its class's
        if func.attr in self.index.method_names:
            return True
        root = func.value
        while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if not isinstance(root, ast.Name):
            return False
        if func.attr in self.index.attribute_names:
            return True  # ``self.head(h)``, ``model.decoding(out)``: an object a local class keeps may be callable
        if self.resolver.namespace_member(func.value, func.attr, caller) is not None:
            return True  # ``diffusion_utils.assert_correctly_masked(x, mask)``: a function a namespace holds
        # ``utils.helper(x)``: an imported module's function may be a seed
        return self.imports.is_imported(root.id) and self.resolver.imported_name(func, caller) is not None

    def _callable_targets(self, class_or_function: str) -> Iterator[str]:
        """A function itself, or what calling an instance of a class runs."""
        if class_or_function in self.index.functions:
            yield class_or_function
            return
        yield from self._method_targets(class_or_function, "forward")
        yield from self._method_targets(class_or_function, "__call__")

    def _method_targets(self, class_name: str, method: str) -> Iterator[str]:
        """``class_name.method`` through local base classes; through imported ones, a seed."""
        found = self.index.method(class_name, method)
        if found is not None:
            yield found
            return
        for base in self.resolver.imported_bases(class_name):
            self._add_seed(f"{base}.{method}", False, (f"{class_name}.{method}",))

    def _add_seed(self, qualname: str, via_decorator: bool, chain: tuple[str, ...]) -> None:
        self._seeds.setdefault((qualname, via_decorator), Seed(qualname, via_decorator, chain))


def _decorator_callee(decorator: ast.expr) -> ast.expr:
    return decorator.func if isinstance(decorator, ast.Call) else decorator


def _names_a_value(subject: ast.expr) -> bool:
    """``model``, ``model.forward``, ``model.eval()``, ``self.net``: an expression whose value a name holds."""
    node = subject
    while isinstance(node, (ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name)


def _is_module_compile(call: ast.Call) -> bool:
    """``model.compile()`` / ``model.compile(backend=...)``: ``nn.Module.compile`` compiles in place."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and not call.args


def _short(node: ast.AST, limit: int = 80) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: ``nn.Module`` methods whose first argument runs whenever the module is called.
_FORWARD_HOOK_REGISTRATIONS = ("register_forward_pre_hook", "register_forward_hook")


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


def _sets_constant_marker(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The function sets ``_dynamo_marked_constant`` on something (``setattr(fn, "...", True)`` or ``fn.x = True``)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and node.attr == CONSTANT_MARKER and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.Constant) and node.value == CONSTANT_MARKER:
            return True
    return False
