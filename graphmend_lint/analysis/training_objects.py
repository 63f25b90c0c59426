"""Optimizer, gradient-scaler and learning-rate-scheduler calls in code torch.compile traces.

A training step compiled whole (``optimizer.zero_grad()``, forward, loss,
``backward``, ``optimizer.step()``) breaks at each of these calls. Measured on
torch 2.13 (CPU), one call per function, logged at the call's line:

* ``Optimizer.zero_grad``, ``state_dict``, ``load_state_dict`` and
  ``add_param_group`` are decorated ``torch._disable_dynamo`` in the base
  class: every optimizer, a user subclass that does not override them included
  (GB0008, "Attempted to inline function marked as skipped");
* ``step()`` of the built-in optimizers that wrap it in
  ``_use_grad_for_differentiable`` (SGD, Adam, AdamW, Adagrad, Adadelta,
  Adamax, ASGD, NAdam, RAdam, RMSprop, Rprop, foreach or not) calls
  ``torch._dynamo.graph_break()`` around the update (GB0025; ``fused=True``
  adds GB0098, and a scheduler built on the optimizer wraps its ``step`` in
  ``lr_scheduler.py``, adding GB0007); ``LBFGS.step`` is disabled (GB0098,
  GB0099). A user subclass that defines its own ``step`` traces (measured: no
  break), as do the optimizers whose ``step`` breaks for other reasons
  (Adafactor's ``.item()``) or was not measured: their ``step`` is not
  reported;
* every method of a ``torch.optim.lr_scheduler`` scheduler (``step``,
  ``get_last_lr``...) lives in ``lr_scheduler.py``, a file Dynamo always skips
  (GB0008);
* every method of ``torch.amp.GradScaler`` (and the ``torch.cuda.amp`` /
  ``torch.cpu.amp`` ones) lives in a module Dynamo skips: ``scale``,
  ``unscale_``, ``update``, ``get_scale``, ``is_enabled`` (GB0008), and
  ``step`` (GB0008 and the optimizer's GB0025); ``scaler.scale(loss).backward()``
  adds ``backward``'s GB0123 (GM507's) on the same line, enabled or not.

Attribute reads (``optimizer.param_groups``, ``scheduler.last_epoch``) trace,
and so do ``model.zero_grad()``, ``clip_grad_norm_``, ``clip_grad_value_`` and
``p.grad`` reads and writes (measured): none is reported.

An object counts as one of these only on evidence: every value the file's
resolver finds for it is a call of a torch optimizer, scheduler or scaler
class (at module level, in ``__init__`` as ``self.<attr>``, in a factory's
``return``, an argument at the compiled function's call sites), or of a class
of the file derived from one; or it is a parameter annotated with such a class
(``optimizer: torch.optim.Optimizer``, whose ``step`` is then unknown); or,
with nothing known of it, the function uses it as an optimizer: it calls both
``zero_grad()`` and ``step()`` on it (a compiled ``train_iteration(model,
optimizer, batch)``, PANNs; measured with SGD and Adam passed in: GB0008 at
``zero_grad``, GB0025 at ``step``). An arbitrary ``obj.step()`` is not an optimizer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import AstResolution
from graphmend_lint.analysis.resolve import Target, What

OPTIMIZER = "optimizer"
SCALER = "gradient scaler"
SCHEDULER = "learning-rate scheduler"
#: ``Optimizer`` methods torch decorates ``torch._disable_dynamo`` (torch 2.13, ``optim/optimizer.py``).
DISABLED_OPTIMIZER_METHODS = frozenset({"zero_grad", "state_dict", "load_state_dict", "add_param_group"})
#: Built-in optimizers whose ``step`` calls ``torch._dynamo.graph_break()`` (``_use_grad_for_differentiable``).
GRAPH_BREAKING_STEPS = frozenset(
    {"SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop"}
)
DISABLED_STEPS = frozenset({"LBFGS"})
#: Every optimizer class ``torch.optim`` exports, the base class included.
OPTIMIZERS = GRAPH_BREAKING_STEPS | DISABLED_STEPS | {"Adafactor", "Muon", "SparseAdam", "Optimizer"}
_OPTIM = "torch.optim"
_SCHEDULER_MODULE = "torch.optim.lr_scheduler"
_NOT_OPTIMIZER_MODULES = frozenset({"lr_scheduler", "swa_utils"})
_SCALER_MODULES = frozenset({"torch.amp", "torch.amp.grad_scaler", "torch.cuda.amp", "torch.cuda.amp.grad_scaler",
                             "torch.cpu.amp", "torch.cpu.amp.grad_scaler"})  # fmt: skip
_SCALER = "GradScaler"
#: The two methods whose joint use marks an object of unknown class as an optimizer.
_OPTIMIZER_PAIR = frozenset({"zero_grad", "step"})
_SELF = "self"


@dataclass(frozen=True)
class TorchClass:
    """A torch training class an object is an instance of (directly, or through a class of the file)."""

    role: str  # OPTIMIZER, SCALER or SCHEDULER
    name: str  # ``SGD``, ``GradScaler``, ``StepLR``
    local: str | None = None  # the file's subclass, when the object is an instance of one


@dataclass(frozen=True)
class TrainingCall:
    """A call Dynamo breaks on, the object's role and why it breaks."""

    role: str
    reason: str


#: An object the function uses as an optimizer (:func:`_used_as_optimizer`): one of torch's built-in ones,
#: whose ``step`` breaks, is what such code is run with.
USED_AS_OPTIMIZER = TorchClass(OPTIMIZER, "an optimizer (by its `zero_grad()` and `step()`)")


def torch_training_class(qualified: str) -> TorchClass | None:
    """The torch class *qualified* names: ``torch.optim.AdamW`` (or ``torch.optim.adamw.AdamW``),
    ``torch.amp.GradScaler``, ``torch.optim.lr_scheduler.StepLR``; ``None`` for anything else."""
    module, _, name = qualified.rpartition(".")
    if module == _SCHEDULER_MODULE and name.lstrip("_")[:1].isupper():  # ``_LRScheduler``, the old base class
        return TorchClass(SCHEDULER, name)
    if module in _SCALER_MODULES and name == _SCALER:
        return TorchClass(SCALER, name)
    package, _, submodule = module.rpartition(".")
    in_optim = module == _OPTIM or (package == _OPTIM and submodule not in _NOT_OPTIMIZER_MODULES)
    return TorchClass(OPTIMIZER, name) if in_optim and name in OPTIMIZERS else None


def breaking_call(resolution: AstResolution, call: nodes.Call) -> TrainingCall | None:
    """What *call* (``receiver.method(...)``) does that Dynamo breaks on, when its receiver is provably a torch
    optimizer, gradient scaler or scheduler (module docstring), else ``None``."""
    func = call.func
    if not isinstance(func, nodes.Attribute) or func.attrname.startswith("__"):
        return None
    classes = _receiver_classes(resolution, func.expr)
    if not classes:
        return None
    reasons = [_reason(resolution, found, func.attrname) for found in classes]
    roles = {found.role for found in classes}
    if None in reasons or len(roles) != 1:
        return None
    subjects: dict[str, set[str]] = {}
    for subject, why in (reason for reason in reasons if reason is not None):
        subjects.setdefault(why, set()).add(subject)
    said = "; ".join(f"{' / '.join(sorted(names))} {why}" for why, names in sorted(subjects.items()))
    return TrainingCall(roles.pop(), said)


def _reason(resolution: AstResolution, found: TorchClass, method: str) -> tuple[str, str] | None:
    """What breaks (``SGD.step``) and why, as the message words them; ``None`` when the call traces or is unknown."""
    if found.local is not None and resolution.index.method(found.local, method) is not None:
        return None  # the file's own method: traced like any other
    if found.role == SCALER:
        return "`GradScaler`", "lives in `torch.amp`, which Dynamo does not trace"
    if found.role == SCHEDULER:
        return "every scheduler method", "lives in `torch/optim/lr_scheduler.py`, a file Dynamo always skips"
    if method in DISABLED_OPTIMIZER_METHODS:
        return f"`Optimizer.{method}`", "is marked `torch._disable_dynamo`"
    if method != "step":
        return None
    if found.name in GRAPH_BREAKING_STEPS:
        return f"`{found.name}.step`", "calls `torch._dynamo.graph_break()` around the update"
    if found is USED_AS_OPTIMIZER:
        return "the `step` of torch's built-in optimizers", "calls `torch._dynamo.graph_break()` around the update"
    if found.name in DISABLED_STEPS:
        return f"`{found.name}.step`", "is marked `torch._disable_dynamo`"
    return None


def _receiver_classes(resolution: AstResolution, receiver: nodes.NodeNG) -> frozenset[TorchClass]:
    """The torch training classes *receiver* is an instance of: every value found is one, or, with no value
    found, its parameter annotation names one; else empty."""
    if isinstance(receiver, nodes.Attribute) and isinstance(receiver.expr, nodes.Name) and receiver.expr.name == _SELF:
        targets = _self_attribute_targets(resolution, receiver)
    else:
        targets = resolution.targets(receiver)
    if not targets:
        annotated = _annotated_class(resolution, receiver)
        if annotated is None:
            return frozenset({USED_AS_OPTIMIZER}) if _used_as_optimizer(receiver) else frozenset()
        return frozenset({annotated})
    classes = {_class_of(resolution, target) for target in targets}
    return frozenset() if None in classes else frozenset(c for c in classes if c is not None)


def _used_as_optimizer(receiver: nodes.NodeNG) -> bool:
    """The function calls both ``zero_grad()`` and ``step()`` on *receiver* (a name or ``self.<attr>``), which
    no value the resolver found says anything about: what only an optimizer (or a wrapper of one) offers."""
    method = receiver.parent
    if not (isinstance(receiver, (nodes.Name, nodes.Attribute)) and isinstance(method, nodes.Attribute)):
        return False
    if method.attrname not in _OPTIMIZER_PAIR:
        return False  # only these two are reported by use; the walk below is for them alone
    spelled = receiver.as_string()
    called = {
        call.func.attrname
        for call in receiver.scope().nodes_of_class(nodes.Call)
        if isinstance(call.func, nodes.Attribute) and call.func.attrname in _OPTIMIZER_PAIR and call.func.expr.as_string() == spelled
    }
    return called == _OPTIMIZER_PAIR


def _self_attribute_targets(resolution: AstResolution, attribute: nodes.Attribute) -> frozenset[Target]:
    """What ``self.<attr>`` holds, from every ``self.<attr> = value`` of the class and its local bases.

    The resolver leaves torch-built attribute values (``self.optimizer =
    torch.optim.AdamW(...)``) unresolved, since scope analysis only follows
    the file's own classes; here they are the point.
    """
    scope = resolution.scope_of(attribute)
    klass = resolution.index.owner.get(scope)
    if klass is None:
        return frozenset()
    targets: set[Target] = set()
    for owner in resolution.index.mro(klass):
        for value, method in resolution.index.self_assignments(owner).get(attribute.attrname, []):
            if isinstance(value, ast.Constant) and value.value is None:
                continue  # ``self.optimizer = None`` until a setup method builds it
            found = resolution.resolver.resolve(value, method)
            if not found:
                return frozenset()  # a value nothing is known of: the attribute may hold anything
            targets.update(found)
    return frozenset(targets)


def _class_of(resolution: AstResolution, target: Target) -> TorchClass | None:
    if target.what is What.EXTERNAL:
        return torch_training_class(target.name)
    if target.what is not What.INSTANCE:
        return None
    for klass in resolution.index.mro(target.name):
        for base in resolution.index.classes[klass].bases:
            qualified = resolution.imported(base)
            found = torch_training_class(qualified) if qualified else None
            if found is not None:
                return TorchClass(found.role, found.name, target.name)
    return None


def _annotated_class(resolution: AstResolution, receiver: nodes.NodeNG) -> TorchClass | None:
    """The torch training class a parameter is annotated with (``Optional[...]`` and ``X | None`` too)."""
    if not isinstance(receiver, nodes.Name):
        return None
    scope = resolution.scope_of(receiver)
    if scope not in resolution.index.functions or resolution.index.bindings(scope, receiver.name):
        return None  # rebound in the function: the annotation no longer says what it holds
    for parameter in resolution.index.parameters(scope):
        if parameter.arg == receiver.name and parameter.annotation is not None:
            qualified = resolution.imported(_without_none(parameter.annotation))
            return torch_training_class(qualified) if qualified else None
    return None


def _without_none(annotation: ast.expr) -> ast.expr:
    """``X`` of ``Optional[X]`` / ``X | None`` / ``None | X``."""
    if isinstance(annotation, ast.Subscript) and (ast.unparse(annotation.value).rpartition(".")[2] == "Optional"):
        return annotation.slice
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        kept = [side for side in sides if not (isinstance(side, ast.Constant) and side.value is None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation
