"""Regenerate ``torch_facts.json`` from the installed torch, without importing it.

Usage: ``python -m graphmend_lint.analysis.torch_facts.generate [--check]``.
``--check`` rebuilds the table in memory and exits 1 if the shipped file
differs, so CI notices when torch moves on.

Why static: the linter must not import torch (see the package docstring), and
neither does this script. It finds torch with ``importlib.util.find_spec`` and
reads torch's type stubs (``_C/_VariableFunctions.pyi``, ``_C/__init__.pyi``,
``nn/functional.pyi``...) and a few Python sources (``functional.py``,
``_tensor.py``, ``__init__.py``, ``nn/modules/*.py``) with the stdlib ``ast``.

What a name's kind is
    Each signature's return annotation (or ``# type:`` comment) maps to a set
    of kinds: ``Tensor`` is ``{tensor}``, ``Tensor | None`` is
    ``{tensor, none}``, ``torch.return_types.max`` (a named tuple of tensors)
    is ``{tuple_tensor}``. A tuple or sequence counts as ``tuple_tensor`` when
    its items are tensors, nested tuples of tensors or ``None``, and as
    ``size`` when it is a tuple of ints. When a name has ``@overload``
    signatures only those count (the implementation's annotation is their
    union or looser); the kinds of all signatures are unioned.

    A set is then named: one kind is itself; several numeric kinds (int,
    float, number) are ``number``; anything else is ``mixed:`` plus the kinds
    sorted and joined by ``|``. So ``Tensor.size`` is ``mixed:int|size`` and
    ``Tensor.__eq__`` is ``mixed:bool|tensor`` (its ``object -> bool``
    overload only exists to satisfy ``object.__eq__``; it is kept, the table
    does not second-guess the stubs). ``Tensor.item`` is annotated
    ``Number`` and so is ``number``.

Documented C bindings
    ``torch.fft``, ``torch.linalg`` and ``torch.special`` bind C functions that
    have no stub (``rfftfreq = _add_docstr(_fft.fft_rfftfreq, <docstring>)``).
    Their docstring opens with the signature, ``rfftfreq(n, ...) -> Tensor``
    (``linalg.norm(A, ...) -> Tensor``): its annotation is the kind.

Unannotated definitions
    A stub (``.pyi``) definition without an annotation is left out: unknown.
    A Python definition without one is read from its ``return`` statements:
    ``return torch.norm(...)``, ``return self``, ``return super().split(...)``,
    ``return self.shape[0]`` resolve through the table itself; returns that
    only exist for the ``__torch_function__`` override protocol
    (``handle_torch_function(...)``) are ignored, since they say nothing about
    the operation's own result; no value-returning ``return`` at all means
    ``none``; anything unresolvable is ``other``, which therefore reads
    "anything else, or not statically known". Assignments such as
    ``detach = _C._add_docstr(_C.TensorBase.detach, ...)`` or
    ``unique = boolean_dispatch(...)`` follow the wrapped callables.

Which names exist
    Module bindings follow Python: the last binding of a name wins, star
    imports bind the imported module's ``__all__`` (or public names), and
    ``from m import f`` refers to ``m.f``, loaded on demand. ``torch`` is
    ``torch/__init__.py``; ``torch._VF`` is read as
    ``torch._C._VariableFunctions``, of which it is a generated copy.
    Names bound to classes (``torch.no_grad``), modules or data, and dunder
    module attributes, are not functions and are left out.
    ``tensor_methods`` overlays ``torch.Tensor`` (``_tensor.py``) on
    ``torch._C.TensorBase``, except where reading an override's body left
    something unresolved and the base is annotated (``Tensor.split`` calls
    the unstubbed ``_VF.split``; ``TensorBase.split`` says
    ``Sequence[Tensor]``); annotated class attributes and properties go to
    ``tensor_attributes``. ``nn_modules`` maps every ``torch.nn.Module``
    subclass in ``torch.nn.modules.__all__`` to its ``forward``'s kind
    (inherited through its bases; ``other`` when none is found, as for the
    containers). ``module_attributes`` holds the typed constants of
    ``torch._C`` that ``torch`` re-exports, such as ``torch.float32``, and
    ``named_tuple_fields`` the fields of ``torch.return_types`` named tuples
    (``values``, ``indices``...).
"""

from __future__ import annotations

import argparse
import ast
import re
import functools
import importlib.util
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from graphmend_lint.analysis.torch_facts import FACTS_PATH, MIXED_PREFIX

Kinds = frozenset[str]
Thunk = Callable[[], "Kinds | None"]

TENSOR: Kinds = frozenset({"tensor"})
BOOL: Kinds = frozenset({"bool"})
INT: Kinds = frozenset({"int"})
FLOAT: Kinds = frozenset({"float"})
NUMBER: Kinds = frozenset({"number"})
NONE: Kinds = frozenset({"none"})
SIZE: Kinds = frozenset({"size"})
TUPLE_TENSOR: Kinds = frozenset({"tuple_tensor"})
OTHER: Kinds = frozenset({"other"})
_NUMERIC: Kinds = frozenset({"int", "float", "number"})
_TENSOR_ITEMS: Kinds = frozenset({"tensor", "tuple_tensor", "none"})

#: Type names in torch's annotations (last dotted component) and their kinds.
_TYPE_KINDS: dict[str, str] = {
    "Tensor": "tensor",
    "TensorBase": "tensor",
    "Parameter": "tensor",
    "bool": "bool",
    "_bool": "bool",
    "SymBool": "bool",
    "int": "int",
    "_int": "int",
    "SymInt": "int",
    "float": "float",
    "_float": "float",
    "SymFloat": "float",
    "complex": "number",
    "_complex": "number",
    "Number": "number",
    "Size": "size",
    "_size": "size",
    "dtype": "dtype",
    "_dtype": "dtype",
    "device": "device",
    "_device": "device",
    "None": "none",
    "NoneType": "none",
}
_UNIONS = frozenset({"Union", "Optional"})
_TYPE_GUARDS = frozenset({"TypeIs", "TypeGuard", "_TypeIs", "_TypeGuard"})
_SEQUENCES = frozenset({"tuple", "Tuple", "list", "List", "Sequence"})
_WRAPPING_TYPES = frozenset({"Annotated", "Final", "ClassVar"})
#: What calling a builtin returns, for the few that matter when reading torch's bodies.
_BUILTIN_RESULTS: dict[str, Kinds] = {
    "len": INT,
    "id": INT,
    "hash": INT,
    "int": INT,
    "bool": BOOL,
    "isinstance": BOOL,
    "float": FLOAT,
    "complex": NUMBER,
}
#: Calls that wrap a callable without changing its result: where the wrapped
#: callables are (argument positions or keyword names).
_WRAPPERS: dict[str, tuple[int | str, ...]] = {
    "_add_docstr": (0,),
    "cast": (1,),
    "_handle_torch_function_and_wrap_type_error_to_not_implemented": (0,),
    "boolean_dispatch": ("if_true", "if_false"),
}
#: Modules that are generated copies of another.
_CANONICAL_MODULES = {"torch._VF": "torch._C._VariableFunctions"}
#: Namespaces whose functions the table lists.
_PUBLIC_MODULES = (
    "torch", "torch.nn.functional", "torch.nn.utils.rnn", "torch._dynamo", "torch.compiler", "torch.fft", "torch.linalg",
    "torch.special",
)
_TENSOR_BASE = "torch._C.TensorBase"
_TENSOR = "torch._tensor.Tensor"
_MODULE_CLASS = "torch.nn.modules.module.Module"


def kind_name(kinds: Kinds) -> str:
    """The table's spelling of a set of kinds (see the module docstring)."""
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds <= _NUMERIC:
        return "number"
    return MIXED_PREFIX + "|".join(sorted(kinds))


def _union(parts: Iterable[Kinds | None]) -> Kinds | None:
    """Union of the known parts; ``None`` if none is known."""
    known = [p for p in parts if p is not None]
    return frozenset().union(*known) if known else None


def _first_known(thunks: Iterable[Thunk]) -> Kinds | None:
    for thunk in thunks:
        kinds = thunk()
        if kinds is not None:
            return kinds
    return None


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else ``None``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _canonical(qualname: str) -> str:
    for alias, target in _CANONICAL_MODULES.items():
        if qualname == alias or qualname.startswith(alias + "."):
            return target + qualname[len(alias) :]
    return qualname


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a module or class body, including those under ``if``/``try``.

    Both branches of ``if TYPE_CHECKING:`` and version gates count: either may
    hold the definition a type checker (and so this table) should see.
    """
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _statements(stmt.body)
            for handler in stmt.handlers:
                yield from _statements(handler.body)
            yield from _statements(stmt.orelse)
            yield from _statements(stmt.finalbody)
        else:
            yield stmt


def _bound_names(stmt: ast.stmt) -> list[str]:
    """Names a statement binds in its scope (star imports are handled apart)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, ast.ImportFrom):
        return [a.asname or a.name for a in stmt.names if a.name != "*"]
    if isinstance(stmt, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in stmt.names]
    return []


def _bindings(body: Iterable[ast.stmt]) -> dict[str, list[ast.stmt]]:
    """name -> the statements binding it, in source order."""
    result: dict[str, list[ast.stmt]] = {}
    for stmt in _statements(body):
        for name in _bound_names(stmt):
            result.setdefault(name, []).append(stmt)
    return result


def _literal_all(body: Iterable[ast.stmt]) -> list[str] | None:
    """The statically known part of ``__all__`` (``=``, ``+=``, ``.extend``)."""
    names: list[str] | None = None
    for stmt in _statements(body):
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            names, value = [], stmt.value
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__":
            value = stmt.value
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and _dotted(stmt.value.func) == "__all__.extend"
            and stmt.value.args
        ):
            value = stmt.value.args[0]
        if names is not None and isinstance(value, (ast.List, ast.Tuple)):
            names += [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names


def _return_annotation(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The ``->`` annotation, or the return half of a ``# type: (...) -> T`` comment."""
    if fn.returns is not None:
        return fn.returns
    if fn.type_comment:
        try:
            return ast.parse(fn.type_comment, mode="func_type").returns
        except SyntaxError:
            return None
    return None


def _decorator_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {name.rsplit(".", 1)[-1] for d in fn.decorator_list if (name := _dotted(d))}


def _is_property(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return bool(_decorator_names(fn) & {"property", "cached_property"})


def _is_accessor(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``@x.setter``/``@x.deleter``: not a new name."""
    return bool(_decorator_names(fn) & {"setter", "deleter"})


def _own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    stack: list[ast.AST] = [stmt for stmt in fn.body if not isinstance(stmt, nested)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, nested))


def _is_override_dispatch(expr: ast.expr) -> bool:
    """``handle_torch_function(...)`` and friends: the ``__torch_function__`` path."""
    if not isinstance(expr, ast.Call):
        return False
    name = _dotted(expr.func) or ""
    return name.rsplit(".", 1)[-1] == "handle_torch_function" or name.endswith("_torch_function")


def _is_super_call(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "super"


@dataclass(frozen=True, eq=False)
class ModuleInfo:
    """One parsed torch source file and what its names refer to."""

    name: str
    is_stub: bool
    is_package: bool
    tree: ast.Module
    bindings: Mapping[str, list[ast.stmt]]

    @functools.cached_property
    def aliases(self) -> dict[str, str]:
        """Local name -> qualified name, for every import in the module."""
        aliases: dict[str, str] = {}
        for stmt in _statements(self.tree.body):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(stmt, ast.ImportFrom):
                base = self.resolve_relative(stmt.module, stmt.level)
                for alias in stmt.names:
                    if alias.name != "*":
                        aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        return aliases

    @functools.cached_property
    def exports(self) -> list[str]:
        """What ``from <module> import *`` binds."""
        literal = _literal_all(self.tree.body)
        if literal is not None:
            return literal
        return [name for name in self.bindings if not name.startswith("_")]

    @functools.cached_property
    def type_aliases(self) -> dict[str, ast.expr]:
        """TypeVars (by their bound) and ``X: TypeAlias = ...`` definitions."""
        result: dict[str, ast.expr] = {}
        for stmt in _statements(self.tree.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                call = stmt.value
                if isinstance(call, ast.Call) and (_dotted(call.func) or "").endswith("TypeVar"):
                    bound = next((k.value for k in call.keywords if k.arg == "bound"), None)
                    if bound is not None:
                        result[stmt.targets[0].id] = bound
            elif (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.value is not None
                and (_dotted(stmt.annotation) or "").endswith("TypeAlias")
            ):
                result[stmt.target.id] = stmt.value
        return result

    def qualify(self, dotted: str) -> str | None:
        """The qualified name a dotted reference in this module's code means."""
        root, _, rest = dotted.partition(".")
        if root in self.aliases:
            base = self.aliases[root]
        elif root in self.bindings:
            base = f"{self.name}.{root}"
        else:
            return None
        return _canonical(f"{base}.{rest}" if rest else base)

    def resolve_relative(self, module: str | None, level: int) -> str:
        """The absolute name of ``from <.module> import ...``."""
        if level == 0:
            return module or ""
        parts = self.name.split(".")
        keep = len(parts) - level + (1 if self.is_package else 0)
        base = ".".join(parts[:keep])
        return f"{base}.{module}" if module else base


class TorchSource:
    """The installed torch's files, parsed on demand (never imported)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._modules: dict[str, ModuleInfo | None] = {}

    def module(self, name: str) -> ModuleInfo | None:
        """The module ``name`` (preferring its ``.pyi`` stub), or ``None`` if torch has no file for it."""
        if name not in self._modules:
            self._modules[name] = self._load(name)
        return self._modules[name]

    def _load(self, name: str) -> ModuleInfo | None:
        parts = name.split(".")
        if parts[0] != "torch":
            return None
        base = self.root.joinpath(*parts[1:])
        candidates = [(base / "__init__.pyi", True), (base / "__init__.py", True)]
        candidates += [(base.with_suffix(".pyi"), False), (base.with_suffix(".py"), False)] if len(parts) > 1 else []
        for path, is_package in candidates:
            if path.is_file():
                tree = _parse(path)
                return ModuleInfo(name, path.suffix == ".pyi", is_package, tree, _bindings(tree.body))
        return None


def _parse(path: Path) -> ast.Module:
    source = path.read_text(encoding="utf-8")
    try:
        return ast.parse(source, filename=str(path), type_comments=True)
    except SyntaxError:  # a misplaced ``# type:`` comment; annotations still work
        return ast.parse(source, filename=str(path))


def find_torch_root() -> Path | None:
    """Where torch is installed, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def read_torch_version(root: Path) -> str:
    """``torch.version.__version__``, read from the file."""
    tree = ast.parse((root / "version.py").read_text(encoding="utf-8"))
    for stmt in _statements(tree.body):
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in stmt.targets)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            return stmt.value.value
    raise ValueError(f"no __version__ string in {root / 'version.py'}")


class Registry:
    """Qualified name -> kinds, computed lazily.

    Sources refer to each other in every direction (``Tensor.norm`` calls
    ``torch.norm``, ``torch.split`` is ``torch.functional.split``), so entries
    are thunks evaluated on first use, and a module's names are registered
    when a name under it is first asked for. A reference cycle yields
    ``None`` (unknown).
    """

    def __init__(self, source: TorchSource, register_module: Callable[[ModuleInfo], None]) -> None:
        self._source = source
        self._register_module = register_module
        self._thunks: dict[str, Thunk] = {}
        self._memo: dict[str, Kinds | None] = {}
        self._active: set[str] = set()
        self._loaded: set[str] = set()

    def define(self, qualname: str, thunk: Thunk) -> None:
        self._thunks[qualname] = thunk

    def load(self, module_name: str) -> ModuleInfo | None:
        """Register the names of a torch module (once); ``None`` if torch has no such file."""
        module = self._source.module(module_name)
        if module is not None and module_name not in self._loaded:
            self._loaded.add(module_name)
            self._register_module(module)
        return module

    def kinds(self, qualname: str) -> Kinds | None:
        qualname = _canonical(qualname)
        if qualname in self._memo:
            return self._memo[qualname]
        if qualname not in self._thunks:
            self._load_owner(qualname)
        thunk = self._thunks.get(qualname)
        if thunk is None or qualname in self._active:
            return None
        self._active.add(qualname)
        try:
            result = thunk()
        finally:
            self._active.discard(qualname)
        self._memo[qualname] = result
        return result

    def _load_owner(self, qualname: str) -> None:
        """Register the innermost torch module that could define ``qualname``."""
        parts = qualname.split(".")
        for end in range(len(parts) - 1, 0, -1):
            if self.load(".".join(parts[:end])) is not None:
                return


@dataclass(frozen=True, eq=False)
class Scope:
    """Where code being read lives: its module, and its class if any."""

    module: ModuleInfo
    qualname: str
    bindings: Mapping[str, list[ast.stmt]]
    self_kinds: Kinds | None = None
    bases: tuple[str, ...] = ()

    @property
    def is_class(self) -> bool:
        return self.qualname != self.module.name


class KindReader:
    """Turns annotations, ``return`` statements and bindings into kinds."""

    def __init__(self, registry: Registry, return_types: Mapping[str, Kinds]) -> None:
        self.registry = registry
        self.return_types = return_types

    # -- annotations ---------------------------------------------------------------

    def annotation(self, node: ast.expr, scope: Scope) -> Kinds:
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NONE
            if isinstance(node.value, str):
                try:
                    return self.annotation(ast.parse(node.value, mode="eval").body, scope)
                except SyntaxError:
                    return OTHER
            return OTHER
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.annotation(node.left, scope) | self.annotation(node.right, scope)
        if isinstance(node, ast.Subscript):
            return self._generic(node, scope)
        if isinstance(node, ast.Tuple):  # the parenthesised ``-> (Tensor)`` of type comments
            return self._sequence([self.annotation(e, scope) for e in node.elts], is_tuple=True)
        name = _dotted(node)
        return self._named_type(name, scope) if name else OTHER

    def _named_type(self, name: str, scope: Scope) -> Kinds:
        last = name.rsplit(".", 1)[-1]
        if last == "Self" and scope.self_kinds is not None:
            return scope.self_kinds
        if last in scope.module.type_aliases:
            return self.annotation(scope.module.type_aliases[last], scope)
        if "return_types." in name:
            return self.return_types.get(last, OTHER)
        kind = _TYPE_KINDS.get(last)
        return frozenset({kind}) if kind else OTHER

    def _generic(self, node: ast.Subscript, scope: Scope) -> Kinds:
        base = (_dotted(node.value) or "").rsplit(".", 1)[-1]
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base in _UNIONS:
            kinds = frozenset().union(*(self.annotation(a, scope) for a in args))
            return kinds | NONE if base == "Optional" else kinds
        if base in _TYPE_GUARDS:
            return BOOL
        if base in _WRAPPING_TYPES:
            return self.annotation(args[0], scope)
        if base in _SEQUENCES:
            items = [a for a in args if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
            return self._sequence([self.annotation(a, scope) for a in items], is_tuple=base in {"tuple", "Tuple"})
        return OTHER

    @staticmethod
    def _sequence(items: list[Kinds], is_tuple: bool) -> Kinds:
        """A tuple/list of these item kinds: tensors, a size, or something else."""
        flat = frozenset().union(*items)
        if flat <= _TENSOR_ITEMS and flat - NONE:
            return TUPLE_TENSOR
        if is_tuple and flat == INT:
            return SIZE
        return OTHER

    # -- definitions ---------------------------------------------------------------

    def function(self, defs: list[ast.FunctionDef | ast.AsyncFunctionDef], scope: Scope) -> Kinds | None:
        """What calling a (possibly overloaded) function returns."""
        annotated = [(d, a) for d in defs if (a := _return_annotation(d)) is not None]
        overloads = [a for d, a in annotated if "overload" in _decorator_names(d)]
        chosen = overloads or [a for _, a in annotated]
        if chosen:
            return frozenset().union(*(self.annotation(a, scope) for a in chosen))
        if scope.module.is_stub:
            return None
        return self.body(defs[-1], scope)

    def body(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> Kinds:
        """Kinds from an unannotated Python function's ``return`` statements."""
        nodes = list(_own_nodes(fn))
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
            return OTHER  # a generator
        returns = [n for n in nodes if isinstance(n, ast.Return)]
        values = [r.value for r in returns if r.value is not None and not _is_override_dispatch(r.value)]
        if not values:
            return NONE
        kinds = frozenset().union(*(self.expression(v, scope) for v in values))
        return kinds | NONE if any(r.value is None for r in returns) else kinds

    def binding(self, name: str, scope: Scope) -> Kinds | None:
        """What calling ``name`` as last bound in ``scope`` returns (``None``: not a function, or unknown)."""
        stmts = scope.bindings[name]
        last = stmts[-1]
        if isinstance(last, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs = [s for s in stmts if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_accessor(s)]
            return self.function(defs, scope)
        if isinstance(last, ast.Assign):
            found = self.callable(last.value, scope)
            return found if found is not None else self._documented_result(name, last.value, scope)
        if isinstance(last, ast.ImportFrom):
            imported = next(a.name for a in last.names if (a.asname or a.name) == name)
            return self.registry.kinds(f"{scope.module.resolve_relative(last.module, last.level)}.{imported}")
        return None

    def _documented_result(self, name: str, value: ast.expr, scope: Scope) -> Kinds | None:
        """The result ``name = _add_docstr(_C._fft.fft_rfftfreq, r\"\"\"rfftfreq(n, ...) -> Tensor ...\"\"\")``
        documents, when the wrapped C function has no stub (``torch.fft``, ``torch.linalg``, ``torch.special``):
        the docstring's signature line ``name(...) -> <annotation>``."""
        if not (isinstance(value, ast.Call) and (_dotted(value.func) or "").endswith("_add_docstr") and len(value.args) > 1):
            return None
        doc = value.args[1]
        while isinstance(doc, ast.BinOp) and isinstance(doc.op, ast.Add):
            doc = doc.left  # ``r\"\"\"sig...\"\"\" + r\"\"\"...\"\"\"``: the signature opens the first part
        if isinstance(doc, ast.Call) and isinstance(doc.func, ast.Attribute) and doc.func.attr == "format":
            doc = doc.func.value  # ``r\"\"\"...\"\"\".format(**common_args)``
        if not (isinstance(doc, ast.Constant) and isinstance(doc.value, str)):
            return None
        # ``rfftfreq(n, ...) -> Tensor``; torch.linalg's pages name the namespace: ``linalg.norm(A, ...) -> Tensor``
        match = re.search(rf"^\s*(?:\w+\.)?{re.escape(name)}\(.*\)\s*->\s*(.+?)\s*$", doc.value, re.MULTILINE)
        if match is None:
            return None
        try:
            annotation = ast.parse(match.group(1), mode="eval").body
        except SyntaxError:
            return None
        return self.annotation(annotation, scope)

    # -- expressions ---------------------------------------------------------------

    def callable(self, expr: ast.expr, scope: Scope) -> Kinds | None:
        """What calling the callable ``expr`` evaluates to returns."""
        if isinstance(expr, ast.Call):
            return _union(self.callable(w, scope) for w in self._wrapped(expr))
        name = _dotted(expr)
        if name is None:
            return None
        if scope.is_class and name in scope.bindings:
            return self.registry.kinds(f"{scope.qualname}.{name}")
        qualified = scope.module.qualify(name)
        return self.registry.kinds(qualified) if qualified else None

    @staticmethod
    def _wrapped(call: ast.Call) -> list[ast.expr]:
        """The callables a result-preserving wrapper call wraps (none for other calls)."""
        slots = _WRAPPERS.get((_dotted(call.func) or "").rsplit(".", 1)[-1], ())
        keywords = {k.arg: k.value for k in call.keywords}
        found = [call.args[s] if isinstance(s, int) and s < len(call.args) else keywords.get(str(s)) for s in slots]
        return [f for f in found if f is not None]

    def expression(self, expr: ast.expr, scope: Scope) -> Kinds:
        """The kinds of a returned expression; ``other`` when unresolvable."""
        if isinstance(expr, ast.Constant):
            return self._constant(expr.value)
        if isinstance(expr, ast.Name) and expr.id == "self" and scope.self_kinds is not None:
            return scope.self_kinds
        if isinstance(expr, ast.Call):
            return self._call(expr.func, scope) or OTHER
        if isinstance(expr, ast.Attribute) and self.expression(expr.value, scope) == TENSOR:
            return self.registry.kinds(f"torch.Tensor.{expr.attr}") or OTHER
        if isinstance(expr, ast.Subscript):
            return self._item(self.expression(expr.value, scope), isinstance(expr.slice, ast.Slice))
        if isinstance(expr, (ast.Tuple, ast.List)):
            return self._sequence([self.expression(e, scope) for e in expr.elts], isinstance(expr, ast.Tuple))
        if isinstance(expr, ast.Compare) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)):
            return BOOL
        if isinstance(expr, ast.IfExp):
            return self.expression(expr.body, scope) | self.expression(expr.orelse, scope)
        return OTHER

    @staticmethod
    def _constant(value: object) -> Kinds:
        if value is None:
            return NONE
        if isinstance(value, bool):
            return BOOL
        if isinstance(value, int):
            return INT
        if isinstance(value, float):
            return FLOAT
        return NUMBER if isinstance(value, complex) else OTHER

    @staticmethod
    def _item(container: Kinds, is_slice: bool) -> Kinds:
        """Indexing a tensor gives a tensor, a size an int, a tuple of tensors a tensor; slicing keeps the kind."""
        if container == TENSOR or (is_slice and container in (SIZE, TUPLE_TENSOR)):
            return container
        if container == SIZE:
            return INT
        return TENSOR if container == TUPLE_TENSOR else OTHER

    def _call(self, func: ast.expr, scope: Scope) -> Kinds | None:
        if isinstance(func, ast.Attribute) and _is_super_call(func.value):
            return _union(self.registry.kinds(f"{base}.{func.attr}") for base in scope.bases)
        name = _dotted(func)
        if name is not None:
            qualified = scope.module.qualify(name)
            if qualified is not None:
                return self.registry.kinds(qualified)
            if name in _BUILTIN_RESULTS:
                return _BUILTIN_RESULTS[name]
        if isinstance(func, ast.Attribute) and self.expression(func.value, scope) == TENSOR:
            return self.registry.kinds(f"torch.Tensor.{func.attr}")
        return None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class FactsBuilder:
    """Reads torch's sources into a :class:`Registry` and extracts the table."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.source = TorchSource(root)
        self.registry = Registry(self.source, self._register_module)
        self.reader = KindReader(self.registry, self._return_types())
        self.tensor_attributes: set[str] = set()
        self.tensor_names = self._register_tensor_classes()

    def _return_type_classes(self) -> tuple[Scope, list[ast.ClassDef]]:
        """The named tuples of ``torch.return_types`` (``max``, ``sort``, ``svd``...)."""
        module = self.source.module("torch.return_types")
        if module is None:
            raise FileNotFoundError(f"torch at {self.root} has no return_types stub")
        classes = [c for c in _statements(module.tree.body) if isinstance(c, ast.ClassDef) and c.bases]
        return Scope(module, module.name, module.bindings), classes

    def _return_types(self) -> dict[str, Kinds]:
        """``torch.return_types.<name>`` -> kinds of the tuple it subclasses."""
        scope, classes = self._return_type_classes()
        reader = KindReader(self.registry, {})
        return {cls.name: reader.annotation(cls.bases[0], scope) for cls in classes}

    def named_tuple_fields(self) -> dict[str, str]:
        """Field name -> kind, over all ``torch.return_types`` (``x.max(0).values`` is a tensor)."""
        scope, classes = self._return_type_classes()
        fields: dict[str, Kinds] = {}
        for cls in classes:
            for fn in _statements(cls.body):
                if isinstance(fn, ast.FunctionDef) and _is_property(fn) and fn.returns is not None:
                    fields[fn.name] = fields.get(fn.name, frozenset()) | self.reader.annotation(fn.returns, scope)
        return {name: kind_name(kinds) for name, kinds in fields.items()}

    # -- registration -------------------------------------------------------------

    def _register_module(self, module: ModuleInfo) -> None:
        """Define ``<module>.<name>`` for every name the module binds, star imports included."""
        scope = Scope(module, module.name, module.bindings)
        stars = self._star_bindings(module)
        for name in set(module.bindings) | set(stars):
            if _is_dunder(name):
                continue
            own = module.bindings.get(name)
            star = stars.get(name)
            if star is None or (own and own[-1].lineno > star[0]):
                thunk: Thunk = functools.partial(self.reader.binding, name, scope)
            else:
                thunk = functools.partial(self.registry.kinds, f"{star[1]}.{name}")
            self.registry.define(f"{module.name}.{name}", thunk)

    def _star_bindings(self, module: ModuleInfo) -> dict[str, tuple[int, str]]:
        """name -> (line, source module) of the last ``from m import *`` binding it."""
        result: dict[str, tuple[int, str]] = {}
        for stmt in _statements(module.tree.body):
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                target = _canonical(module.resolve_relative(stmt.module, stmt.level))
                star = self.source.module(target)
                for name in star.exports if star else []:
                    result[name] = (stmt.lineno, target)
        return result

    def _load(self, name: str) -> ModuleInfo:
        module = self.registry.load(name)
        if module is None:
            raise FileNotFoundError(f"torch at {self.root} has no source for {name}")
        return module

    def _register_class(self, module: ModuleInfo, cls: ast.ClassDef) -> set[str]:
        """Define ``<module>.<Class>.<member>`` for a tensor class; return the member names."""
        qualname = f"{module.name}.{cls.name}"
        bases = tuple(q for b in cls.bases if (d := _dotted(b)) and (q := module.qualify(d)))
        scope = Scope(module, qualname, _bindings(cls.body), TENSOR, bases)
        for name, stmts in scope.bindings.items():
            first, last = stmts[0], stmts[-1]
            if isinstance(last, ast.AnnAssign):
                thunk: Thunk = functools.partial(self.reader.annotation, last.annotation, scope)
            else:
                thunk = functools.partial(self.reader.binding, name, scope)
            if isinstance(last, ast.AnnAssign) or (isinstance(first, ast.FunctionDef) and _is_property(first)):
                self.tensor_attributes.add(name)
            self.registry.define(f"{qualname}.{name}", thunk)
        return set(scope.bindings)

    def _register_tensor_classes(self) -> set[str]:
        """Register ``TensorBase`` and ``Tensor`` and define ``torch.Tensor.<name>`` over both."""
        names: set[str] = set()
        for qualname in (_TENSOR_BASE, _TENSOR):
            found = self._class(qualname)
            if found is None:
                raise FileNotFoundError(f"no class {qualname} in torch at {self.root}")
            names |= self._register_class(*found)
        for name in names:
            own, base = f"{_TENSOR}.{name}", f"{_TENSOR_BASE}.{name}"
            candidates = [
                functools.partial(self._precise, own),
                functools.partial(self.registry.kinds, base),
                functools.partial(self.registry.kinds, own),
            ]
            self.registry.define(f"torch.Tensor.{name}", functools.partial(_first_known, candidates))
        return names

    def _precise(self, qualname: str) -> Kinds | None:
        """Kinds of ``qualname`` unless partly unresolved (``other``).

        ``Tensor``'s Python overrides are mostly unannotated wrappers around the
        ``TensorBase`` method they override (``split`` calls ``_VF.split``,
        which has no stub); when reading their bodies leaves something
        unresolved, the base's annotation says more.
        """
        kinds = self.registry.kinds(qualname)
        return None if kinds is None or "other" in kinds else kinds

    def _class(self, qualname: str) -> tuple[ModuleInfo, ast.ClassDef] | None:
        """The module and ``ClassDef`` of a class, following re-exports."""
        module_name, _, name = qualname.rpartition(".")
        module = self.source.module(module_name)
        if module is None or name not in module.bindings:
            return None
        last = module.bindings[name][-1]
        if isinstance(last, ast.ClassDef):
            return module, last
        target = module.aliases.get(name)
        return self._class(target) if target and target != qualname else None

    # -- the table ----------------------------------------------------------------

    def functions(self) -> dict[str, str]:
        """Public namespace functions (``torch.*``, ``torch.nn.functional.*``...) -> kind."""
        result: dict[str, str] = {}
        for namespace in _PUBLIC_MODULES:
            module = self._load(namespace)
            # Sorted: the order names are first evaluated in decides how a reference cycle resolves.
            for name in sorted(set(module.bindings) | set(self._star_bindings(module))):
                kinds = None if _is_dunder(name) else self.registry.kinds(f"{namespace}.{name}")
                if kinds is not None:
                    result[f"{namespace}.{name}"] = kind_name(kinds)
        return result

    def tensor_members(self) -> tuple[dict[str, str], dict[str, str]]:
        """(methods, attributes) of ``torch.Tensor``."""
        methods: dict[str, str] = {}
        attributes: dict[str, str] = {}
        for name in sorted(self.tensor_names):
            kinds = self.registry.kinds(f"torch.Tensor.{name}")
            if kinds is not None:
                (attributes if name in self.tensor_attributes else methods)[name] = kind_name(kinds)
        return methods, attributes

    def nn_modules(self) -> dict[str, str]:
        """``torch.nn`` layer class -> kind of its ``forward``."""
        package = self._load("torch.nn.modules")
        result: dict[str, str] = {}
        for name in package.exports:
            target = package.aliases.get(name, f"{package.name}.{name}")
            mro = self._mro(target)
            if _MODULE_CLASS in mro and target != _MODULE_CLASS:
                forward = _first_known(functools.partial(self._forward, q) for q in mro)
                result[name] = kind_name(forward or OTHER)
        return result

    def _mro(self, qualname: str) -> list[str]:
        """Depth-first, left-to-right bases: close enough to the C3 order to find ``forward``.

        ``Module`` itself defines no ``forward`` method (only an attribute), so
        reaching it early through a mixin does not hide a later base's.
        """
        order: list[str] = []
        pending = [qualname]
        while pending:
            current = pending.pop(0)
            found = self._class(current)
            if current in order or found is None:
                continue
            order.append(current)
            module, cls = found
            pending[:0] = [q for b in cls.bases if (d := _dotted(b)) and (q := module.qualify(d))]
        return order

    def _forward(self, class_qualname: str) -> Kinds | None:
        found = self._class(class_qualname)
        if found is None:
            return None
        module, cls = found
        scope = Scope(module, class_qualname, _bindings(cls.body))
        stmts = scope.bindings.get("forward")
        if not stmts or not isinstance(stmts[-1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        return self.reader.binding("forward", scope)

    def module_attributes(self) -> dict[str, str]:
        """Typed public constants of ``torch._C`` (``float32: dtype``), as ``torch.<name>``."""
        module = self._load("torch._C")
        scope = Scope(module, module.name, module.bindings)
        result: dict[str, str] = {}
        for name, stmts in module.bindings.items():
            last = stmts[-1]
            if not name.startswith("_") and isinstance(last, ast.AnnAssign):
                kinds = self.reader.annotation(last.annotation, scope)
                if kinds != OTHER:
                    result[f"torch.{name}"] = kind_name(kinds)
        return result

    def build(self) -> dict[str, object]:
        methods, attributes = self.tensor_members()
        return {
            "torch_version": read_torch_version(self.root),
            "functions": self.functions(),
            "tensor_methods": methods,
            "tensor_attributes": attributes,
            "nn_modules": self.nn_modules(),
            "module_attributes": self.module_attributes(),
            "named_tuple_fields": self.named_tuple_fields(),
        }


def build_facts(root: Path) -> dict[str, object]:
    """The whole table for the torch installed at ``root``."""
    return FactsBuilder(root).build()


def render(facts: Mapping[str, object]) -> str:
    """Deterministic, diff-friendly JSON: sorted keys, one entry per line."""
    return json.dumps(facts, indent=0, sort_keys=True, separators=(",", ":")) + "\n"


def changed_entries(shipped: Mapping[str, object], fresh: Mapping[str, object]) -> list[str]:
    """``section.key`` (or ``section``) for each entry that differs, to say what is stale."""
    changed: list[str] = []
    for section in sorted(shipped.keys() | fresh.keys()):
        before, after = shipped.get(section), fresh.get(section)
        if isinstance(before, dict) and isinstance(after, dict):
            changed += [f"{section}.{k}" for k in sorted(before.keys() | after.keys()) if before.get(k) != after.get(k)]
        elif before != after:
            changed.append(section)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the shipped table is out of date")
    args = parser.parse_args(argv)
    root = find_torch_root()
    if root is None:
        print("torch is not installed; cannot generate torch_facts.json", file=sys.stderr)
        return 2
    text = render(build_facts(root))
    if not args.check:
        FACTS_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {FACTS_PATH} ({len(text)} bytes)")
        return 0
    shipped = FACTS_PATH.read_text(encoding="utf-8") if FACTS_PATH.is_file() else "{}"
    if shipped != text:
        changed = changed_entries(json.loads(shipped), json.loads(text))
        print(
            f"{FACTS_PATH} is out of date for torch at {root}: {len(changed)} entries differ "
            f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}). "
            "Run `python -m graphmend_lint.analysis.torch_facts.generate` and commit the result.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
