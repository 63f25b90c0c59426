"""Which objects of traced code are ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` modules, asked of the resolver.

Dynamo refuses any instance of those three classes, subclasses included
(``isinstance(value, (nn.RNN, nn.GRU, nn.LSTM))`` in its variable builder,
torch 2.13). Real code rarely writes ``self.rnn = nn.LSTM(...)`` in the class
that calls it: the layer comes from a factory (``make_rnn(kind)``), a class
chosen at run time (``nn.LSTM if cell == "lstm" else nn.GRU``), a name
(``getattr(nn, rnn_type)``), a constructor argument (``Wrapper(nn.LSTM(...))``),
a ``ModuleList`` a loop walks, or a subclass (``class BLSTM(nn.LSTM)``). The
resolver of scope analysis follows all of those on the file's full tree
(:mod:`~graphmend_lint.analysis.ast_resolution`); this module only judges its
answer.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import AstResolution
from graphmend_lint.analysis.imports import dotted_name
from graphmend_lint.analysis.resolve import ELEMENTS, Target, What

#: ``nn.Module`` methods that walk every submodule: called on a module that holds an RNN layer anywhere in its
#: tree, each makes Dynamo wrap that layer, which it refuses (GB0014 at the call; measured on torch 2.13 for
#: ``eval()``, ``next(self.parameters())``, ``list(self.modules())`` and a loop over ``named_children()``).
SUBMODULE_WALKERS = frozenset(
    {"eval", "train", "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
     "children", "named_children"}
)  # fmt: skip
_MAX_TREE_DEPTH = 6
#: The classes Dynamo refuses, by their public names and where torch defines them.
RECURRENT_MODULES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})
_DEFINED_IN = "torch.nn.modules.rnn."


def recurrent_layers(resolution: AstResolution, node: nodes.NodeNG, some: bool = False) -> frozenset[str]:
    """The recurrent classes (``torch.nn.LSTM``...) *node* may be an instance of, when every object it may
    denote is one; empty when any may be something else, or nothing is known.

    With *some*, one recurrent object is enough, when every object is known: a loop over a ``ModuleList``
    that holds an ``nn.LSTM`` among norms (StyleTTS2's duration encoder) reaches the LSTM on some turn.
    """
    targets = resolution.targets(node)
    layers = {_recurrent_class(resolution, target) for target in targets}
    known = {layer for layer in layers if layer is not None}
    if some:
        return frozenset(known) if all(_known(target) for target in targets) else frozenset()
    return frozenset() if not layers or None in layers else frozenset(known)


def _known(target: Target) -> bool:
    """An object the file builds: an instance of one of its classes, or of a torch class."""
    return target.what is What.INSTANCE or target.what is What.EXTERNAL and target.name.startswith("torch.")


def recurrent_base(resolution: AstResolution, class_name: str) -> str | None:
    """The recurrent torch class the file's class *class_name* derives from, directly or through its
    bases in the file (``class BLSTM(nn.LSTM)``)."""
    index = resolution.index
    for klass in index.mro(class_name):
        for base in index.classes[klass].bases:
            name = dotted_name(base)
            if name is not None and resolution.imports.is_imported(name):
                layer = _public_name(resolution.imports.resolve(name))
                if layer is not None:
                    return layer
    return None


def recurrent_self(resolution: AstResolution, class_name: str) -> frozenset[str]:
    """The recurrent classes ``self`` may be in the methods of the file's class *class_name*: its own
    recurrent base, or, for a base class of the file's layers (pytorch-forecasting's ``class RNN(ABC,
    nn.RNNBase)`` under ``class LSTM(RNN, nn.LSTM)``), those of its subclasses, when every one has one."""
    own = recurrent_base(resolution, class_name)
    if own is not None:
        return frozenset({own})
    layers = {recurrent_base(resolution, subclass) for subclass in resolution.index.subclasses(class_name)}
    return frozenset() if not layers or None in layers else frozenset(layer for layer in layers if layer)


def _recurrent_class(resolution: AstResolution, target: Target) -> str | None:
    if target.what is What.EXTERNAL:
        return _public_name(target.name)
    if target.what is What.INSTANCE:
        return recurrent_base(resolution, target.name)
    return None


def _public_name(qualified: str) -> str | None:
    """``torch.nn.LSTM`` for itself and for ``torch.nn.modules.rnn.LSTM``; ``None`` for any other class."""
    if qualified.startswith(_DEFINED_IN):
        qualified = "torch.nn." + qualified.removeprefix(_DEFINED_IN)
    return qualified if qualified in RECURRENT_MODULES else None


def recurrent_layers_within(resolution: AstResolution, class_name: str) -> frozenset[str]:
    """The recurrent classes an instance of the file's class *class_name* holds as submodules, at any depth
    (``self.gru = nn.GRU(...)``, a ``ModuleList`` of LSTMs, a submodule of the file's own class that holds
    one). Attributes the resolver cannot explain hold nothing it knows of: the answer may be empty."""
    found: set[str] = set()
    seen: set[str] = set()
    pending = [(class_name, 0)]
    while pending:
        klass, depth = pending.pop()
        if klass in seen or depth > _MAX_TREE_DEPTH:
            continue
        seen.add(klass)
        attributes = {name for owner in resolution.index.mro(klass) for name in resolution.index.self_assignments(owner)}
        for attribute in attributes:  # ``attribute`` itself reads the assignments of every base
            for path in ((), (ELEMENTS,)):
                for target in resolution.resolver.attribute(klass, attribute, path):
                    layer = _recurrent_class(resolution, target)
                    if layer is not None:
                        found.add(layer)
                    elif target.what is What.INSTANCE:
                        pending.append((target.name, depth + 1))
    return frozenset(found)
