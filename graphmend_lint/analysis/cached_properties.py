"""``self.<name>`` reads that run a ``functools.cached_property`` getter.

Before Python 3.12, ``cached_property.__get__`` computes the value inside
``with self.lock:`` (an ``RLock``; ``functools.py:997`` in 3.11), and Dynamo
cannot enter a host lock (GB0142, "Unsupported context manager"). Measured on
torch 2.13 / Python 3.11: the frame that reads the attribute is skipped, the
whole ``forward`` runs eagerly. Python 3.12 dropped the lock.

Only classes defined in the linted file are looked through, the class of the
method holding the read and its bases named in the file (left to right,
depth first, as the MRO goes for the single inheritance of models): the
getter's decorator is resolved with the file's imports, under any alias.
"""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.analysis.walk import descendants

CACHED_PROPERTY = "functools.cached_property"
#: The first Python whose ``cached_property`` takes no lock.
LOCK_FREE_PYTHON = (3, 12)
_INDEX_ATTRIBUTE = "_graphmend_cached_properties"


def cached_property_getter(values: ValueOracle, node: nodes.Attribute) -> nodes.FunctionDef | None:
    """The getter that reading ``self.<name>`` (*node*) runs, when it is a ``functools.cached_property``.

    ``None`` as well when a class on the way assigns ``self.<name>``: the
    instance's ``__dict__`` may then hold the value and the getter never runs.
    """
    if not (isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
        return None
    getters = _getters(values, node.root())
    klass = enclosing_class(node) if getters else None
    if klass is None:
        return None
    for owner in _classes_in_file(klass):
        if next(assigned_self_values(owner, node.attrname), None) is not None:
            return None
        if node.attrname in owner.locals:
            return getters.get((owner, node.attrname))
    return None


def _getters(values: ValueOracle, module: nodes.Module) -> dict[tuple[nodes.ClassDef, str], nodes.FunctionDef]:
    """Every method of the module's classes decorated with ``functools.cached_property`` (one walk per file)."""
    found: dict[tuple[nodes.ClassDef, str], nodes.FunctionDef] | None = getattr(module, _INDEX_ATTRIBUTE, None)
    if found is not None:
        return found
    found = {}
    if any(target.partition(".")[0] == "functools" for target in values.imports.aliases.values()):
        for klass in descendants(module, nodes.ClassDef):
            for method in klass.mymethods():
                decorators = method.decorators.nodes if method.decorators else []
                if any(values.qualified_name(decorator) == CACHED_PROPERTY for decorator in decorators):
                    found[(klass, method.name)] = method
    setattr(module, _INDEX_ATTRIBUTE, found)
    return found


def _classes_in_file(klass: nodes.ClassDef) -> Iterator[nodes.ClassDef]:
    """*klass*, then its bases that the file defines at module level, depth first (each once)."""
    seen: set[nodes.ClassDef] = set()
    pending = [klass]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        bases = [_module_class(current.root(), base) for base in current.bases]
        pending.extend(reversed([base for base in bases if base is not None]))


def _module_class(module: nodes.Module, base: nodes.NodeNG) -> nodes.ClassDef | None:
    if not isinstance(base, nodes.Name):
        return None
    bound = module.locals.get(base.name, [])
    return bound[0] if len(bound) == 1 and isinstance(bound[0], nodes.ClassDef) else None
