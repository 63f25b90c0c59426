"""What a module's ``self.<attribute>`` was built as, read from the class body.

The value oracle knows ``self.proj`` is a submodule, not which one. Some
breaks depend on exactly that: calling an ``nn.LSTM`` (Dynamo refuses RNN
modules), reassigning an attribute created with ``nn.Buffer`` (Dynamo cannot
re-register it), indexing ``self.emb.weight`` (a parameter: a tensor). These
helpers answer from the constructors assigned in the class (its ``__init__``
is kept in the pruned tree for exactly this), and stay silent (``None``,
``False``) when the assignments disagree or are not constructor calls.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.lookup import file_bases
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class

#: Attributes of a ``torch.nn`` layer that are parameters (tensors) whenever they are set.
PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})
_MAX_BINDINGS = 8
_CACHE_ATTRIBUTE = "_graphmend_constructors"


def _constructor_name(values: ValueOracle, value: nodes.NodeNG) -> str | None:
    """``torch.nn.LSTM`` for ``nn.LSTM(...)``, and for ``getattr(nn, rnn_type)(...)`` when scope analysis
    found that ``rnn_type`` can only be ``"LSTM"`` (``ScopeFacts.attribute_lookups``)."""
    if not isinstance(value, nodes.Call):
        return None
    func = value.func
    if isinstance(func, nodes.Call) and isinstance(func.func, nodes.Name) and func.func.name == "getattr":
        names = values.scope.looked_up(func.lineno, func.col_offset)
        return names[0] if len(names) == 1 else None
    return values.qualified_name(func)


def _single(names: list[str | None]) -> str | None:
    """The one name every binding agrees on, else ``None``."""
    if not names or None in names or len(set(names)) != 1:
        return None
    return names[0]


def self_attribute_constructor(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """``torch.nn.LSTM`` when every assignment of ``self.<attr>`` in the class calls that constructor.

    *node* is ``self.<attr>``; anything else answers ``None``. Answers are
    kept on the class node (every ``self.layer(...)`` of a class asks).
    """
    if not (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
        return None
    klass = enclosing_class(node)
    if klass is None:
        return None
    known: dict[str, str | None] = klass.__dict__.setdefault(_CACHE_ATTRIBUTE, {})
    if node.attrname not in known:
        assigned = _assigned_in_class_or_bases(klass, node.attrname)[:_MAX_BINDINGS]
        known[node.attrname] = _single([_constructor_name(values, value) for value in assigned])
    return known[node.attrname]


def _assigned_in_class_or_bases(klass: nodes.ClassDef, attribute: str) -> list[nodes.NodeNG]:
    """The values the class assigns to ``self.<attribute>``, or else the first of its bases in the file that
    does, in the order its bases are listed: ``self.lstm`` in a tagger's ``forward`` is often built by the
    ``__init__`` of a shared base class. Only the file's own bases are read, without inference (astroid's
    ``mro()`` infers every base, imports included: it doubled the lint time of transformers)."""
    for owner in (klass, *file_bases(klass)):
        assigned = list(assigned_self_values(owner, attribute))
        if assigned:
            return assigned
    return []


def constructor_of(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """The constructor *node* (``self.rnn``, or a local name) was built by, when provable."""
    if isinstance(node, nodes.Attribute):
        return self_attribute_constructor(values, node)
    if isinstance(node, nodes.Name):
        try:
            _, bindings = node.lookup(node.name)
        except Exception:
            return None
        sources = []
        for binding in bindings[:_MAX_BINDINGS]:
            parent = binding.parent if isinstance(binding, nodes.AssignName) else None
            sources.append(_constructor_name(values, parent.value) if isinstance(parent, nodes.Assign) else None)
        return _single(sources)
    return None


def is_layer_parameter(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``self.emb.weight`` / ``self.proj.bias`` where ``self.emb`` is a ``torch.nn`` layer."""
    if not (isinstance(node, nodes.Attribute) and node.attrname in PARAMETER_ATTRIBUTES):
        return False
    constructor = self_attribute_constructor(values, node.expr) or ""
    module, _, name = constructor.rpartition(".")
    return module.startswith("torch.nn") and name[:1].isupper() and name not in {"Parameter", "Buffer"}


def is_tensor_like(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """A tensor for the oracle, or a layer's parameter it does not type."""
    return values.is_tensor(node) or is_layer_parameter(values, node)
