"""Which class of this module an untyped parameter holds, read from the attributes its function uses on it.

A compiled function often takes an object nothing in the file types: no
annotation, no default, and no call here that says what is passed (TimesFM's
``Attention.forward(self, x, decode_cache)`` gets its cache from the caller of
the compiled model). The body still says a lot: it reads
``decode_cache.next_index``, ``decode_cache.key`` and ``decode_cache.value``,
and only ``DecodeCache`` of this file has all three. Knowing that, the oracle
can type ``decode_cache.next_index`` as the tensor ``DecodeCache.__init__``
assigns, and scope analysis can follow ``decode_cache.method()`` into the class.

The inference answers only when it is safe to (a linter that guesses cries
wolf), and says nothing when:

* the parameter is annotated, has a default other than ``None``, is rebound in
  the function, or is used in a nested function or lambda (another scope may
  rebind it or read more of it);
* the function asks what it got (``isinstance``, ``hasattr``, ``getattr``,
  ``type``): it expects more than one kind of object; reads through
  ``getattr`` strings never count;
* every attribute it reads is one a tensor, NumPy array, ``nn.Module`` or a
  builtin container, string or number has too (``x.shape``, ``x.view(...)``,
  ``xs.append(...)``, ``d.keys()``): the object may be one of those (unless the function calls the
  parameter, ``layer(x)``: then only the module's attributes are that generic);
* not exactly one class family provides every attribute read: a class
  counts with the attributes its body, its methods' ``self.x = ...`` and
  registered buffers, and its local base classes give it. A class derived
  from an imported class (other than ``nn.Module``) may have any attribute:
  when it has some of those read, it is a candidate nobody can rule out,
  and the answer is none. A class and the local classes derived from it count
  as one family (what ``isinstance`` of the base accepts);
* the parameter belongs to an ``__init__``: a class that copies its
  configuration onto ``self`` (``self.hidden_size = config.hidden_size``)
  would match its own ``config`` argument.

Call sites come first: the callers (:class:`~graphmend_lint.analysis.resolve.Resolver`,
:class:`~graphmend_lint.analysis.values.ValueOracle`) ask here only when no
call in the file says what the parameter holds.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property

from graphmend_lint.analysis.imports import ImportTable, dotted_name
from graphmend_lint.analysis.module_index import ModuleIndex
from graphmend_lint.analysis.torch_facts import load_facts

#: ``nn.Module`` attributes a module object has (``model.eval()`` says module, not a local class).
_MODULE_ATTRIBUTES = frozenset(
    {"forward", "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
     "modules", "named_modules", "training", "train", "eval", "to", "cuda", "cpu", "xpu", "half", "float",
     "double", "bfloat16", "type", "state_dict", "load_state_dict", "register_buffer", "register_parameter",
     "register_module", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
     "apply", "zero_grad", "requires_grad_", "add_module", "get_submodule", "get_parameter", "get_buffer",
     "extra_repr", "compile", "share_memory", "to_empty", "weight", "bias"}
)  # fmt: skip
#: NumPy array attributes that tensors lack (the rest they share).
ARRAY_ATTRIBUTES = frozenset(
    {"astype", "ravel", "flat", "tobytes", "copy", "fill", "itemset", "ptp", "put", "resize", "setflags",
     "strides", "base", "ctypes", "flags", "size", "argsort", "searchsorted", "tolist", "item", "choose",
     "compress", "partition", "getfield", "byteswap", "dump", "dumps", "tofile", "tostring", "T", "shape", "dtype",
     "ndim", "real", "imag", "nbytes", "itemsize", "data"}
)  # fmt: skip
#: Attributes of the builtin values a parameter often holds.
_BUILTIN_ATTRIBUTES = frozenset(
    name for kind in (str, bytes, list, dict, tuple, set, int, float, complex, object) for name in dir(kind)
)
#: The most positional arguments the builtin containers' methods of these names take. ``set.update(*others)``
#: counts as one: code updates a set from one iterable at a time, and a metric or cache from several values.
_BUILTIN_POSITIONAL_LIMITS = {
    "update": 1, "append": 1, "add": 1, "extend": 1, "remove": 1, "discard": 1, "count": 1, "get": 2, "pop": 2,
    "setdefault": 2, "insert": 2,
}  # fmt: skip
#: Builtins that ask what an object is: a function calling them on the parameter expects several kinds.
_TYPE_QUERIES = frozenset({"isinstance", "hasattr", "getattr", "setattr", "delattr", "type", "vars"})
#: Calls that give ``self`` an attribute by its name as a string (a module whose text has none skips the walk).
_REGISTRATIONS = re.compile(r"\b(register_buffer|register_parameter|setattr)\(")
#: Imported bases whose attributes are known: an ``nn.Module`` subclass has the module's.
_KNOWN_BASES = {"torch.nn.Module": _MODULE_ATTRIBUTES, "object": frozenset()}


class DuckTyping:
    """The class of this module each untyped parameter's attribute reads identify (see the module docstring)."""

    def __init__(self, index: ModuleIndex, imports: ImportTable) -> None:
        self.index = index
        self.imports = imports
        self._memo: dict[tuple[str, str], tuple[str, ...]] = {}
        self._read_memo: dict[str, dict[str, frozenset[str] | None]] = {}

    def classes(self, function: str, parameter: str) -> tuple[str, ...]:
        """The local classes (a base and the local classes derived from it) *parameter* of *function* holds an
        instance of, judged by the attributes *function* reads on it; ``()`` when unsure."""
        key = (function, parameter)
        if key not in self._memo:
            self._memo[key] = self._classes(function, parameter)
        return self._memo[key]

    def function_at(self, line: int, col: int) -> str | None:
        """The qualified name of the function whose ``def`` keyword is at *line*, *col*."""
        return self._positions.get((line, col))

    def class_position(self, klass: str) -> tuple[int, int]:
        """Line and column of *klass*'s ``class`` keyword."""
        node = self.index.classes[klass]
        return node.lineno, node.col_offset

    @cached_property
    def _positions(self) -> dict[tuple[int, int], str]:
        """Functions by the position of their ``def`` keyword (astroid's ``def_position``)."""
        return {(node.lineno, node.col_offset): name for name, node in self.index.functions.items()}

    def _classes(self, function: str, parameter: str) -> tuple[str, ...]:
        """See :meth:`classes`: the family of the one root class providing every attribute read."""
        node = self.index.functions.get(function)
        if node is None or node.name == "__init__":
            return ()
        read = self._reads(function).get(parameter)
        if not read or self._generic(read, _calls_parameter(node, parameter), _outgrows_builtins(node, parameter)):
            return ()
        exact = [klass for klass, names in self._provided.items() if read <= names]
        if any(read & self._provided[klass] and not read <= self._provided[klass] for klass in self._open):
            return ()  # a class with an imported base may have the rest
        roots = [klass for klass in exact if not any(base in exact for base in self.index.mro(klass)[1:])]
        if len(roots) != 1:
            return ()
        return tuple(klass for klass in exact if roots[0] in self.index.mro(klass))

    def classes_of_parameters(self, function: str) -> set[str]:
        """Every local class some parameter of *function* is duck-typed to (their ``__init__`` says what
        the instance's attributes hold, so the pruned astroid tree keeps it)."""
        return {klass for name in self._reads(function) for klass in self.classes(function, name)}

    def _reads(self, function: str) -> dict[str, frozenset[str] | None]:
        """:func:`_attributes_read` of *function*'s untyped parameters, found once (no walk when it has none:
        most parameters of library code are annotated)."""
        if function not in self._read_memo:
            node = self.index.functions.get(function)
            untyped = frozenset(p.arg for p in self.index.parameters(function) if self._untyped(node, p.arg)) if node else frozenset()
            text = self.index.lines_of(node) if untyped and node else None
            if text is not None:  # only names the text reads an attribute of
                untyped = frozenset(name for name in untyped if re.search(rf"\b{name}\s*\.", text))
            self._read_memo[function] = _attributes_read(node, untyped) if untyped and node else {}
        return self._read_memo[function]

    def _untyped(self, node: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
        """*parameter* is a plain parameter of *node* with no annotation and no default but ``None``."""
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        if positional and positional[0].arg == parameter and self.index.is_method(self.index.qualname_of(node) or ""):
            return False  # ``self`` / ``cls``
        found = next((a for a in (*positional, *arguments.kwonlyargs) if a.arg == parameter), None)
        if found is None or found.annotation is not None:
            return False
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
        defaults += [*arguments.defaults, *arguments.kw_defaults]
        default = dict(zip([a.arg for a in (*positional, *arguments.kwonlyargs)], defaults)).get(parameter)
        return default is None or isinstance(default, ast.Constant) and default.value is None

    def _generic(self, read: frozenset[str], called: bool, outgrows_builtins: bool) -> bool:
        """Every name in *read* is an attribute of one of the values a parameter usually holds. A parameter
        the function calls (``layer(x)``, then ``layer.inverse``: nnAudio's STFT) holds no tensor, array,
        container, string or number: only the module's attributes are generic then. One whose methods are
        called with more arguments than a builtin container's take (``metric.update(logits, labels)``,
        :func:`_outgrows_builtins`) is no container."""
        if called:
            return read <= _MODULE_ATTRIBUTES
        facts = load_facts()
        tensor = all(name in facts.tensor_attributes or name in facts.tensor_methods for name in read)
        kinds = (ARRAY_ATTRIBUTES, _MODULE_ATTRIBUTES) if outgrows_builtins else (ARRAY_ATTRIBUTES, _BUILTIN_ATTRIBUTES, _MODULE_ATTRIBUTES)
        return tensor or any(read <= names for names in kinds)

    @cached_property
    def _provided(self) -> dict[str, frozenset[str]]:
        """Each local class's attributes: its own and its local bases' (and ``nn.Module``'s, for a module)."""
        own = {klass: self._own_attributes(klass) for klass in self.index.classes}
        return {klass: frozenset().union(*(own[base] for base in self.index.mro(klass))) for klass in own}

    @cached_property
    def _open(self) -> frozenset[str]:
        """Local classes that derive (directly or through local bases) from an imported class of unknown attributes."""
        unknown = {klass for klass in self.index.classes if any(name not in _KNOWN_BASES for name in self._imported_bases(klass))}
        return frozenset(klass for klass in self.index.classes if unknown.intersection(self.index.mro(klass)))

    @cached_property
    def _registers(self) -> bool:
        """The module may name ``self`` attributes in strings (one search of its text)."""
        return self.index.text is None or _REGISTRATIONS.search(self.index.text) is not None

    def _imported_bases(self, klass: str) -> list[str]:
        """The bases of *klass* that are not local classes, by qualified name (``?`` when not a plain name)."""
        found = []
        for base in self.index.classes[klass].bases:
            name = dotted_name(base)
            if name is None:
                found.append("?")
            elif name not in self.index.classes:
                found.append(self.imports.resolve(name))
        return found

    def _own_attributes(self, klass: str) -> frozenset[str]:
        """What *klass* itself defines: class-body names (methods, fields, nested classes), ``self.x = ...``
        in its methods, buffers and parameters it registers, and the known attributes of imported bases."""
        node = self.index.classes[klass]
        names: set[str] = set()
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(statement.name)
            elif isinstance(statement, ast.Assign):
                names.update(t.id for target in statement.targets for t in ast.walk(target) if isinstance(t, ast.Name))
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                names.add(statement.target.id)
        names.update(self.index.self_assignments(klass))
        names.update(self.index.self_unpackings(klass))
        if self._registers:
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.update(_registered_names(statement))
        for base in self._imported_bases(klass):
            names.update(_KNOWN_BASES.get(base, _MODULE_ATTRIBUTES if base.startswith("torch.nn.") else ()))
        return frozenset(names)


def opaque_argument(node: object) -> bool:
    """A call's argument that says nothing against duck typing: a name, attribute or item whose value the
    file does not show (``self.attn(x, decode_cache)`` passing its own parameter on), or ``None``.

    A literal, a call or arithmetic is some other value than an instance of a local class (the
    resolver would have said which class otherwise). Takes stdlib ``ast`` and astroid nodes alike.
    """
    kind = type(node).__name__
    return kind in {"Name", "Attribute", "Subscript"} or kind in {"Constant", "Const"} and getattr(node, "value", 0) is None


def _attributes_read(function: ast.FunctionDef | ast.AsyncFunctionDef, names: frozenset[str]) -> dict[str, frozenset[str] | None]:
    """The attribute names *function*'s own body reads (or writes) on each of *names*, from one walk; ``None``
    for a name the body rebinds, asks the type of, or that a nested function, class or lambda uses."""
    found: dict[str, set[str]] = {name: set() for name in names}
    spoiled: set[str] = set()
    stack: list[ast.AST] = [*function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            spoiled.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            continue  # another scope uses the name: it may rebind or read more of it
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in found:
            found[node.value.id].add(node.attr)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            spoiled.add(node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _TYPE_QUERIES:
            spoiled.update(a.id for a in node.args if isinstance(a, ast.Name))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            spoiled.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            spoiled.add(node.name)
        elif isinstance(node, ast.alias):
            spoiled.add((node.asname or node.name).partition(".")[0])
        stack.extend(ast.iter_child_nodes(node))
    return {name: None if name in spoiled else frozenset(attributes) for name, attributes in found.items()}


def _registered_names(method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """``self.register_buffer("x", ...)`` / ``register_parameter`` / ``setattr(self, "x", ...)`` names in *method*."""
    names = set()
    for call in ast.walk(method):
        if not isinstance(call, ast.Call) or len(call.args) < 2:
            continue
        func = call.func
        first, second = call.args[0], call.args[1]
        if isinstance(func, ast.Attribute) and func.attr in {"register_buffer", "register_parameter"}:
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
        elif isinstance(func, ast.Name) and func.id == "setattr" and isinstance(first, ast.Name) and first.id == "self":
            if isinstance(second, ast.Constant) and isinstance(second.value, str):
                names.add(second.value)
    return names


def _outgrows_builtins(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
    """*function* calls a method of *parameter* that builtin containers have with more positional arguments
    than theirs take (:data:`_BUILTIN_POSITIONAL_LIMITS`): InternLM's ``metric.update(logits, labels,
    type_ids)``, Mimi's ``padding_cache.update(hidden_states, self.layer_idx)``; ``dict.update`` takes one."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == parameter
        and len(node.args) > _BUILTIN_POSITIONAL_LIMITS.get(node.func.attr, len(node.args))
        and not any(isinstance(argument, ast.Starred) for argument in node.args)
        for node in ast.walk(function)
    )


def _calls_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
    """*function* calls *parameter* itself somewhere in its body (``parameter(...)``)."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == parameter
        for node in ast.walk(function)
    )
