"""Which calls build an ``nn.Module`` (or an ``nn.Parameter``), and where Dynamo breaks while tracing that.

Dynamo cannot trace the creation of a ``torch.nn.Parameter`` (GB0264). A
``torch.nn`` layer that owns parameters (``nn.Linear``) creates them in its
constructor, so building one in compiled code breaks at that call. Building
a module class of the file breaks inside its ``__init__``: at the first such
layer (GB0264, attributed to that ``__init__`` line), and then, because
Dynamo retries ``__init__`` as a frame of its own whose ``self`` is not an
initialized module yet, at the ``super().__init__()`` statement (GB0119,
"Uninitialized nn.Module"). An ``__init__`` that starts with
``super().__init__()`` and creates no parameter is traced without a break.
``nn.Module.__init__(self)`` breaks at once (GB0007, the call is marked as
skipped, then GB0119 on the retry), parameters or not, and the rest of that
``__init__`` runs eagerly (measured, torch 2.13).

Every answer here is a proof or ``None``: a class counts as a module only
through base classes that resolve, in this file, to ``torch.nn.Module``; a
layer counts only when it always creates a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.untraceable_torch import refused_call
from graphmend_lint.analysis.values import ValueOracle

MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
#: ``torch.nn`` layers whose constructor always creates at least one ``nn.Parameter``.
PARAMETER_LAYERS = frozenset(
    f"torch.nn.{name}"
    for name in (
        "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "Embedding", "EmbeddingBag", "PReLU", "MultiheadAttention",
        "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    )
)
#: Layers that create parameters unless a keyword turns them off (its default is on).
OPTIONAL_PARAMETER_LAYERS = {
    "torch.nn.LayerNorm": "elementwise_affine",
    "torch.nn.RMSNorm": "elementwise_affine",
    "torch.nn.GroupNorm": "affine",
    "torch.nn.BatchNorm1d": "affine",
    "torch.nn.BatchNorm2d": "affine",
    "torch.nn.BatchNorm3d": "affine",
}
_MAX_DEPTH = 8


def creates_parameter(values: ValueOracle, call: nodes.Call) -> str | None:
    """``nn.Linear`` / ``nn.Parameter`` when *call* provably creates a parameter (the name to show), else ``None``."""
    name = values.qualified_name(call.func)
    if name is None:
        return None
    short = f"nn.{name.rsplit('.', 1)[-1]}"
    if name in PARAMETER_CLASSES or name in PARAMETER_LAYERS:
        return short
    switch = OPTIONAL_PARAMETER_LAYERS.get(name)
    if switch is None:
        return None
    for keyword in call.keywords or ():
        if keyword.arg is None or (
            keyword.arg == switch and not (isinstance(keyword.value, nodes.Const) and keyword.value.value is True)
        ):
            return None  # ``**kwargs`` or the switch set to something other than ``True``: unsure
    return short


def _class_named(node: nodes.NodeNG) -> nodes.ClassDef | None:
    """The one class of this file that the name *node* is bound to, else ``None``."""
    if not isinstance(node, nodes.Name):
        return None
    try:
        _, found = node.lookup(node.name)
    except Exception:  # astroid raises a variety of errors on odd scopes
        return None
    if len(found) != 1 or not isinstance(found[0], nodes.ClassDef):
        return None
    return found[0]


def module_lineage(values: ValueOracle, func: nodes.NodeNG) -> list[nodes.ClassDef] | None:
    """The classes of this file from the called class up to ``nn.Module`` (first base first), else ``None``.

    ``None`` unless every class on the way is a class of this file with one
    base and the last one's base is ``torch.nn.Module``.
    """
    klass = _class_named(func)
    lineage: list[nodes.ClassDef] = []
    while klass is not None and len(lineage) < _MAX_DEPTH:
        lineage.append(klass)
        if len(klass.bases) != 1:
            return None
        base = klass.bases[0]
        if values.qualified_name(base) in MODULE_BASES:
            return lineage
        klass = _class_named(base)
    return None


def _module_init(statement: nodes.NodeNG, values: ValueOracle) -> str | None:
    """``"super"`` for ``super().__init__(...)`` (or ``super(Cls, self)``), ``"explicit"`` for ``nn.Module.__init__(self, ...)``, else ``None``."""
    if not (isinstance(statement, nodes.Expr) and isinstance(statement.value, nodes.Call)):
        return None
    func = statement.value.func
    if not (isinstance(func, nodes.Attribute) and func.attrname == "__init__"):
        return None
    receiver = func.expr
    if isinstance(receiver, nodes.Call) and isinstance(receiver.func, nodes.Name):
        # ``super().__init__()``, or the Python 2 spelling ``super(Block, self).__init__()``
        plain = not receiver.args or (
            len(receiver.args) == 2 and isinstance(receiver.args[1], nodes.Name) and receiver.args[1].name == "self"
        )
        return "super" if receiver.func.name == "super" and plain else None
    return "explicit" if values.qualified_name(receiver) in MODULE_BASES else None


def _mentions_self(statement: nodes.NodeNG) -> bool:
    return any(isinstance(n, nodes.Name) and n.name == "self" for n in statement.nodes_of_class(nodes.Name))


@dataclass(frozen=True)
class InitBreaks:
    """Where Dynamo breaks in a module class's ``__init__`` when compiled code builds it."""

    module_init: nodes.Expr
    #: The first parameter creation and its name; ``None`` for ``nn.Module.__init__(self)``, which breaks first,
    #: and for a call Dynamo refuses (:attr:`refused`).
    parameter: tuple[nodes.Call, str] | None
    #: A call into code Dynamo skips (``Variable(...)``, GM507's) that comes before any parameter: the break
    #: there makes Dynamo retry ``__init__`` as a frame of its own, which fails like a parameter's (PSMNet's
    #: ``disparityregression``: GB0007 at ``Variable``, then GB0119 at ``super().__init__()``, measured).
    refused: nodes.Call | None = None


def init_breaks(values: ValueOracle, lineage: list[nodes.ClassDef]) -> InitBreaks | None:
    """The module-initializing statement and the first parameter creation of the ``__init__`` that runs.

    ``None`` (stay quiet) when the ``__init__`` is not in the tree, uses
    ``self`` before initializing the module, builds another module class of
    the file or a parameter inside a block before a plain statement does, or
    creates no parameter and calls nothing Dynamo refuses (then it traces without a break).
    """
    init = next((k.locals["__init__"][0] for k in lineage if "__init__" in k.locals), None)
    if not isinstance(init, nodes.FunctionDef):
        return None
    body = [s for s in init.body if not (isinstance(s, nodes.Expr) and isinstance(s.value, nodes.Const))]
    module_init = None
    for statement in body:
        if module_init is None:
            form = _module_init(statement, values)
            if form == "explicit":
                return InitBreaks(statement, None)
            if form == "super":
                module_init = statement
            elif _mentions_self(statement):
                return None
            continue
        calls = list(statement.nodes_of_class(nodes.Call))
        if any(module_lineage(values, call.func) is not None for call in calls):
            return None  # another module's __init__ runs first: its breaks come first
        created = [(call, name) for call in calls if (name := creates_parameter(values, call)) is not None]
        refused = [call for call in calls if refused_call(values, call) is not None]
        if not created and not refused:
            continue
        if not isinstance(statement, (nodes.Assign, nodes.AnnAssign, nodes.Expr)):
            return None  # inside an if/for/with: whether it runs depends on values we do not know
        if created:
            return InitBreaks(module_init, created[0])
        return InitBreaks(module_init, None, refused[0])
    return None
