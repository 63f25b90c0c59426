"""Resolve local names to fully qualified dotted names through import aliases.

``import torch as T`` and ``from torch import compile as tc`` must both make
``T.compile`` and ``tc`` mean ``torch.compile``. This works on the stdlib
``ast`` so that scope analysis can run on every file cheaply, before astroid
is asked anything.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attribute accesses on a name, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in *body*, nested bodies included, without visiting expressions.

    Walking only statements is several times cheaper than ``ast.walk``, and
    imports, assignments and loops are all statements.
    """
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        statement = stack.pop()
        yield statement  # type: ignore[misc]  # except clauses too, as their bodies' owners
        stack.extend(reversed(list(child_statements(statement))))


def child_statements(node: ast.AST) -> Iterator[ast.AST]:
    """The statements directly in *node*'s blocks, and its ``except`` clauses.

    A ``def``, an import or an assignment can only be a statement, so this is
    all a walk needs to find them.
    """
    for block_name in ("body", "finalbody", "orelse", "handlers"):
        block = getattr(node, block_name, None)
        if isinstance(block, list):
            yield from (s for s in block if isinstance(s, (ast.stmt, ast.excepthandler)))
    for case in getattr(node, "cases", ()) or ():
        yield from case.body


def module_name_for(path: str) -> tuple[str, bool]:
    """The dotted module name of a file, found by walking up ``__init__.py`` packages.

    Returns ``(name, is_package)``. Linting does not import anything, so this
    is the only way to know what ``from .utils import x`` refers to.
    """
    directory, name = os.path.split(os.path.abspath(path))
    is_package = name == "__init__.py"
    parts = [] if is_package else [os.path.splitext(name)[0]]
    while _is_package_directory(directory):
        directory, package = os.path.split(directory)
        parts.append(package)
        if not package:
            break
    return ".".join(reversed(parts)) or os.path.splitext(name)[0], is_package


@functools.lru_cache(maxsize=4096)
def _is_package_directory(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


@dataclass
class ImportTable:
    """Local name to qualified name, for every import in one module."""

    module: str
    is_package: bool = False
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_tree(cls, tree: ast.Module, module: str, is_package: bool = False) -> ImportTable:
        table = cls(module=module, is_package=is_package)
        for node in statements(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        table.aliases[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        table.aliases[head] = head
            elif isinstance(node, ast.ImportFrom):
                base = table._absolute_module(node.module, node.level)
                for alias in node.names:
                    if alias.name != "*":
                        table.aliases[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        return table

    def _absolute_module(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        package_parts = self.module.split(".")
        if not self.is_package:
            package_parts = package_parts[:-1]
        if level > 1:
            package_parts = package_parts[: len(package_parts) - (level - 1)]
        return ".".join([*package_parts, *([module] if module else [])])

    def resolve(self, dotted: str) -> str:
        """Expand the first component of *dotted* through the imports.

        A name that was not imported is returned unchanged: it is local.
        """
        head, _, rest = dotted.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target

    def resolve_node(self, node: ast.AST) -> str | None:
        name = dotted_name(node)
        return self.resolve(name) if name is not None else None

    def is_imported(self, name: str) -> bool:
        return name.partition(".")[0] in self.aliases
