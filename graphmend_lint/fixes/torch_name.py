"""The name a fix may write for the ``torch`` module, and the import that binds it.

A fix that writes ``torch.where(...)`` or ``torch.compiler.is_compiling()``
must leave a module that still imports and runs. The module-wide import table
is not enough to know that: transformers' ``utils/import_utils.py`` imports
``torch`` only inside functions, so ``torch`` is unbound in most of the file
(a guard written there made ``import transformers`` fail with ``NameError``).
So the name is looked up *where the fix writes it*, with astroid's scoped
lookup: an ``import torch`` (or ``import torch as T``) visible from that point
is reused; when none is, the fix adds ``import torch`` after the module's
leading imports, unless the name ``torch`` means something else there, in
which case there is no safe name and the fix is declined.

An import under ``if TYPE_CHECKING:`` binds nothing at run time. And
``import torch`` is only added to a module that already imports from torch
at its top level: transformers' ``import_utils.py`` imports torch only under
``TYPE_CHECKING`` and inside functions, because torch is optional there; a
top-level ``import torch`` would break ``import transformers`` without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Edit, Position

MODULE = "torch"


@dataclass(frozen=True)
class TorchName:
    """How a fix refers to ``torch`` at one place: the name, and the import edit it needs (if any)."""

    name: str
    edits: tuple[Edit, ...] = ()


def torch_name_at(analysis: FileAnalysis, node: nodes.NodeNG) -> TorchName | None:
    """A name bound to the torch module wherever *node* runs, or ``None`` when no safe one exists."""
    for name in _torch_aliases(analysis):
        if _binds_torch_module(node, name):
            return TorchName(name)
    if _lookup(node, MODULE) or not _imports_torch_at_top_level(analysis.module):
        return None  # `torch` means something else here, or torch is not a dependency of the module
    return TorchName(MODULE, (_import_edit(analysis),))


def _torch_aliases(analysis: FileAnalysis) -> list[str]:
    """Local names some import in the file binds to the torch module, ``torch`` first."""
    names = [local for local, target in analysis.imports.aliases.items() if target == MODULE]
    return sorted(names, key=lambda name: name != MODULE)


def _binds_torch_module(node: nodes.NodeNG, name: str) -> bool:
    """Every binding of *name* visible from *node* is an ``import torch`` (under that name) that runs."""
    bindings = _lookup(node, name)
    return bool(bindings) and all(
        _imports_torch_as(binding, name) and not _for_type_checking(binding) for binding in bindings
    )


def _imports_torch_at_top_level(module: nodes.Module) -> bool:
    """Some import of torch or a torch submodule runs when *module* is imported (not in a function)."""
    for statement in module.nodes_of_class((nodes.Import, nodes.ImportFrom), skip_klass=(nodes.FunctionDef,)):
        if _for_type_checking(statement):
            continue
        names = [statement.modname] if isinstance(statement, nodes.ImportFrom) else [n for n, _ in statement.names]
        if any(name == MODULE or name.startswith(MODULE + ".") for name in names):
            return True
    return False


def _for_type_checking(statement: nodes.NodeNG) -> bool:
    """*statement* sits under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): it never runs."""
    child, parent = statement, statement.parent
    while parent is not None and not isinstance(parent, nodes.Module):
        if isinstance(parent, nodes.If) and child in parent.body and "TYPE_CHECKING" in parent.test.as_string():
            return True
        child, parent = parent, parent.parent
    return False


def _imports_torch_as(binding: nodes.NodeNG, name: str) -> bool:
    if not isinstance(binding, nodes.Import):
        return False
    for imported, alias in binding.names:
        if (alias or imported.partition(".")[0]) == name:
            return imported == MODULE or (alias is None and imported.startswith(MODULE + "."))
    return False


def _lookup(node: nodes.NodeNG, name: str) -> list[nodes.NodeNG]:
    try:
        _, bindings = node.scope().scope_lookup(node, name)
    except Exception:  # astroid lookups can fail on odd code: then nothing is known to be bound
        return []
    return list(bindings)


def after_leading_imports(analysis: FileAnalysis) -> Position:
    """The start of the line after the docstring and the leading run of imports."""
    line = 2 if analysis.source.lines and analysis.source.lines[0].startswith("#!") else 1
    for index, statement in enumerate(analysis.module.body):
        docstring = index == 0 and isinstance(statement, nodes.Expr) and isinstance(statement.value, nodes.Const)
        if not (docstring or isinstance(statement, (nodes.Import, nodes.ImportFrom))):
            break
        line = (statement.end_lineno or statement.lineno) + 1
    return Position(line, 0)


def _import_edit(analysis: FileAnalysis) -> Edit:
    """Insert ``import torch`` after the docstring and the leading run of imports."""
    position = after_leading_imports(analysis)
    return Edit(position, position, f"import {MODULE}\n")
