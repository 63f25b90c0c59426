"""Creating an empty instance of a ``torch.Tensor`` subclass in code that torch.compile traces.

Measured on torch 2.13 (CPU): when a subclass of ``torch.Tensor`` defined in
the file overrides ``__new__`` and passes on to ``super().__new__(cls)`` (or
``torch.Tensor.__new__(cls, ...)``) no data, as ``Spike(init_flag=False)``
does with ``super().__new__(cls, *args, **kwargs)`` and ``args`` empty
(snntorch's ``_SpikeTensor``), Dynamo cannot bind the call of
``Tensor.__new__`` it inlines: "failed to bind arguments when attempting to
inline" (GB7312), logged at that line in ``__new__``. Given a tensor
(``Sub(y)`` reaching ``super().__new__(cls, data)``, in a subclass without
``__init__``), the subclass is traced; a creation with positional arguments
is left alone (with an ``__init__`` or keyword arguments it can still break,
at the call, which is not claimed here).

The astroid tree keeps only traced bodies and ``__new__`` is not one of them,
so its body is read from the file's stdlib tree (:mod:`ast_resolution`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import ast_resolution
from graphmend_lint.analysis.imports import ImportTable, dotted_name

if TYPE_CHECKING:
    from graphmend_lint.context import FileAnalysis

TENSOR_CLASS = "torch.Tensor"


def empty_subclass_new(analysis: FileAnalysis, call: nodes.Call) -> ast.Call | None:
    """The ``Tensor.__new__`` call (stdlib node) that breaks when *call* creates a module-level tensor subclass
    of the file without positional arguments, else ``None``."""
    if not isinstance(call.func, nodes.Name) or call.args or any(k.arg is None for k in call.keywords or []):
        return None  # positional data, or ``Sub(**kwargs)`` whose content is unknown
    try:
        _, bindings = call.func.lookup(call.func.name)
    except Exception:  # astroid lookups can fail on odd code: nothing provable
        return None
    if len(bindings) != 1 or not isinstance(bindings[0], nodes.ClassDef):
        return None
    klass = bindings[0]
    if not isinstance(klass.parent, nodes.Module):
        return None
    if not any(analysis.values.qualified_name(base) == TENSOR_CLASS for base in klass.bases):
        return None
    resolution = ast_resolution(analysis)
    new = resolution.index.functions.get(f"{klass.name}.__new__")
    if not isinstance(new, ast.FunctionDef):
        return None
    vararg = new.args.vararg.arg if new.args.vararg else None
    for inner in ast.walk(new):
        if isinstance(inner, ast.Call) and _passes_no_data(resolution.imports, inner, vararg):
            return inner
    return None


def _passes_no_data(imports: ImportTable, inner: ast.Call, vararg: str | None) -> bool:
    """``super().__new__(cls, *args)`` / ``torch.Tensor.__new__(cls, *args)`` where ``args`` is ``__new__``'s own
    (empty) varargs, or with no data at all."""
    func = inner.func
    if not (isinstance(func, ast.Attribute) and func.attr == "__new__"):
        return False
    receiver = func.value
    is_super = isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super"
    name = dotted_name(receiver)
    if not (is_super or (name is not None and imports.resolve(name) == TENSOR_CLASS)):
        return False
    data = inner.args[1:]
    return all(
        isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id == vararg for arg in data
    )
