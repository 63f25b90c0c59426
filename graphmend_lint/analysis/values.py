"""Is this expression a tensor's *value*, or something Dynamo treats as static?

Every expression in traced code gets one of three kinds:

* ``TENSOR``: a tensor value. Using it as a Python bool or number breaks the graph.
* ``STATIC``: a Python value, or tensor metadata Dynamo specialises or guards on
  (``.shape``, ``.dtype``, ``len()``, ``is None``, ``self.training``, config...).
* ``UNKNOWN``: anything else. Rules stay quiet on it: a linter that cries wolf
  gets uninstalled.

Names are resolved with astroid's scoped ``lookup``; torch calls through the
generated torch table (``torch_facts``), never by importing torch. Results are
memoised per node.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from astroid import nodes

from graphmend_lint.analysis.annotations import STATIC_TYPES, TENSOR_TYPES, annotated_types
from graphmend_lint.analysis.assigned_values import appended_items, bound_values
from graphmend_lint.analysis.astroid_tree import def_position
from graphmend_lint.analysis.duck_typing import ARRAY_ATTRIBUTES, opaque_argument
from graphmend_lint.analysis.imports import ImportTable
from graphmend_lint.analysis.lookup import is_builtin_call, reaching_bindings
from graphmend_lint.analysis.none_guards import in_dead_branch, is_sizes, live_arm, live_operands, none_test, settled_test
from graphmend_lint.analysis.scope import COMPILING_PREDICATES, SCRIPTING_PREDICATES, ScopeFacts
from graphmend_lint.analysis.torch_facts import TorchFacts, load_facts, split_kind
from graphmend_lint.analysis.walk import descendants, dotted


class Kind(enum.Enum):
    TENSOR = "tensor"
    STATIC = "static"
    UNKNOWN = "unknown"


#: Attributes that are metadata on any object Dynamo traces (tensors, modules).
STATIC_ATTRIBUTES = frozenset(
    {
        "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_sparse", "is_quantized", "is_meta",
        "requires_grad", "layout", "training", "is_leaf", "names", "itemsize", "nbytes",
    }
)  # fmt: skip
#: Tensor methods whose Python-bool result is computed from tensor data. (``torch.equal``
#: and ``torch.allclose`` are not here: measured, Dynamo does not break on them.)
DATA_DEPENDENT_BOOL = frozenset({"__bool__"})
#: Builtins whose result is a Python value computed from static inputs.
STATIC_BUILTINS = frozenset(
    {"len", "isinstance", "issubclass", "hasattr", "getattr", "callable", "range", "type", "id", "str", "repr"}
)
#: torch functions whose positional arguments are sizes or data, not input tensors.
TENSOR_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace", "logspace",
     "eye", "tensor", "as_tensor", "from_numpy", "manual_seed", "Size", "device", "dtype"}
)  # fmt: skip
_NORM_TENSORS = frozenset({"running_mean", "running_var", "num_batches_tracked", "weight", "bias"})
#: Tensors a ``torch.nn`` base class puts on ``self`` (buffers, parameters; ``None`` where switched off),
#: by the base's class name: a subclass reads them without assigning them.
INHERITED_TENSORS: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
         "InstanceNorm3d"),
        _NORM_TENSORS,
    ),
    **dict.fromkeys(
        ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
         "LayerNorm", "GroupNorm", "Embedding"),
        frozenset({"weight", "bias"}),
    ),
}  # fmt: skip
#: ``torch.IntTensor([4])``: the legacy typed constructors build tensors (the facts table lists them as classes);
#: ``Variable(t)`` has returned its tensor argument since PyTorch 0.4 (Beta-VAE's ``Variable(x.data.new(...))``).
LEGACY_TENSOR_CONSTRUCTORS = frozenset(
    f"torch.{kind}Tensor"
    for kind in ("", "Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
) | {"torch.autograd.Variable", "torch.autograd.variable.Variable"}
ELEMENTWISE_BUILTINS = frozenset({"max", "min", "abs", "sum"})
HOST_CONVERSIONS = frozenset({"int", "float", "bool", "complex"})
#: Methods plain Python values have too: using them is no evidence of a tensor.
PLAIN_PYTHON_ATTRIBUTES = frozenset(
    name for kind in (str, bytes, list, dict, tuple, set, int, float, complex) for name in dir(kind)
)
#: ``nn.Module`` methods that tensors have too (``model.to(device)`` is no evidence of a tensor).
MODULE_METHODS = frozenset(
    {"to", "float", "half", "double", "bfloat16", "cuda", "cpu", "xpu", "type", "apply", "train", "eval",
     "requires_grad_", "share_memory", "to_empty", "zero_grad", "register_hook", "forward", "parameters",
     "buffers", "children", "modules", "state_dict"}
)  # fmt: skip
#: Methods of ``torch.distributions`` objects that return tensors (``Beta(a, b).sample(())``).
DISTRIBUTION_TENSOR_METHODS = frozenset(
    {"sample", "rsample", "sample_n", "log_prob", "cdf", "icdf", "entropy", "perplexity"}
)
#: Methods that, of the values compiled code meets, only tensors and NumPy arrays (which Dynamo traces as
#: tensors) have: no Python value, ``nn.Module``, ``torch.Size`` or dtype has one. A call of one on a
#: receiver of unknown kind is a call on an array. Measured on torch 2.13 (``tests/typing_programs.py``):
#: ``.item()`` breaks on a tensor (GB0124) and on an array (GB0033), ``.tolist()`` on both (GB0109 for
#: floats, GB0033 for integers), ``.nonzero()`` on both (GB0036); ``.argwhere()``, ``.masked_select()``,
#: ``.unique()``, ``.unique_consecutive()``, ``.bincount()`` and ``.repeat_interleave()`` exist on
#: tensors only (GB0036; ``repeat_interleave`` only with tensor repeats). Left out: methods a Python value
#: or a module has too (``sum``, ``index``, ``count``, ``to``, ``float``), and those of arrays that keep
#: a static shape (``searchsorted``).
ARRAY_ONLY_METHODS = frozenset(
    {"item", "tolist", "nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount",
     "repeat_interleave"}
)  # fmt: skip
#: Builtin types whose instances are Python values (``isinstance(n, int)`` narrows ``n`` to one).
PYTHON_TYPES = frozenset({"int", "float", "bool", "complex", "str", "bytes", "list", "tuple", "dict", "set"})
#: Builtins that copy the items of their iterable argument into a new sequence (or walk them backwards).
ITEM_COPIES = frozenset({"sorted", "list", "tuple", "reversed"})
#: Annotations of Python numbers and flags that code sometimes passes a tensor for all the same.
SCALAR_ANNOTATIONS = frozenset({frozenset({"bool"}), frozenset({"int"}), frozenset({"float"})})
TENSOR_RESULT_KINDS = frozenset({"tensor", "tuple_tensor"})
STATIC_RESULT_KINDS = frozenset({"int", "size", "dtype", "device", "none", "bool"})
_IDENTITY_OPS = frozenset({"is", "is not", "in", "not in"})
#: Comparison operators: elementwise on tensors and arrays, a Python ``bool`` on Python values.
COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})


def is_elementwise_comparison(node: nodes.NodeNG) -> bool:
    """``a < b``: one comparison operator, elementwise on tensors and arrays (``a < b < c`` is an ``and``)."""
    return isinstance(node, nodes.Compare) and len(node.ops) == 1 and node.ops[0][0] in COMPARISONS

_MAX_LOOKUPS = 16
#: Classes of one module followed up a class's bases (the class itself included).
_MAX_LINEAGE = 8
#: torch functions whose first argument is a sequence of tensors (a Python number there raises).
TENSOR_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack"})
#: How many assignments evidence that a parameter is a tensor may pass through (``y = x * 2`` then ``y.sum()``).
_EVIDENCE_DEPTH = 3
#: How many calls deep evidence that a parameter is a tensor may be looked for (``to_d(x, sigmas[i], d)``
#: passing ``sigma`` on to ``append_dims(sigma, x.ndim)``).
_MAX_HANDOFFS = 3
#: Classifications open at once before the oracle classifies the innermost one on its own first.
_MAX_NESTING = 60
#: A list built by more appends than this is not typed by its items (each read would classify them all).
_MAX_APPENDED = 8
#: How many times one question may be set aside for a deeper one (each time memoises at least one node).
_MAX_DETOURS = 100_000


class _TooDeep(Exception):
    """Raised by a classification nested too deep; *node* is worked out first, then the outer one again."""

    def __init__(self, node: nodes.NodeNG) -> None:
        super().__init__()
        self.node = node


def enclosing_class(node: nodes.NodeNG) -> nodes.ClassDef | None:
    """The class whose method holds *node* (``self`` refers to its instances)."""
    klass = node.frame()
    while klass is not None and not isinstance(klass, nodes.ClassDef):
        klass = klass.parent.frame() if klass.parent is not None else None
    return klass


@dataclass
class _ClassAttributes:
    """``self.<attribute>`` values of one class: assignments and ``register_buffer`` tensors."""

    assigned: dict[str, list[nodes.NodeNG]] = field(default_factory=dict)
    buffers: dict[str, list[nodes.NodeNG]] = field(default_factory=dict)
    #: ``self.<attribute>[key] = value`` stores: the subscript target (its key) and the value, by attribute.
    items: dict[str, list[tuple[nodes.Subscript, nodes.NodeNG]]] = field(default_factory=dict)


_INDEX_ATTRIBUTE = "_graphmend_attributes"


def _class_attributes(klass: nodes.ClassDef) -> _ClassAttributes:
    """One walk of *klass* per file, however many ``self.x`` reads ask about it.

    The index is kept on the class node itself, so it dies with the file's
    tree. (A module-level ``WeakKeyDictionary`` leaked every tree: its values
    hold nodes whose parent chain leads back to the key.)
    """
    found: _ClassAttributes | None = getattr(klass, _INDEX_ATTRIBUTE, None)
    if found is not None:
        return found
    found = _ClassAttributes()
    for node in descendants(klass, (nodes.AssignAttr, nodes.Call, nodes.Subscript)):
        if isinstance(node, nodes.Subscript):
            container = node.value
            if (
                isinstance(node.parent, nodes.Assign)
                and node in node.parent.targets
                and isinstance(container, nodes.Attribute)
                and isinstance(container.expr, nodes.Name)
                and container.expr.name == "self"
            ):
                found.items.setdefault(container.attrname, []).append((node, node.parent.value))
        elif isinstance(node, nodes.AssignAttr):
            statement = node.parent
            if (
                isinstance(node.expr, nodes.Name)
                and node.expr.name == "self"
                and isinstance(statement, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign))
                and statement.value is not None
            ):
                found.assigned.setdefault(node.attrname, []).append(statement.value)
        elif (
            isinstance(node.func, nodes.Attribute)
            and node.func.attrname == "register_buffer"
            and len(node.args) >= 2
            and isinstance(node.args[0], nodes.Const)
            and isinstance(node.args[0].value, str)
        ):
            found.buffers.setdefault(node.args[0].value, []).append(node.args[1])
    for superseded in _superseded_in_init(klass):
        found.assigned[superseded.attrname].remove(superseded.parent.value)
    setattr(klass, _INDEX_ATTRIBUTE, found)
    return found


def _superseded_in_init(klass: nodes.ClassDef) -> Iterator[nodes.AssignAttr]:
    """``self.x = ...`` statements of ``__init__``'s own body that a later one of that body replaces.

    Beta-VAE's solver stores ``self.C_max = args.C_max`` and, a few lines on, ``self.C_max =
    Variable(torch.FloatTensor([self.C_max]))``: an instance only ever holds the tensor, so
    ``torch.clamp(..., 0, self.C_max.data[0])`` in the step is a tensor bound (GB0033, measured). Only
    unconditional statements of the body count; one under an ``if`` or a loop may not run.
    """
    init = klass.locals.get("__init__", [None])[0]
    if not isinstance(init, nodes.FunctionDef):
        return
    latest: dict[str, nodes.AssignAttr] = {}
    for statement in init.body:
        if not isinstance(statement, nodes.Assign):
            continue
        for target in statement.targets:
            if isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == "self":
                earlier = latest.get(target.attrname)
                if earlier is not None:
                    yield earlier
                latest[target.attrname] = target


def assigned_self_values(klass: nodes.ClassDef, attribute: str) -> Iterator[nodes.NodeNG]:
    """Every value assigned (``=``, ``: T =``, ``op=``) to ``self.<attribute>`` in *klass*."""
    return iter(_class_attributes(klass).assigned.get(attribute, ()))


def _loop_target_path(target: nodes.AssignName) -> tuple[nodes.For | nodes.Comprehension | None, tuple[int, ...]]:
    """The loop whose target holds *target* in (nested) tuples, and the indices that lead to it."""
    path: list[int] = []
    node: nodes.NodeNG = target
    while isinstance(node.parent, (nodes.Tuple, nodes.List)):
        path.append(node.parent.elts.index(node))
        node = node.parent
    loop = node.parent
    if isinstance(loop, (nodes.For, nodes.Comprehension)) and loop.target is node:
        return loop, tuple(reversed(path))
    return None, ()


def _is_sliced(node: nodes.NodeNG) -> bool:
    """Whether *node* is the container of ``node[a:b]`` or ``node[:, 0]``: a slice has its container's type
    (list, tensor...), and a multi-axis one (a slice or ``...`` among several indices) only an array takes."""
    parent = node.parent
    if not (isinstance(parent, nodes.Subscript) and parent.value is node):
        return False
    return isinstance(parent.slice, nodes.Slice) or is_array_index(parent.slice)


def _refines(binding: nodes.NodeNG) -> bool:
    """``x = <expression reading x>`` (``x = x[mask]``, ``x = x.float()``): the name's new value is computed
    from its old one."""
    statement = binding.parent
    return (
        isinstance(binding, nodes.AssignName)
        and isinstance(statement, nodes.Assign)
        and statement.targets == [binding]
        and any(use.name == binding.name for use in descendants(statement.value, nodes.Name))
    )


def _untyped_source(value: nodes.NodeNG) -> bool:
    """A read from a mapping under a string key (``inputs["depth_gt"]``) or one elementwise comparison
    (``input_ids == image_token_id``): what the name holds is unknown, but not a module or an object."""
    if isinstance(value, nodes.Subscript):
        return isinstance(value.slice, nodes.Const) and isinstance(value.slice.value, str)
    return is_elementwise_comparison(value)


def _binds_untyped_source(binding: nodes.NodeNG) -> bool:
    statement = binding.parent
    return isinstance(statement, nodes.Assign) and statement.targets == [binding] and _untyped_source(statement.value)


def _mapped_lambda(node: nodes.NodeNG) -> nodes.Lambda | None:
    """The lambda of ``map(lambda ...: ..., ...)`` (the builtin ``map``): what each item of the result is."""
    if isinstance(node, nodes.Call) and node.args and isinstance(node.args[0], nodes.Lambda) and is_builtin_call(node, "map"):
        return node.args[0]
    return None


def _compares_with_text(node: nodes.NodeNG) -> bool:
    """``mode == "flash"``: a comparison with a string or bytes literal, which no tensor is compared with."""
    if not isinstance(node, nodes.Compare):
        return False
    operands = [node.left, *(right for _, right in node.ops)]
    return any(isinstance(operand, nodes.Const) and isinstance(operand.value, (str, bytes)) for operand in operands)


def without_none(values: list[nodes.NodeNG]) -> list[nodes.NodeNG]:
    """*values* less the ``None`` literals, unless that leaves nothing: a ``None`` on some paths (``return x,
    None``, ``... else (None, None)``) is what code tests before use (Hiera's ``if bool_masked_pos is not
    None:``), so the other values say what the name holds there."""
    given = [value for value in values if not (isinstance(value, nodes.Const) and value.value is None)]
    return given or values


def _compares_with_none(node: nodes.Compare) -> bool:
    """``mask != None`` / ``mask == None``: a tensor compared with ``None`` answers a Python bool without
    reading data (Uformer's ``if mask != None:``; no break, measured on torch 2.13), like ``is not None``."""
    operands = [node.left, *(right for _, right in node.ops)]
    return any(op in {"==", "!="} for op, _ in node.ops) and any(
        isinstance(operand, nodes.Const) and operand.value is None for operand in operands
    )


def join(kinds: Iterable[Kind | None]) -> Kind | None:
    """Least upper bound; ``None`` is bottom (no information, e.g. a cycle)."""
    result: Kind | None = None
    for kind in kinds:
        if kind is None:
            continue
        if result is None:
            result = kind
        elif result is not kind:
            return Kind.UNKNOWN
    return result


class ValueOracle:
    """Classify expressions of one (astroid) module."""

    def __init__(
        self,
        module: nodes.Module,
        imports: ImportTable,
        scope: ScopeFacts,
        assume_tensor_parameters: bool = True,
        facts: TorchFacts | None = None,
    ) -> None:
        self.module = module
        self.imports = imports
        self.scope = scope
        self.assume_tensor_parameters = assume_tensor_parameters
        self.facts = facts or load_facts()
        self._memo: dict[nodes.NodeNG, Kind | None] = {}
        self._in_progress: set[nodes.NodeNG] = set()
        self._cycles_seen = 0
        self._call_sites: dict[str, list[nodes.Call]] | None = None
        self._definitions: dict[str, int] = {}  # how many functions of the module have each name
        self._calls_by_position: dict[tuple[int, int], nodes.Call] | None = None
        self._argument_memo: dict[tuple[nodes.NodeNG, str], frozenset[Kind]] = {}
        # Tensors only on some paths (a Python value on others), and what was worked out from them: see ``partial``
        self._partial: set[nodes.NodeNG] = set()
        self._partial_arguments: set[tuple[nodes.NodeNG, str]] = set()
        self._partial_seen = 0
        self._open_lists: set[tuple[nodes.NodeNG, str]] = set()  # lists whose appended items are being classified
        self._uses: dict[nodes.NodeNG, dict[str, list[nodes.Name]]] = {}
        self._body_bindings: dict[nodes.NodeNG, list[nodes.AssignName]] = {}
        self._tensor_use_memo: dict[tuple[nodes.NodeNG, str, int, int], bool] = {}
        self._handoffs = 0  # functions deep in :meth:`_passed_to_tensor_parameter`
        self._return_values: dict[nodes.FunctionDef, list[nodes.NodeNG | None]] = {}
        self._local_method_names: frozenset[str] | None = None
        self._derived: dict[str, dict[Hashable, Any]] = {}
        self._lineages: dict[nodes.ClassDef, list[nodes.ClassDef]] = {}
        self._class_positions: dict[tuple[int, int], nodes.ClassDef] | None = None

    # -- public -------------------------------------------------------------------

    def kind(self, node: nodes.NodeNG) -> Kind:
        """The kind of *node*, with a Python stack of bounded depth whatever the code.

        A name rebound 2,000 times in a row (``x = x + 1`` ...), or a sum of
        2,000 terms, would need a recursion per step. When classifications
        nest too deep, the innermost one is set aside, classified on its own
        (and memoised), and the outer question asked again: the same answers,
        in linear time and constant stack.
        """
        pending = [node]
        for _ in range(_MAX_DETOURS):
            try:
                result = self._kind(pending[-1])
            except _TooDeep as deep:
                pending.append(deep.node)
                continue
            except RecursionError:  # astroid's own lookups can still recurse on absurd code: stay quiet
                return Kind.UNKNOWN
            pending.pop()
            if not pending:
                return result or Kind.UNKNOWN
        return Kind.UNKNOWN

    def is_tensor(self, node: nodes.NodeNG) -> bool:
        return self.kind(node) is Kind.TENSOR

    def partial(self, node: nodes.NodeNG) -> bool:
        """*node* is a tensor only on some paths, by the evidence ``kind`` used: on the others it may be a
        Python value (a literal before a loop's first turn, an early ``return False``, an untyped parameter).

        A rewrite into tensor operations (``torch.where(cond, ...)``) would fail on those paths in eager
        code, so fixes built on such a node are only shown, never applied.
        """
        return self.kind(node) is Kind.TENSOR and node in self._partial

    def memo(self, topic: str) -> dict[Hashable, Any]:
        """A memo, per *topic*, for facts other analyses derive from this oracle's answers (dtype facts
        followed across functions, NumPy origins), kept as long as the oracle: one file."""
        return self._derived.setdefault(topic, {})

    def array_method(self, func: nodes.NodeNG) -> bool:
        """*func* is ``r.<name>`` of a method only arrays have (:data:`ARRAY_ONLY_METHODS`), on an ``r``
        that may be one: not a Python value, not ``self``, and no class of this module defines a method
        of that name (then ``r`` may be one of its instances: duck typing, and the name proves nothing).
        """
        if not isinstance(func, nodes.Attribute) or func.attrname not in ARRAY_ONLY_METHODS:
            return False
        receiver = func.expr
        if isinstance(receiver, nodes.Name) and receiver.name in {"self", "cls"}:
            return False
        if func.attrname in self._method_names():
            return False
        return self.kind(receiver) is not Kind.STATIC

    def _method_names(self) -> frozenset[str]:
        """Names of the methods the classes of this module define, found once."""
        if self._local_method_names is None:
            self._local_method_names = frozenset(
                name
                for klass in descendants(self.module, nodes.ClassDef)
                for name, bound in klass.locals.items()
                if any(isinstance(b, nodes.FunctionDef) for b in bound)
            )
        return self._local_method_names

    def qualified_name(self, node: nodes.NodeNG) -> str | None:
        """``torch.where`` for ``T.where`` / ``where`` imported from torch."""
        name = dotted(node)
        return None if name is None else self.imports.resolve(name)

    def fixed_value(self, test: nodes.NodeNG) -> bool | None:
        """The value *test* has whenever compiled code evaluates it: folded by Dynamo (:meth:`compiled_constant`),
        or settled alike by every call of its function (:func:`~graphmend_lint.analysis.none_guards.settled_test`)."""
        folded = self.compiled_constant(test)
        return folded if folded is not None else settled_test(self, test)

    def compiled_constant(self, node: nodes.NodeNG, depth: int = 0) -> bool | None:
        """The value Dynamo folds *node* to (``is_compiling()`` is True, ``torch.jit.is_scripting()`` /
        ``is_tracing()`` False), also through a name bound only to such values, else None."""
        if depth > _EVIDENCE_DEPTH:
            return None
        if isinstance(node, nodes.UnaryOp) and node.op == "not":
            inner = self.compiled_constant(node.operand, depth + 1)
            return None if inner is None else not inner
        if isinstance(node, nodes.BoolOp):
            folded = [self.compiled_constant(value, depth + 1) for value in node.values]
            decisive = node.op == "or"  # ``or`` is decided by a True operand, ``and`` by a False one
            if decisive in folded:
                return decisive
            return None if None in folded else not decisive
        if isinstance(node, nodes.Name):
            # ``is_compiling = torch.compiler.is_compiling()``, then ``if not is_compiling and ...`` (physical-ai-studio)
            folded_names = {self.compiled_constant(value, depth + 1) for value in bound_values(node) or ()}
            return folded_names.pop() if len(folded_names) == 1 else None
        if not isinstance(node, nodes.Call) or node.args or node.keywords:
            return None
        name = self.qualified_name(node.func)
        if name is None:
            return None
        if name.rpartition(".")[2] in COMPILING_PREDICATES:
            return True
        return False if name in SCRIPTING_PREDICATES else None

    # -- dispatch -----------------------------------------------------------------

    def _kind(self, node: nodes.NodeNG) -> Kind | None:
        if node in self._memo:
            if node in self._partial:
                self._partial_seen += 1
            return self._memo[node]
        if node in self._in_progress:
            self._cycles_seen += 1
            return None  # bottom: ``x = x * 2`` says nothing new about ``x``
        if len(self._in_progress) >= _MAX_NESTING:
            raise _TooDeep(node)
        cycles_before = self._cycles_seen
        partial_before = self._partial_seen
        self._in_progress.add(node)
        try:
            result = self._classify(node)
        finally:
            self._in_progress.discard(node)
        if self._partial_seen != partial_before and result is Kind.TENSOR:
            self._partial.add(node)  # leaned on a tensor of some paths only
        if self._cycles_seen == cycles_before or not self._in_progress:
            self._memo[node] = result  # only results that did not lean on an open cycle are final
        return result

    def _classify(self, node: nodes.NodeNG) -> Kind | None:
        if isinstance(node, (nodes.Const, nodes.JoinedStr, nodes.Lambda)):
            return Kind.STATIC
        if isinstance(node, (nodes.List, nodes.Tuple, nodes.Set, nodes.Dict)):
            return Kind.STATIC  # a container's truthiness and length are static
        if isinstance(node, nodes.Name):
            return self._name(node)
        if isinstance(node, nodes.Attribute):
            return self._attribute(node)
        if isinstance(node, nodes.Call):
            return self._call(node)
        if isinstance(node, nodes.Subscript):
            return self._subscript(node)
        if isinstance(node, nodes.BinOp):
            if node.op == "%" and is_text(node.left):
                return Kind.STATIC  # ``"loss: %s" % t`` formats on the host: a string, not a tensor
            return self._operands(node.left, node.right)
        if isinstance(node, nodes.UnaryOp):
            return self._kind(node.operand)
        if isinstance(node, nodes.BoolOp):
            return self._operands(*live_operands(self, node))
        if isinstance(node, nodes.Compare):
            if any(op in _IDENTITY_OPS for op, _ in node.ops) or _compares_with_none(node):
                return Kind.STATIC
            return self._operands(node.left, *(right for _, right in node.ops))
        if isinstance(node, nodes.IfExp):
            folded = self.compiled_constant(node.test)
            if folded is not None:  # ``torch.min(...) if torch.jit.is_tracing() else min(...)``: one arm runs compiled
                return self._kind(node.body if folded else node.orelse)
            arm = live_arm(self, node)  # ``size if size is not None else int(index.max())``, every call passing a size
            if arm is not None:
                return self._kind(arm)
            return join([self._kind(node.body), self._kind(node.orelse)])
        if isinstance(node, nodes.NamedExpr):
            return self._kind(node.value)
        return Kind.UNKNOWN

    def _operands(self, *operands: nodes.NodeNG) -> Kind | None:
        partial_before = self._partial_seen
        kinds = [self._kind(operand) for operand in operands]
        if Kind.TENSOR in kinds:
            if any(kind is Kind.TENSOR and operand not in self._partial for operand, kind in zip(operands, kinds)):
                self._partial_seen = partial_before  # ``x.sum() > prev``: a tensor on every path whatever ``prev`` is
            return Kind.TENSOR
        if None in kinds:
            return None  # depends on a value still being worked out
        return join(kinds)

    # -- names --------------------------------------------------------------------

    def _name(self, node: nodes.Name) -> Kind | None:
        try:
            assignments = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code; stay quiet
            return Kind.UNKNOWN
        if not assignments:
            return Kind.STATIC if node.name in {"True", "False", "None"} else Kind.UNKNOWN
        if self._narrowed_to_tensor(node, assignments):
            return Kind.TENSOR
        if self._narrowed_to_python(node, assignments):
            return Kind.STATIC
        if self._narrowed_from_tensor(node, assignments):
            return Kind.UNKNOWN
        live = [a for a in assignments[:_MAX_LOOKUPS] if not in_dead_branch(self, a)]
        kinds = [(a, self._binding(a)) for a in live or assignments[:_MAX_LOOKUPS]]
        joined = join(kind for _, kind in kinds)
        if joined is not Kind.TENSOR and self._tensor_on_some_path(node, kinds):
            self._partial_seen += 1
            return Kind.TENSOR
        return joined

    def _narrowed_to_tensor(self, use: nodes.Name, assignments: list[nodes.NodeNG]) -> bool:
        """*use* sits in the body of ``if isinstance(name, torch.Tensor)`` (alone or in an ``and``), unrebound there,
        and the branch can run: some binding reaching it may hold a tensor.

        transformers' ``torch_compilable_check(cond, msg)`` calls
        ``torch._check_tensor_all(cond)`` under ``if isinstance(cond,
        torch.Tensor):``: whatever its callers pass, the name is a tensor in
        that branch, a fact the call sites need not give. When every binding
        is a Python value (diffusers' ``time_factor = 1.0 + 1.0 * (t > 1)``
        before ``if isinstance(time_factor, torch.Tensor): time_factor.item()``,
        torchaudio's ``mask_value=0.0`` default that no caller replaces), the
        branch is dead code and Dynamo skips it (measured: no break).
        """
        child, parent = use, use.parent
        while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            in_body = (isinstance(parent, nodes.If) and child in parent.body) or (
                isinstance(parent, nodes.IfExp) and child is parent.body
            )
            if in_body and self._tests_tensor_instance(parent.test, use.name):
                if any(parent.parent_of(binding) for binding in assignments):
                    return False
                return not all(self._holds_python_value(binding) for binding in assignments[:_MAX_LOOKUPS])
            child, parent = parent, parent.parent
        return False

    def _narrowed_to_python(self, use: nodes.Name, assignments: list[nodes.NodeNG]) -> bool:
        """*use* sits in the body of ``if isinstance(name, int)`` (``float``, ``bool``, ``str``, ``list``,
        ``tuple``, ``dict`` or a tuple of them; alone or in an ``and``), unrebound there: a Python value.

        diffusers' ``get_1d_rotary_pos_embed`` takes an int or a tensor ``pos`` and runs
        ``pos = torch.arange(pos)`` only ``if isinstance(pos, int)``; callers that pass a tensor never
        reach it (measured: no break), whatever else says ``pos`` is a tensor.
        """
        child, parent = use, use.parent
        while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            in_body = (isinstance(parent, nodes.If) and child in parent.body) or (
                isinstance(parent, nodes.IfExp) and child is parent.body
            )
            if in_body and self._tests_python_instance(parent.test, use.name):
                return not any(parent.parent_of(binding) for binding in assignments)
            child, parent = parent, parent.parent
        return False

    def _tests_python_instance(self, test: nodes.NodeNG, name: str) -> bool:
        """*test* is ``isinstance(name, <Python type or tuple of them>)``, or an ``and`` with that operand."""
        return _tests_isinstance(
            test, name, lambda kinds: bool(kinds) and all(self.qualified_name(kind) in PYTHON_TYPES for kind in kinds)
        )

    def _holds_python_value(self, binding: nodes.NodeNG) -> bool:
        """*binding* gives its name a Python value: a static one, or a parameter's Python default no call replaces
        with a tensor (the default of a module's ``forward``, whose callers are not visible, counts)."""
        if isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Arguments):
            default = self._default_of(binding, binding.parent)
            if _python_literal(default):
                return Kind.TENSOR not in self._argument_kinds(binding.parent.parent, binding.name)
        return self._binding(binding) is Kind.STATIC

    def _tests_tensor_instance(self, test: nodes.NodeNG, name: str) -> bool:
        """*test* is ``isinstance(name, torch.Tensor)`` or ``torch.is_tensor(name)``, or an ``and`` with one."""
        if isinstance(test, nodes.BoolOp) and test.op == "and":
            return any(self._tests_tensor_instance(value, name) for value in test.values)
        return self._is_tensor_test(test, name)

    def _is_tensor_test(self, test: nodes.NodeNG, name: str) -> bool:
        """*test* is exactly ``isinstance(name, torch.Tensor)`` or ``torch.is_tensor(name)``."""
        if not (isinstance(test, nodes.Call) and test.args and isinstance(test.args[0], nodes.Name)):
            return False
        if test.args[0].name != name or test.keywords:
            return False
        callee = self.qualified_name(test.func)
        if callee == "torch.is_tensor":
            return len(test.args) == 1
        return (
            callee == "isinstance" and len(test.args) == 2 and self.qualified_name(test.args[1]) == "torch.Tensor"
        )

    def _narrowed_from_tensor(self, use: nodes.Name, assignments: list[nodes.NodeNG]) -> bool:
        """*use* runs only when its name is not a tensor, unrebound in between: pytorch-metric-learning's
        ``(not torch.is_tensor(losses)) and (losses == 0)``, the body of ``if not isinstance(x, torch.Tensor):``,
        the ``else`` of ``if torch.is_tensor(x):``.

        A comparison there is a Python one whatever else says the name may be
        a tensor; the name stays unknown (a NumPy array is no tensor either).
        """
        child, parent = use, use.parent
        while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if self._excludes_tensor(parent, child, use.name):
                return not any(parent.parent_of(binding) for binding in assignments)
            child, parent = parent, parent.parent
        return False

    def _excludes_tensor(self, parent: nodes.NodeNG, child: nodes.NodeNG, name: str) -> bool:
        """Reaching *child* inside *parent* means *name* failed a tensor test."""
        if isinstance(parent, nodes.BoolOp):
            earlier = parent.values[: parent.values.index(child)] if child in parent.values else []
            if parent.op == "and":
                return any(self._negated_tensor_test(value, name) for value in earlier)
            return any(self._is_tensor_test(value, name) for value in earlier)
        if isinstance(parent, (nodes.If, nodes.IfExp)):
            in_body = child in parent.body if isinstance(parent, nodes.If) else child is parent.body
            in_else = child in parent.orelse if isinstance(parent, nodes.If) else child is parent.orelse
            test = parent.test
            if in_body:
                tests = test.values if isinstance(test, nodes.BoolOp) and test.op == "and" else [test]
                return any(self._negated_tensor_test(value, name) for value in tests)
            if in_else:
                tests = test.values if isinstance(test, nodes.BoolOp) and test.op == "or" else [test]
                return any(self._is_tensor_test(value, name) for value in tests)
        return False

    def _negated_tensor_test(self, test: nodes.NodeNG, name: str) -> bool:
        return isinstance(test, nodes.UnaryOp) and test.op == "not" and self._is_tensor_test(test.operand, name)

    def _tensor_on_some_path(self, use: nodes.Name, kinds: list[tuple[nodes.NodeNG, Kind | None]]) -> bool:
        """*use* is a tensor on some paths, and no other binding says it holds a Python value there.

        ``prev_t = self.timesteps[i] if ... else timestep`` (diffusers' LCM
        step): a tensor, or a parameter nothing says more about. A parameter
        some call passes a Python value for, an annotated one, or an
        assignment of anything else (``x = x.tolist()``) is evidence against,
        and the name stays unknown. A literal (``done = False``) gives way
        only to a tensor assigned on every turn of a loop around the use
        (astroid does not see that one when it comes after the use): from
        the second turn on the name holds the tensor.
        """
        literals = [binding for binding, kind in kinds if kind is Kind.STATIC and _literal_binding(binding)]
        tensors = [binding for binding, kind in kinds if kind is Kind.TENSOR]
        if literals:
            tensors = [*tensors, *(b for b in self._carried_bindings(use) if self._binding(b) is Kind.TENSOR)]
            if not self._loop_carried(use, tensors, literals):
                return False
        if not tensors:
            return False
        if self._filled_when_none(use, tensors, kinds):
            return True
        for binding, kind in kinds:
            if kind is Kind.TENSOR or kind is None or binding in literals:
                continue
            if kind is not Kind.UNKNOWN or not self._unevidenced(binding):
                return False
        return True

    def _filled_when_none(self, use: nodes.Name, tensors: list[nodes.NodeNG], kinds: list[tuple[nodes.NodeNG, Kind | None]]) -> bool:
        """``if max_length is None: max_length = length.max()`` and some call of the function passes ``None``
        (or leaves the ``None`` default): on that call the name is the tensor (VITS' ``sequence_mask(y_lengths,
        None)``), whatever other calls pass. The other bindings must be the parameter itself."""
        parameters = [b for b, _ in kinds if b not in tensors]
        if len(parameters) != 1 or not isinstance(parameters[0].parent, nodes.Arguments):
            return False
        parameter = parameters[0]
        if not all(_assigned_when_none(binding, use.name) for binding in tensors):
            return False
        function = parameter.parent.parent
        passed = self.call_site_arguments(function, use.name)
        if any(isinstance(value, nodes.Const) and value.value is None for value in passed):
            return True
        default = self._default_of(parameter, parameter.parent)
        defaults_to_none = isinstance(default, nodes.Const) and default.value is None
        return defaults_to_none and len(passed) < len(self.calls_of(function))

    @staticmethod
    def _carried_bindings(use: nodes.Name) -> list[nodes.AssignName]:
        """Bindings of *use*'s name on every turn of a loop around it, after it: the next turn sees them."""
        found: list[nodes.AssignName] = []
        child: nodes.NodeNG = use
        loop = use.parent
        while loop is not None and not isinstance(loop, (nodes.FunctionDef, nodes.Lambda, nodes.Module, nodes.ClassDef)):
            # a ``while`` test runs again each turn, a ``for`` iterable once
            if isinstance(loop, (nodes.For, nodes.While)) and (child in loop.body or child is getattr(loop, "test", None)):
                for statement in loop.body:
                    if isinstance(statement, nodes.Assign) and statement.fromlineno > use.lineno:
                        found += [t for t in statement.targets if isinstance(t, nodes.AssignName) and t.name == use.name]
            child, loop = loop, loop.parent
        return found[:_MAX_LOOKUPS]

    def _unevidenced(self, binding: nodes.NodeNG, depth: int = 0) -> bool:
        """*binding* gives its name a parameter's value that nothing types: no annotation, no Python
        value from any call site, no default but ``None`` (directly or through ``y = x``)."""
        if depth > _EVIDENCE_DEPTH or not isinstance(binding, nodes.AssignName):
            return False
        parent = binding.parent
        if isinstance(parent, nodes.Arguments):
            function = parent.parent
            if binding.name in {"self", "cls"} or self._annotation_of(binding, parent) is not None:
                return False
            default = self._default_of(binding, parent)
            if default is not None and not (isinstance(default, nodes.Const) and default.value is None):
                return False
            return Kind.STATIC not in self._argument_kinds(function, binding.name)
        if isinstance(parent, nodes.Assign) and isinstance(parent.value, nodes.Name):
            try:
                sources = reaching_bindings(parent.value)[:_MAX_LOOKUPS]
            except Exception:  # astroid lookups can fail on odd code; stay quiet
                return False
            return bool(sources) and all(self._unevidenced(source, depth + 1) for source in sources)
        return False

    @staticmethod
    def _loop_carried(use: nodes.Name, tensors: list[nodes.NodeNG], literals: list[nodes.NodeNG]) -> bool:
        """A tensor binding runs on every turn of a loop that holds *use*, and the *literals* lie before it.

        ``done = False`` then ``while not done: ... done = (x > 0).all()``:
        every test after the first sees the tensor.
        """
        for tensor in tensors:
            statement = tensor.statement()
            loop = statement.parent
            if not isinstance(loop, (nodes.For, nodes.While)) or statement not in loop.body:
                continue
            if not loop.parent_of(use) or any(loop.parent_of(literal) for literal in literals):
                continue
            return True
        return False

    def _binding(self, assignment: nodes.NodeNG) -> Kind | None:
        """The kind of the value a binding site gives its name."""
        if isinstance(assignment, (nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.ClassDef)):
            return Kind.STATIC
        if isinstance(assignment, nodes.AssignName):
            parent = assignment.parent
            if isinstance(parent, nodes.Arguments):
                return self._parameter(assignment, parent)
            if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
                kind = self._kind(parent.value)
                if kind is Kind.UNKNOWN and self._untyped_value_used_as_tensor(assignment, parent.value):
                    return Kind.TENSOR
                return kind
            if isinstance(parent, nodes.AugAssign):
                # ``y += t`` is a tensor when ``t`` is, or when ``y`` was one before; unknown when ``t`` is
                # (bayesian-cnn's ``kl = 0.0`` then ``kl += _kl`` from the model's output: its ``kl.item()``)
                added = self._kind(parent.value)
                if added is Kind.TENSOR:
                    return Kind.TENSOR
                try:
                    before = reaching_bindings(assignment)  # the bindings the target updates
                except Exception:
                    before = []
                earlier = [b for b in before if b is not assignment]
                kind = join(self._binding(b) for b in earlier[:_MAX_LOOKUPS]) if earlier else None
                return Kind.UNKNOWN if added is Kind.UNKNOWN and kind is not Kind.TENSOR else kind
            if isinstance(parent, (nodes.Tuple, nodes.List)):
                loop, path = _loop_target_path(assignment)
                if loop is not None:
                    return self._loop_element(loop.iter, path)
                return self._unpacked(assignment, parent)
            if isinstance(parent, (nodes.For, nodes.Comprehension)):
                return self._loop_element(parent.iter, ())
            if isinstance(parent, nodes.NamedExpr):
                return self._kind(parent.value)
        return Kind.UNKNOWN

    def _untyped_value_used_as_tensor(self, name: nodes.AssignName, value: nodes.NodeNG) -> bool:
        """A value of unknown kind that only an array or a Python value can be, in a traced function that
        uses the name as a tensor, is one, on the evidence an untyped parameter gets (:meth:`_used_as_tensor`):

        * a read from a mapping under a string key: ``depth_gt = inputs["depth_gt"]`` then
          ``torch.median(depth_gt)`` (monodepth2);
        * an elementwise comparison: ``special_image_mask = input_ids == self.config.image_token_id`` then
          ``special_image_mask.unsqueeze(-1)`` (transformers' ``get_placeholder_mask``; of Python values
          it would be a ``bool``, which has no tensor method).

        Every other binding of the name must compute from it (``depth_gt = depth_gt[mask]``) or be such a
        value too (the comparison in the other branch): evidence after one of those is evidence for it."""
        if not _untyped_source(value):
            return False
        function = name.frame()
        if not isinstance(function, nodes.FunctionDef):
            return False
        others = [binding for binding in function.locals.get(name.name, []) if binding is not name]
        if not all(_refines(binding) or _binds_untyped_source(binding) for binding in others):
            return False
        return self.assume_tensor_parameters and self._is_traced(function) and self._used_as_tensor(function, name.name, 0)

    def _unpacked(self, target: nodes.AssignName, container: nodes.Tuple | nodes.List) -> Kind | None:
        """The kind of a name an assignment unpacks, at any depth: ``(x1, y1), (x2, y2) = a.chunk(2), b.chunk(2)``
        (YOLOv5's ``bbox_iou``)."""
        steps = [(container, container.elts.index(target))]  # each enclosing target and the position in it
        while isinstance(steps[-1][0].parent, (nodes.Tuple, nodes.List)):
            outer = steps[-1][0].parent
            steps.append((outer, outer.elts.index(steps[-1][0])))
        statement = steps[-1][0].parent
        if not isinstance(statement, nodes.Assign):
            return Kind.UNKNOWN
        return self._unpacked_from(statement.value, steps[::-1])

    def _unpacked_from(self, value: nodes.NodeNG, steps: list[tuple[nodes.Tuple | nodes.List, int]]) -> Kind | None:
        """The kind of the part of *value* that *steps* (target containers and positions, outermost first) pick."""
        (container, index), rest = steps[0], steps[1:]
        if isinstance(value, (nodes.Tuple, nodes.List)) and len(value.elts) == len(container.elts):
            return self._unpacked_from(value.elts[index], rest) if rest else self._kind(value.elts[index])
        returned = self._returns_of_submodules(value)
        if returned:
            return join(self._unpacked_from(item, steps) for item in returned)
        if not rest:
            element = self._element(value, index, len(container.elts))
            if element is not None:
                return element  # ``n, x, mask = self._pad(...)``: what the helper returns at that position
        else:
            elements = self.element_values(value, index)
            if elements is not None:
                return join(self._unpacked_from(element, rest) for element in elements)
        kind = self._kind(value)
        if kind is Kind.TENSOR:
            return Kind.TENSOR  # unpacking a tensor, or a call returning tensors
        if kind is Kind.STATIC:
            return Kind.STATIC  # ``b, c, h, w = x.shape``: the items of a Python value Dynamo specialises on
        return Kind.UNKNOWN

    def loop_iterable(self, binding: nodes.NodeNG) -> nodes.NodeNG | None:
        """The iterable whose items a loop target *binding* takes: ``xs`` for ``for x in xs``, also through
        ``enumerate(xs)``'s second and ``zip(xs, ys)``'s positions; ``None`` for anything else."""
        if not isinstance(binding, nodes.AssignName):
            return None
        loop, path = _loop_target_path(binding)
        if loop is None:
            return None
        iterable = loop.iter
        for index in path:
            iterable = self._item_source(iterable)
            callee = self.qualified_name(iterable.func) if isinstance(iterable, nodes.Call) else None
            if callee == "enumerate" and index == 1 and iterable.args:
                iterable = iterable.args[0]
            elif callee == "zip" and index < len(iterable.args):
                iterable = iterable.args[index]
            else:
                return None
        return iterable

    def _loop_element(self, iterable: nodes.NodeNG, path: tuple[int, ...]) -> Kind | None:
        """The kind of the part at *path* of each item of *iterable* (``for i, (a, b) in enumerate(zip(xs, ys))``)."""
        iterable = self._item_source(iterable)
        if not path:
            return self._loop_variable(iterable)
        index, rest = path[0], path[1:]
        callee = self.qualified_name(iterable.func) if isinstance(iterable, nodes.Call) else None
        if callee == "enumerate":
            if index == 0:
                return Kind.STATIC if not rest else Kind.UNKNOWN
            return self._loop_element(iterable.args[0], rest) if iterable.args else Kind.UNKNOWN
        if callee == "zip":
            # ``for a, b in zip(xs, ys)``: each name walks its own iterable
            return self._loop_element(iterable.args[index], rest) if index < len(iterable.args) else Kind.UNKNOWN
        return Kind.TENSOR if self._loop_variable(iterable) is Kind.TENSOR else Kind.UNKNOWN  # rows of a tensor

    def _item_source(self, iterable: nodes.NodeNG) -> nodes.NodeNG:
        """What *iterable* takes its items from unchanged: ``zip(ts, ts[1:])`` behind ``list(zip(ts,
        ts[1:]))[::-1]`` (U-ViT's Euler-Maruyama sampler walks its timestep pairs backwards that way), through
        ``list``/``tuple``/``sorted``/``reversed`` copies and slices, so that each unpacked name still walks
        its own iterable."""
        for _ in range(_EVIDENCE_DEPTH):
            if isinstance(iterable, nodes.Subscript) and isinstance(iterable.slice, nodes.Slice):
                iterable = iterable.value
            elif (
                isinstance(iterable, nodes.Call)
                and len(iterable.args) == 1
                and self.qualified_name(iterable.func) in ITEM_COPIES
                and not any(keyword.arg == "key" for keyword in iterable.keywords or ())
            ):
                iterable = iterable.args[0]
            elif isinstance(iterable, nodes.Call) and iterable.args and self._returns_first_argument(iterable.func):
                iterable = iterable.args[0]  # ``tqdm(pairs, disable=True)`` with a pass-through ``tqdm`` of this file
            else:
                break
        return iterable

    def _returns_first_argument(self, func: nodes.NodeNG) -> bool:
        """*func* names a function of this file every ``return`` of which gives back its first parameter:
        a progress-bar stand-in or a switch that may skip wrapping (``def track(it, disable): return it``)."""
        function = self._project_function(func) if isinstance(func, nodes.Name) else None
        if function is None or not function.args.args:
            return False
        first = function.args.args[0].name
        returns = self._returned(function)
        return bool(returns) and all(isinstance(value, nodes.Name) and value.name == first for value in returns)

    def _loop_variable(self, iterable: nodes.NodeNG) -> Kind | None:
        if isinstance(iterable, nodes.Call) and self.qualified_name(iterable.func) == "range":
            return Kind.STATIC
        kind = self._kind(iterable)
        if kind is Kind.TENSOR or self._holds_tensors(iterable):
            return Kind.TENSOR  # rows of a tensor, or the items of a list of tensors
        return Kind.UNKNOWN

    def _holds_tensors(self, iterable: nodes.NodeNG, depth: int = 0) -> bool:
        """*iterable* is a list, tuple, set or comprehension built here whose every item is a tensor, or a copy
        of a tensor's items (``sorted(t)``, ``list(t)``) or of such a container.

        ``pad_nums = [max_len - v for v in nums]`` then ``for p in pad_nums:``
        (ViLT), ``indices = [i for i in indices if i != blank]`` (a CTC
        decoder): a name is followed to its assignments, all of which must
        hold tensors.
        """
        if depth > _EVIDENCE_DEPTH:
            return False
        if isinstance(iterable, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
            return self._kind(iterable.elt) is Kind.TENSOR
        if isinstance(iterable, nodes.Call) and self.qualified_name(iterable.func) in ITEM_COPIES and iterable.args:
            # ``for length in sorted(lengths, reverse=True)`` (torchaudio's HuBERT mask spans): iterating a tensor
            # yields tensors, and ``sorted``/``list``/``tuple``/``reversed`` keep them
            source = iterable.args[0]
            return self._kind(source) is Kind.TENSOR or self._holds_tensors(source, depth + 1)
        if isinstance(iterable, (nodes.List, nodes.Tuple, nodes.Set)):
            return bool(iterable.elts) and all(self._kind(item) is Kind.TENSOR for item in iterable.elts)
        if not isinstance(iterable, nodes.Name):
            return False
        try:
            bindings = reaching_bindings(iterable)[:_MAX_LOOKUPS]
        except Exception:  # astroid lookups can fail on odd code; stay quiet
            return False
        return bool(bindings) and all(
            isinstance(binding, nodes.AssignName)
            and isinstance(binding.parent, nodes.Assign)
            and self._holds_tensors(binding.parent.value, depth + 1)
            for binding in bindings
        )

    def _parameter(self, name: nodes.AssignName, arguments: nodes.Arguments) -> Kind | None:
        function = arguments.parent
        annotation = self._annotation_of(name, arguments)
        if annotation is not None:
            declared = self._annotation_kind(annotation)
            scalar = self.annotated_types(annotation) in SCALAR_ANNOTATIONS
            if scalar and self._argument_kinds(function, name.name) == {Kind.TENSOR}:
                # ``this_peer_finished: bool`` that every call passes a tensor (transformers' generate loop):
                # Dynamo sees the tensor, whatever the annotation says
                return Kind.TENSOR
            if declared is Kind.TENSOR and self._every_call_passes_a_python_value(function, name.name):
                # ``input_lengths: torch.LongTensor`` that every call passes a shape (Moonshine's
                # ``_get_feat_extract_output_lengths(attention_mask.shape[-1])``): Dynamo sees the Python value
                return Kind.STATIC
            if declared is Kind.TENSOR and _python_literal(self._default_of(name, arguments)):
                # ``output_attentions: torch.Tensor | None = False`` (FastSpeech2-Conformer): the default is a
                # Python flag, and only calls that pass tensors make it one (measured: no break on the default)
                return Kind.TENSOR if self._argument_kinds(function, name.name) == {Kind.TENSOR} else Kind.UNKNOWN
            return declared
        if name.name in {"self", "cls"}:
            return Kind.UNKNOWN
        if name.name == "config" or name.name.endswith("_config"):
            return Kind.STATIC  # a model config, like ``self.config``: Python values Dynamo specialises on
        default = self._default_of(name, arguments)
        if default is not None and not (isinstance(default, nodes.Const) and default.value is None):
            return self._kind(default)
        from_calls = self._argument_kinds(function, name.name)
        if from_calls == {Kind.TENSOR} or from_calls == {Kind.STATIC}:
            return next(iter(from_calls))
        if Kind.STATIC in from_calls:
            if Kind.TENSOR in from_calls and self._tensor_passed_by_traced_call(function, name.name):
                return Kind.TENSOR
            return Kind.UNKNOWN  # some call passes a Python value
        # No call site, or none that says more than "unknown": the body's own use may tell. Call sites
        # that say "unknown" leave only direct uses as evidence (``t.sum()``); evidence passed on through
        # assignments (``half = n // 2`` ... ``emb = emb.exp()``) is too weak against them (measured on
        # transformers: fsmt's ``embedding_dim``, vitdet's ``q_size``).
        reach = 0 if from_calls else _EVIDENCE_DEPTH
        if self._duck_instances(name, 0):
            return Kind.UNKNOWN  # an instance of a class of this module, by the attributes read on it
        if (
            self.assume_tensor_parameters
            and self._is_traced(function)
            and (self._used_as_tensor(function, name.name, reach) or self._rebound_to_tensor(function, name))
        ):
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _every_call_passes_a_python_value(self, function: nodes.NodeNG, parameter: str) -> bool:
        """Every call passes *parameter* a Python value other than ``None`` (which an optional tensor takes).

        An item read from a container (``cu_seqlens_mapping[layer_type]`` of a dict of tensors, muse_glimmer)
        is static only as far as this module can tell, which is not enough to overrule an annotation; a
        size read from a shape (``mask.shape[-1]``) is."""
        passed = self.call_site_arguments(function, parameter)
        return (
            len(passed) == len(self.calls_of(function))
            and not any(
                isinstance(argument, nodes.Const) and argument.value is None
                or isinstance(argument, nodes.Subscript) and not is_sizes(argument.value)
                for argument in passed
            )
            and self._argument_kinds(function, parameter) == {Kind.STATIC}
        )

    def _tensor_passed_by_traced_call(self, function: nodes.NodeNG, parameter: str) -> bool:
        """A call in traced code passes *parameter* a tensor, though another call passes a Python value.

        Dynamo inlines each call on its own, so the tensor call breaks in the
        body wherever the value is branched on or used as a size: torchdrug's
        ``multi_slice_mask(starts, ends, length)`` gets ``num_sample *
        size.max()`` from one caller and ``num_sample * max_size`` of a shape
        from another, and logs GB0033 at ``torch.zeros(size)`` for the first
        (measured, torch 2.13). Only calls that surely reach *function* count
        (:func:`_calls_by_own_name`): a same-named attribute call elsewhere
        (``self.moving_avg(x)`` beside ``moving_avg(kernel_size)``) may be
        anything.
        """
        if not isinstance(function, nodes.FunctionDef):
            return False
        for call in self.calls_of(function):
            if not _calls_by_own_name(call, function):
                continue
            for argument in self.passed_for(call, function, parameter):
                if self._kind(argument) is Kind.TENSOR and self._is_traced(argument.frame()):
                    return True
        return False

    def _rebound_to_tensor(self, function: nodes.FunctionDef, parameter: nodes.AssignName) -> bool:
        """The function itself assigns the parameter's name tensors, and nothing else but ``None``.

        ``if cache_position is None: ... else: cache_position = torch.arange(...)``
        (Mamba), ``if max_length is None: max_length = length.max()``: the name
        holds one type, a tensor. A value computed from the parameter itself
        (``lengths = torch.tensor(lengths)``, ``x = x.tolist()``) converts it
        and says nothing about what was passed.
        """
        bindings = [b for b in function.locals.get(parameter.name, [])[:_MAX_LOOKUPS] if b is not parameter]
        if not all(isinstance(b, nodes.AssignName) and isinstance(b.parent, nodes.Assign) for b in bindings):
            return False  # ``for x in ...``, ``x += 1``, ``a, x = ...``: not one value to judge
        values = [b.parent.value for b in bindings if not (isinstance(b.parent.value, nodes.Const) and b.parent.value.value is None)]
        return bool(values) and all(
            not any(use.name == parameter.name for use in descendants(value, nodes.Name)) and self._kind(value) is Kind.TENSOR
            for value in values
        )

    def _used_as_tensor(self, function: nodes.NodeNG, name: str, reach: int, depth: int = 0) -> bool:
        """Evidence in the body that an unannotated parameter holds a tensor.

        ``x.sum()``, ``x @ w``, ``torch.relu(x)`` or ``self.proj(x)`` say tensor,
        also through plain assignments (``y = x * 2`` then ``y.sum()``).
        ``if causal:`` or ``mode == "mean"`` say nothing, so such parameters
        stay UNKNOWN and branches on them are not flagged.
        """
        if depth > reach:
            return False
        key = (function, name, reach, depth)
        if key not in self._tensor_use_memo:
            self._tensor_use_memo[key] = False  # a cycle (``y = x * 2``, ``x = y + 1``) adds no evidence
            self._tensor_use_memo[key] = self._tensor_evidence(function, name, reach, depth)
        return self._tensor_use_memo[key]

    def _tensor_evidence(self, function: nodes.NodeNG, name: str, reach: int, depth: int) -> bool:
        if self._reads_attribute_tensors_lack(function, name):
            return False
        for use in self._uses_of(function, name):
            parent = use.parent
            top = use
            while (isinstance(top.parent, (nodes.BinOp, nodes.Compare, nodes.UnaryOp)) or _is_sliced(top)) and not (
                _compares_with_text(top)
            ):
                top = top.parent  # ((pred - target) ** 2).mean(): the whole arithmetic is used as a tensor
            if _compares_with_text(top):
                continue  # ``use_flash = attn_algorithm == "flash"``: a string setting, whatever takes the flag
            if isinstance(top.parent, (nodes.Attribute, nodes.Call)) and top is not use:
                use, parent = top, top.parent  # ``torch.sin(t * math.pi / 2)``: the arithmetic is the op's input
            if self._joined_as_tensors(use):
                return True
            if isinstance(parent, nodes.Attribute) and parent.expr is use:
                attribute = parent.attrname
                if attribute not in PLAIN_PYTHON_ATTRIBUTES and attribute not in MODULE_METHODS and (
                    self.facts.method_kind(attribute) or self.facts.attribute_kind(attribute)
                ):
                    return True
            elif isinstance(parent, nodes.BinOp) and parent.op == "@":
                return True
            elif isinstance(parent, nodes.Call) and parent.args and parent.args[0] is use:
                # the input of a torch op (``torch.relu(x)``), but not a size (``torch.zeros(n)``), not a
                # submodule call, which takes flags as often as tensors, and not a function known to return
                # no tensor: ``torch.is_tensor(t)`` asks because ``t`` may be a Python number (diffusers'
                # timesteps), ``torch.typename(o)`` takes anything
                callee = self.qualified_name(parent.func) or ""
                result = self.facts.function_kind(callee)
                if (
                    callee.startswith("torch.")
                    and callee.rsplit(".", 1)[-1] not in TENSOR_FACTORIES
                    and (result is None or self._result_kind(result) is Kind.TENSOR)
                ):
                    return True
            target = self._arithmetic_assignment_target(use)
            if target is not None and target != name and self._used_as_tensor(function, target, reach, depth + 1):
                return True
            if depth == 0 and self._passed_to_tensor_parameter(use):
                return True
        return False

    def _reads_attribute_tensors_lack(self, function: nodes.NodeNG, name: str) -> bool:
        """*function* reads a public attribute of *name*, never rebinding it, that neither a tensor nor a NumPy
        array has: the value is something else, whatever tensor-like methods it also has (minimind's
        ``generate`` calls ``streamer.put(ids)``, a tensor method too, and ``streamer.end()``, which no tensor
        has). Private names (``t._values()``) are left out: tensors have more of them than the facts list."""
        uses = self._uses_of(function, name)
        if not uses or any(binding.name == name for binding in self._bindings_in(function)):
            return False
        return any(
            isinstance(use.parent, nodes.Attribute)
            and use.parent.expr is use
            and not use.parent.attrname.startswith("_")
            and self.facts.method_kind(use.parent.attrname) is None
            and self.facts.attribute_kind(use.parent.attrname) is None
            and use.parent.attrname not in ARRAY_ATTRIBUTES
            for use in uses
        )

    def _bindings_in(self, function: nodes.NodeNG) -> list[nodes.AssignName]:
        """Names *function*'s body binds (not its parameters), from one walk per function."""
        found = self._body_bindings.get(function)
        if found is None:
            found = [n for n in descendants(function, nodes.AssignName) if not isinstance(n.parent, nodes.Arguments)]
            self._body_bindings[function] = found
        return found

    def _joined_as_tensors(self, use: nodes.NodeNG) -> bool:
        """*use* is an item of the tensor list ``torch.cat`` / ``torch.stack`` joins (``torch.cat([t, t])``)."""
        items = use.parent
        call = items.parent if isinstance(items, (nodes.List, nodes.Tuple)) else None
        return (
            isinstance(call, nodes.Call)
            and bool(call.args)
            and call.args[0] is items
            and self.qualified_name(call.func) in TENSOR_JOINS
        )

    def _passed_to_tensor_parameter(self, use: nodes.Name) -> bool:
        """*use* (or an item of it, ``sigmas[i + 1]``) is passed by position to a traced function of this
        module whose body uses that parameter as a tensor (directly, or passing it on the same way).

        k-diffusion's ``sample_heun(model, x, sigmas)`` only indexes ``sigmas``; what says its items are
        tensors is ``to_d(x, sigmas[i + 1], denoised)``, whose ``sigma`` goes to ``append_dims(sigma,
        x.ndim)``, which reads ``x.ndim`` (``if s_tmin <= sigmas[i] <= s_tmax`` breaks, GB0170, measured).
        Calls of ``forward`` are left out: a module takes flags as often as tensors. At most
        ``_MAX_HANDOFFS`` functions deep. An item under a string key (``data['mask0']``) is a mapping's: its
        use says nothing of the mapping (LoFTR's ``data`` dict also holds the ints ``data['hw0_c']``).
        """
        argument: nodes.NodeNG = use
        if isinstance(use.parent, nodes.Subscript) and use.parent.value is use:
            key = use.parent.slice
            if isinstance(key, nodes.Const) and isinstance(key.value, str):
                return False
            argument = use.parent
        call = argument.parent
        if not isinstance(call, nodes.Call) or argument not in call.args or self._handoffs >= _MAX_HANDOFFS:
            return False
        position = call.args.index(argument)
        if any(isinstance(a, nodes.Starred) for a in call.args[: position + 1]):
            return False
        callee = self._project_function(call.func)
        if callee is None or callee.name in {"forward", "__call__"} or not self._is_traced(callee):
            return False
        parameters = list(callee.args.args or [])
        if parameters and parameters[0].name in {"self", "cls"} and isinstance(call.func, nodes.Attribute):
            parameters = parameters[1:]
        if position >= len(parameters) or self._annotation_of(parameters[position], callee.args) is not None:
            return False  # an annotated parameter says what it takes; its body is no evidence then
        self._handoffs += 1
        try:
            return self._used_as_tensor(callee, parameters[position].name, 0)
        finally:
            self._handoffs -= 1

    def _uses_of(self, function: nodes.NodeNG, name: str) -> list[nodes.Name]:
        """Reads of *name* in *function*, from an index built with one walk per function."""
        index = self._uses.get(function)
        if index is None:
            index = {}
            for use in descendants(function, nodes.Name):
                index.setdefault(use.name, []).append(use)
            self._uses[function] = index
        return index.get(name, [])

    @staticmethod
    def _arithmetic_assignment_target(use: nodes.Name) -> str | None:
        """``y`` when *use* sits in ``y = <arithmetic or comparison over use>`` (``m = x > 0``).

        Not when the target is an operand too: ``x = x * scale`` makes ``x`` a tensor because it was one,
        which says nothing about ``scale`` (a Python number in diffusers' and timm's forwards).
        """
        node: nodes.NodeNG = use
        while isinstance(node.parent, (nodes.BinOp, nodes.UnaryOp, nodes.Compare)) or _is_sliced(node):
            node = node.parent
        statement = node.parent
        if isinstance(statement, nodes.Assign) and statement.value is node and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, nodes.AssignName) and not any(
                operand.name == target.name for operand in descendants(node, nodes.Name)
            ):
                return target.name
        return None

    @staticmethod
    def _annotation_of(name: nodes.AssignName, arguments: nodes.Arguments) -> nodes.NodeNG | None:
        groups = [
            (arguments.posonlyargs, arguments.posonlyargs_annotations),
            (arguments.args or [], arguments.annotations),
            (arguments.kwonlyargs, arguments.kwonlyargs_annotations),
        ]
        for names, annotation_list in groups:
            for candidate, annotation in zip(names, annotation_list):
                if candidate is name:
                    return annotation
        return None

    @staticmethod
    def _default_of(name: nodes.AssignName, arguments: nodes.Arguments) -> nodes.NodeNG | None:
        positional = [*arguments.posonlyargs, *(arguments.args or [])]
        if name in positional:
            offset = len(positional) - len(arguments.defaults)
            index = positional.index(name)
            return arguments.defaults[index - offset] if index >= offset else None
        if name in arguments.kwonlyargs:
            return arguments.kw_defaults[arguments.kwonlyargs.index(name)]
        return None

    def annotated_types(self, annotation: nodes.NodeNG) -> frozenset[str]:
        """The qualified names of the types *annotation* allows, ``None`` left out (:mod:`.annotations`)."""
        return annotated_types(annotation, self.imports.resolve)

    def _annotation_kind(self, annotation: nodes.NodeNG) -> Kind:
        types = self.annotated_types(annotation)
        if types and types <= TENSOR_TYPES:
            return Kind.TENSOR
        if types and types <= STATIC_TYPES:
            return Kind.STATIC
        return Kind.UNKNOWN

    def _is_traced(self, function: nodes.NodeNG) -> bool:
        """Parameters of traced functions take tensors when the body uses them as tensors.

        A configurable guess (``assume-tensor-parameters``); call sites in the
        same module, when there are any, win over it.
        """
        if not isinstance(function, nodes.FunctionDef):
            return False
        return function.name == "forward" or self.scope.function_at(*def_position(function)) is not None

    def _argument_kinds(self, function: nodes.NodeNG, parameter: str) -> frozenset[Kind]:
        """The kinds call sites in this module pass for *parameter*, computed once.

        Arguments often depend on other functions' parameters, which depend on
        their call sites in turn; without a memo (and a cycle guard) that is
        exponential: stdlib ``argparse`` took minutes with ``--scope all``.
        """
        key = (function, parameter)
        if key in self._argument_memo:
            if key in self._partial_arguments:
                self._partial_seen += 1
            return self._argument_memo[key]
        self._argument_memo[key] = frozenset()  # bottom while in progress: a cycle adds nothing
        partial_before = self._partial_seen
        try:
            result = self._call_site_kinds(function, parameter)
        except _TooDeep:
            del self._argument_memo[key]  # set aside, not answered: ask again later
            raise
        self._argument_memo[key] = result
        if self._partial_seen != partial_before:
            self._partial_arguments.add(key)
        return result

    def _call_site_kinds(self, function: nodes.NodeNG, parameter: str) -> frozenset[Kind]:
        kinds = (self._kind(argument) for argument in self.call_site_arguments(function, parameter))
        return frozenset(kind for kind in kinds if kind is not None)

    def call_site_arguments(self, function: nodes.NodeNG, parameter: str) -> list[nodes.NodeNG]:
        """What the calls of *function* in this module pass for *parameter* (by position or keyword).

        Calls are found by name (``helper(...)``, ``self.helper(...)``), except those of a ``forward`` or
        ``__call__``, which run when an instance is called: ``self.block(h, mask)``, ``layer(h)`` over a
        ``ModuleList``, ``super().forward(h)``, as scope analysis resolved them in traced code; and those of
        an ``__init__``, which run when the class is called: ``Wrapper(loss, weights)``.
        """
        if not isinstance(function, (nodes.FunctionDef, nodes.Lambda)):
            return []
        return [argument for call in self.calls_of(function) for argument in self.passed_for(call, function, parameter)]

    @staticmethod
    def passed_for(call: nodes.Call, function: nodes.FunctionDef | nodes.Lambda, parameter: str) -> list[nodes.NodeNG]:
        """What *call* passes for *function*'s *parameter* (by position or keyword; none after a ``*args``)."""
        positional = [a.name for a in (function.args.args or [])]
        if positional and positional[0] in {"self", "cls"}:
            positional = positional[1:]
        arguments = [keyword.value for keyword in call.keywords or [] if keyword.arg == parameter]
        if parameter in positional:
            index = positional.index(parameter)
            # after a ``*args`` the positions no longer line up with the parameters
            leading = call.args[:index + 1]
            if index < len(call.args) and not any(isinstance(a, nodes.Starred) for a in leading):
                arguments.append(call.args[index])
        return arguments

    def _instance_calls(self, function: nodes.FunctionDef) -> list[nodes.Call]:
        """The traced calls scope analysis resolved to *function* (a ``forward`` or ``__call__``)."""
        by_position = self._call_index()[1]
        positions = self.scope.calls_of(*def_position(function))
        return [call for position in positions if (call := by_position.get(position)) is not None]

    def own_calls_of(self, function: nodes.FunctionDef) -> list[nodes.Call]:
        """The calls of :meth:`calls_of` that surely run *function*, not another callable spelled alike; a
        method's call on another object (maskrcnn's ``boxlist.clip_to_image(remove_empty=False)``) counts
        when no other function of this module has its name."""
        self._call_index()  # counts the module's functions by name
        by_unique_method = isinstance(function.parent, nodes.ClassDef) and self._definitions.get(function.name) == 1
        return [
            call for call in self.calls_of(function)
            if _calls_by_own_name(call, function) or by_unique_method and isinstance(call.func, nodes.Attribute)
        ]

    def calls_named(self, name: str) -> list[nodes.Call]:
        """Calls in this module whose callee is spelled *name* (``name(...)`` or ``obj.name(...)``)."""
        return self._sites(name)

    def calls_of(self, function: nodes.FunctionDef | nodes.Lambda) -> list[nodes.Call]:
        """The calls of *function* in this module, found as :meth:`call_site_arguments` says (at most
        ``_MAX_LOOKUPS``); a lambda's by the one name it is bound to."""
        if isinstance(function, nodes.Lambda):
            return self._lambda_calls(function)
        if function.name in {"forward", "__call__"}:
            calls = self._instance_calls(function)
        elif function.name == "__init__" and isinstance(klass := function.parent, nodes.ClassDef):
            calls = self._sites(klass.name)  # ``Wrapper(loss, weights)`` runs ``Wrapper.__init__``
        else:
            calls = self._sites(function.name)
        return calls[:_MAX_LOOKUPS]

    def _sites(self, function_name: str) -> list[nodes.Call]:
        return self._call_index()[0].get(function_name, [])

    def _call_index(self) -> tuple[dict[str, list[nodes.Call]], dict[tuple[int, int], nodes.Call]]:
        """Every call of the module by the name it is spelled with, and by position, from one walk (which also
        counts the module's functions by name)."""
        if self._call_sites is None or self._calls_by_position is None:
            self._call_sites, self._calls_by_position = {}, {}
            for call in descendants(self.module, (nodes.Call, nodes.FunctionDef)):
                if isinstance(call, nodes.FunctionDef):
                    self._definitions[call.name] = self._definitions.get(call.name, 0) + 1
                    continue
                self._calls_by_position[(call.lineno, call.col_offset)] = call
                func = call.func
                name = func.name if isinstance(func, nodes.Name) else getattr(func, "attrname", None)
                if name:
                    self._call_sites.setdefault(name, []).append(call)
        return self._call_sites, self._calls_by_position

    # -- attributes, calls, subscripts -------------------------------------------

    def _attribute(self, node: nodes.Attribute) -> Kind | None:
        if node.attrname in STATIC_ATTRIBUTES:
            return Kind.STATIC
        if isinstance(node.expr, nodes.Name) and node.expr.name == "self":
            return self._self_attribute(node)
        qualified = self.qualified_name(node)
        if qualified and self.imports.is_imported(qualified.split(".")[0]) or (
            qualified and qualified.startswith("torch.")
        ):
            return Kind.STATIC  # module constants such as torch.float16, math.pi
        base = self._kind(node.expr)
        if base is Kind.TENSOR:
            # a tensor attribute, or a field of the named tuple an op returned (``x.max(-1).values``)
            kind = self.facts.attribute_kind(node.attrname) or self.facts.named_tuple_fields.get(node.attrname)
            return self._result_kind(kind) or Kind.UNKNOWN
        field = self.field_values(node)
        if field is not None:  # ``self.step(...).prev_sample``: the field of an output this module builds
            return join(self._kind(value) for value in field)
        if base is Kind.STATIC and "config" in node.expr.as_string():
            return Kind.STATIC
        return Kind.UNKNOWN

    def field_values(self, node: nodes.Attribute) -> list[nodes.NodeNG] | None:
        """What ``obj.attr`` holds when every value ``obj`` can be is an instance of a class of this module
        that a call here builds (directly, through names and parameters, or returned by a helper); ``None``
        when unsure.

        The argument given for a dataclass or ``NamedTuple`` field, else its default
        (``DDPMSchedulerOutput(prev_sample=x)``); for another class, what its methods assign to
        ``self.attr`` (and the buffer it registers), an ``__init__`` parameter standing for the argument
        the call passes for it.
        """
        built = self._constructions(node.expr)
        if not built:
            return None
        found: list[nodes.NodeNG] = []
        for call, klass in built:
            values = self._class_field(klass, call, node.attrname)
            if values is None:
                return None
            found += values
        return found

    def _constructions(
        self, expr: nodes.NodeNG, depth: int = 0
    ) -> list[tuple[nodes.Call | None, nodes.ClassDef]] | None:
        """The calls that build every instance *expr* can be, each with its class of this module; the call is
        ``None`` for an instance built elsewhere whose class the attributes read on a parameter tell
        (:meth:`_duck_typed`)."""
        if depth > 4:
            return None
        klass = self._constructed_class(expr)
        if klass is not None:
            return [(expr, klass)]  # type: ignore[list-item]
        if isinstance(expr, nodes.Attribute) and not (isinstance(expr.expr, nodes.Name) and expr.expr.name == "self"):
            return None
        sources = self.value_sources(expr)
        found: list[tuple[nodes.Call | None, nodes.ClassDef]] = []
        for source in sources or ():
            built = self._constructions(source, depth + 1)
            if built is None:
                return self._duck_typed(expr, depth)
            found += built
        return found or self._duck_typed(expr, depth)

    def _duck_typed(self, expr: nodes.NodeNG, depth: int) -> list[tuple[nodes.Call | None, nodes.ClassDef]] | None:
        """The instances of this module's classes the parameter *expr* names holds, by the attributes its function
        reads on it (:mod:`~graphmend_lint.analysis.duck_typing`), when no call of the function in this file
        passes anything that says otherwise: a construction of another class, a literal, a call."""
        if not isinstance(expr, nodes.Name):
            return None
        try:
            bindings = reaching_bindings(expr)
        except Exception:  # astroid lookups can fail on odd code; stay quiet
            return None
        if len(bindings) != 1 or not isinstance(bindings[0], nodes.AssignName):
            return None
        return self._duck_instances(bindings[0], depth)

    def _duck_instances(self, parameter: nodes.AssignName, depth: int) -> list[tuple[None, nodes.ClassDef]] | None:
        """:meth:`_duck_typed` of the parameter *parameter* binds."""
        resolver = self.scope.resolver
        if resolver is None or not isinstance(parameter.parent, nodes.Arguments):
            return None
        function = parameter.parent.parent
        duck = resolver.duck_typing
        qualname = duck.function_at(*def_position(function)) if isinstance(function, nodes.FunctionDef) else None
        classes = duck.classes(qualname, parameter.name) if qualname is not None else ()
        if not classes:
            return None
        if self._class_positions is None:
            self._class_positions = {def_position(k): k for k in descendants(self.module, nodes.ClassDef)}  # type: ignore[arg-type]
        found: set[nodes.ClassDef] = set()
        for klass in classes:
            node = self._class_positions.get(duck.class_position(klass))
            if node is None:
                return None  # a class the astroid tree does not hold as the index does
            found.add(node)
        for argument in self.call_site_arguments(function, parameter.name):
            built = self._constructions(argument, depth + 1)
            if built is None and opaque_argument(argument):
                continue
            if built is None or not {klass for _, klass in built} <= found:
                return None  # a call passes a literal, a call's result or another class's instance: the call wins
        return [(None, klass) for klass in found]

    @staticmethod
    def _constructed_class(expr: nodes.NodeNG) -> nodes.ClassDef | None:
        """The class of this module that ``Name(...)`` *expr* instantiates, when the name binds only it."""
        if not (isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Name)):
            return None
        try:
            found = reaching_bindings(expr.func)
        except Exception:  # astroid lookups can fail on odd code; stay quiet
            return None
        return found[0] if len(found) == 1 and isinstance(found[0], nodes.ClassDef) else None

    def _class_field(self, klass: nodes.ClassDef, call: nodes.Call | None, name: str) -> list[nodes.NodeNG] | None:
        """What *name* of an instance of *klass* that *call* built holds; with no call (an instance built
        elsewhere), only what the class itself assigns, never what its constructor was passed."""
        fields = _declared_fields(klass, self.imports)
        if fields is not None and name in fields:
            if call is None:
                return None
            passed = _argument_for(call, list(fields), name, skip_first=False)
            default = fields[name]
            if passed is not None:
                return [passed]
            return None if default is None or isinstance(default, nodes.Call) else [default]  # ``field(...)``: unsure
        attributes = _class_attributes(klass)
        assigned = [*attributes.assigned.get(name, ()), *attributes.buffers.get(name, ())][:_MAX_LOOKUPS]
        if not assigned:
            return None
        init = _sole_method(klass, "__init__")
        found: list[nodes.NodeNG] = []
        for value in assigned:
            parameter = _init_parameter(init, value)
            if parameter is None:
                found.append(value)
                continue
            if call is None:
                return None
            parameters = [a.name for a in init.args.args or []]
            passed = _argument_for(call, parameters, parameter.name, skip_first=True)
            default = self._default_of(parameter, init.args)
            if passed is None and default is None:
                return None
            found.append(passed if passed is not None else default)
        return found

    def _self_attribute(self, node: nodes.Attribute) -> Kind | None:
        if "config" in node.attrname:
            return Kind.STATIC
        values = list(self._self_assignments(node))
        if not values:
            return Kind.TENSOR if self._inherited_tensor(node) else Kind.UNKNOWN
        return join(self._assigned_attribute_kind(value) for value in values[:_MAX_LOOKUPS])

    def _inherited_tensor(self, node: nodes.Attribute) -> bool:
        """``self.num_batches_tracked`` in a subclass of ``nn.BatchNorm2d`` (directly or through classes of
        this module): a tensor its torch base registers."""
        klass = enclosing_class(node)
        if klass is None:
            return False
        for owner in self._lineage(klass):
            for base in owner.bases:
                name = self.qualified_name(base) or ""
                if name.startswith("torch.nn.") and node.attrname in INHERITED_TENSORS.get(name.rsplit(".", 1)[1], ()):
                    return True
        return False

    def _self_assignments(self, node: nodes.Attribute) -> Iterator[nodes.NodeNG]:
        """Values assigned to ``self.<attr>`` in the class and the classes of this module it derives from,
        and registered buffers.

        snntorch's ``NoisyLeaky(NoisyLIF)`` branches on ``self.reset_mechanism_val``, a buffer
        ``SpikingNeuron.__init__`` registers two classes up: an instance holds what every class of its
        lineage assigns (GB0170 at ``if self.reset_mechanism_val == 0:``, measured).
        """
        klass = enclosing_class(node)
        if klass is None:
            return
        for owner in self._lineage(klass):
            attributes = _class_attributes(owner)
            yield from attributes.assigned.get(node.attrname, ())
            yield from attributes.buffers.get(node.attrname, ())

    def _lineage(self, klass: nodes.ClassDef) -> list[nodes.ClassDef]:
        """*klass* and the classes of this module it derives from, nearest first (bases spelled as names
        that bind one class here; others, imported or computed, are not followed)."""
        found = self._lineages.get(klass)
        if found is None:
            found = [klass]
            for owner in found:  # grows while it is walked: breadth first
                if len(found) >= _MAX_LINEAGE:
                    break
                for base in owner.bases:
                    parent = _module_class(base)
                    if parent is not None and parent not in found:
                        found.append(parent)
            self._lineages[klass] = found
        return found

    def is_module_class(self, klass: nodes.ClassDef) -> bool:
        """*klass* is an ``nn.Module``: it or a class of this module it derives from has ``nn.Module`` (or
        another ``torch.nn`` class) as a base, or defines ``forward``."""
        return any(
            "forward" in owner.locals
            or any((self.qualified_name(base) or "").startswith("torch.nn.") for base in owner.bases)
            for owner in self._lineage(klass)
        )

    def _assigned_attribute_kind(self, value: nodes.NodeNG) -> Kind | None:
        if self._constructs_module(value):
            return Kind.STATIC  # a submodule object; calling it is what yields tensors
        return self._kind(value)

    def _constructs_module(self, value: nodes.NodeNG) -> bool:
        if not isinstance(value, nodes.Call):
            return False
        name = self.qualified_name(value.func)
        if name is None:
            return False
        if name.startswith(("torch.nn.", "nn.")) and name.rsplit(".", 1)[-1][:1].isupper():
            return name.rsplit(".", 1)[-1] not in {"Parameter", "Buffer"}
        return self._local_module_class(value.func) is not None

    def _submodule_forward(self, func: nodes.NodeNG) -> nodes.FunctionDef | None:
        """The ``forward`` that ``self.rope(...)`` runs, when every ``self.rope = ...`` builds one class of this module.

        Without it, a submodule call counts as "returns tensors", so unpacking
        ``hidden, cap_lens, seq_lens = self.rope(...)`` typed the Python lists
        of lengths as tensors (diffusers' Lumina2: four false findings).
        """
        if isinstance(func, nodes.Name) and func.name == "self":
            return self._own_forward(func)  # GeoDiff's ``get_loss`` unpacks ``... = self(atom_type, ...)``
        return _sole_method(self._instance_class(func), "forward") if _self_attribute(func) else None

    def _own_forward(self, node: nodes.NodeNG) -> nodes.FunctionDef | None:
        """The ``forward`` that calling ``self`` runs in a method of a module class: the nearest definition."""
        klass = enclosing_class(node)
        if klass is None or not self.is_module_class(klass):
            return None
        owner = next((owner for owner in self._lineage(klass) if "forward" in owner.locals), None)
        return None if owner is None else _sole_method(owner, "forward")

    def called_function(self, call: nodes.Call) -> nodes.FunctionDef | None:
        """The function of this module that *call* runs, or ``None`` when that is not certain.

        A function, a method of ``self``, a submodule's ``forward``
        (``self.router(x)``) or another method of a submodule
        (``self.experts.map(x)``), the submodule's class being the one every
        ``self.<attr> = ...`` of the enclosing class constructs. Rules that
        follow a value into its callee or back to its callers (a captured
        list returned by a router, :mod:`graphmend_lint.analysis.captured_flow`)
        resolve calls here.
        """
        func = call.func
        found = self._project_function(func)
        if found is not None:
            return found
        if isinstance(func, nodes.Attribute):
            method = self._instance_method(func)
            if method is not None:
                return method
        return self._submodule_forward(func)

    def _instance_method(self, func: nodes.Attribute) -> nodes.FunctionDef | None:
        """The method ``receiver.name`` runs when *receiver* is an instance of one class of this module:
        its own or the nearest inherited definition (guided-diffusion's ``self.schedule_sampler.sample``,
        defined on the base of the class ``__init__`` constructs)."""
        klass = self._instance_class(func.expr)
        if klass is None:
            return None
        for owner in self._lineage(klass):
            if func.attrname in owner.locals:
                return _sole_method(owner, func.attrname)
        return None

    def _returns_of_submodules(self, value: nodes.NodeNG) -> list[nodes.NodeNG]:
        """What ``self.patch_embed(x)`` returns when the class builds the submodule from several classes of this
        module (ViTPose's ``HybridEmbed`` or ``PatchEmbed``): every ``return`` of each one's ``forward``; empty
        when it is one class (:meth:`_submodule_forward`) or any of them is unclear."""
        if not (isinstance(value, nodes.Call) and _self_attribute(value.func)):
            return []
        classes = self._instance_classes(value.func)
        forwards = [_sole_method(klass, "forward") for klass in classes or ()]
        if len(forwards) < 2 or None in forwards:
            return []
        returned = [item for forward in forwards for item in self._returned(forward)[:_MAX_LOOKUPS]]
        return [] if not returned or None in returned else returned

    def _instance_class(self, receiver: nodes.NodeNG) -> nodes.ClassDef | None:
        """The class of this module every binding of *receiver* constructs: ``self.<attr> = Sampler(...)``
        wherever the class assigns it, or a name bound only to ``Sampler(...)``; ``None`` when any is unclear."""
        classes = self._instance_classes(receiver)
        return classes[0] if classes is not None and len(classes) == 1 else None

    def _instance_classes(self, receiver: nodes.NodeNG) -> list[nodes.ClassDef] | None:
        """The classes of this module the bindings of *receiver* construct; ``None`` when any is unclear."""
        if _self_attribute(receiver):
            assigned = list(itertools.islice(self._self_assignments(receiver), _MAX_LOOKUPS + 1))
        elif isinstance(receiver, nodes.Name) and receiver.name != "self":
            try:
                bindings = reaching_bindings(receiver)
            except Exception:  # astroid lookups can fail on odd code; then nothing is known
                return None
            assigned = [
                binding.parent.value if isinstance(binding.parent, nodes.Assign) else None for binding in bindings
            ]
        else:
            return None
        if not assigned or len(assigned) > _MAX_LOOKUPS:
            return None
        classes = {self._local_class(value.func) if isinstance(value, nodes.Call) else None for value in assigned}
        return None if None in classes else sorted(classes, key=lambda klass: klass.lineno)

    def _local_module_class(self, func: nodes.NodeNG) -> nodes.ClassDef | None:
        klass = self._local_class(func)
        return klass if klass is not None and ("forward" in klass.locals or "__call__" in klass.locals) else None

    @staticmethod
    def _local_class(func: nodes.NodeNG) -> nodes.ClassDef | None:
        """The class of this module a call of the name *func* constructs."""
        if not isinstance(func, nodes.Name):
            return None
        try:
            _, found = func.lookup(func.name)
        except Exception:
            return None
        return next((candidate for candidate in found if isinstance(candidate, nodes.ClassDef)), None)

    def _call(self, node: nodes.Call) -> Kind | None:
        func = node.func
        name = self.qualified_name(func)
        if name is not None:
            known = self._named_call(node, name)
            if known is not None:
                return known
        if isinstance(func, nodes.Attribute):
            return self._method_call(node, func)
        if isinstance(func, nodes.Name):
            return self._local_call(func)
        if isinstance(func, nodes.Subscript) and isinstance(func.value, nodes.Attribute):
            return Kind.TENSOR if self._is_module_attribute(func.value) else Kind.UNKNOWN
        return Kind.UNKNOWN

    @staticmethod
    def _result_kind(result: str | None) -> Kind | None:
        """Map a torch-facts return kind (possibly ``mixed:``) to the lattice; None when unknown."""
        if result is None:
            return None
        parts = split_kind(result)
        if parts & TENSOR_RESULT_KINDS:
            return Kind.TENSOR
        if parts <= STATIC_RESULT_KINDS:
            return Kind.STATIC
        return Kind.UNKNOWN

    def _named_call(self, node: nodes.Call, name: str) -> Kind | None:
        if name in STATIC_BUILTINS:
            return Kind.STATIC
        if name in ELEMENTWISE_BUILTINS:
            return self._operands(*node.args) if node.args else Kind.UNKNOWN
        if name in HOST_CONVERSIONS:
            argument = self._kind(node.args[0]) if node.args else Kind.STATIC
            return Kind.STATIC if argument is Kind.STATIC else Kind.UNKNOWN
        if name.startswith("torch."):
            if name.rsplit(".", 1)[-1] in {"Parameter", "Buffer"} or name in LEGACY_TENSOR_CONSTRUCTORS:
                return Kind.TENSOR
            if name.rsplit(".", 1)[-1] in DATA_DEPENDENT_BOOL:
                return Kind.TENSOR
            result = self._result_kind(self.facts.function_kind(name))
            if result in (Kind.TENSOR, Kind.STATIC):
                return result
            if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper():
                return Kind.STATIC  # constructing a layer
            return Kind.UNKNOWN
        return None

    def _method_call(self, node: nodes.Call, func: nodes.Attribute) -> Kind | None:
        receiver = func.expr
        if isinstance(receiver, nodes.Name) and receiver.name == "self":
            method = self._method_of_self(func)
            if method is not None:
                return self._returns(method)
            if self._is_module_attribute(func):
                return Kind.TENSOR  # self.proj(x): calling a submodule
        method = self._instance_method(func)
        if method is not None:
            return self._returns(method)
        receiver_kind = self._kind(receiver)
        if receiver_kind is Kind.TENSOR:
            if func.attrname in DATA_DEPENDENT_BOOL:
                return Kind.TENSOR
            if func.attrname == "type" and not node.args and not node.keywords:
                return Kind.STATIC  # the type's name, ``"torch.cuda.HalfTensor"`` (WaveGlow compares it)
            return self._result_kind(self.facts.method_kind(func.attrname)) or Kind.UNKNOWN
        if isinstance(receiver, nodes.Attribute) and self._is_module_attribute(receiver) and func.attrname == "forward":
            return Kind.TENSOR
        if func.attrname in DISTRIBUTION_TENSOR_METHODS and self._is_distribution(receiver):
            return Kind.TENSOR
        if func.attrname in {"type", "to"} and node.args and self.qualified_name(node.args[0]) == "torch.bool":
            return Kind.TENSOR  # ``w = batch["w_3d"].type(torch.bool)``: a module converts to no bool dtype
        if receiver_kind is not Kind.STATIC and self._is_tensor_only_method(func.attrname):
            # ``helper(x).masked_fill(...)``: only a tensor (or a numpy array, which Dynamo traces as one) has it
            return self._result_kind(self.facts.method_kind(func.attrname)) or Kind.UNKNOWN
        return Kind.UNKNOWN

    def _is_distribution(self, receiver: nodes.NodeNG) -> bool:
        """*receiver* is built by a ``torch.distributions`` class: directly, through a name, or ``self.<attr>``."""
        if isinstance(receiver, nodes.Call):
            name = self.qualified_name(receiver.func) or ""
            return name.startswith("torch.distributions.") and name.rpartition(".")[2][:1].isupper()
        if isinstance(receiver, nodes.Attribute) and isinstance(receiver.expr, nodes.Name) and receiver.expr.name == "self":
            values = list(self._self_assignments(receiver))[:_MAX_LOOKUPS]
        elif isinstance(receiver, nodes.Name):
            try:
                bindings = reaching_bindings(receiver)[:_MAX_LOOKUPS]
            except Exception:  # astroid lookups can fail on odd code; stay quiet
                return False
            values = [b.parent.value for b in bindings if isinstance(b, nodes.AssignName) and isinstance(b.parent, nodes.Assign)]
            if len(values) != len(bindings):
                return False
        else:
            return False
        return bool(values) and all(isinstance(v, nodes.Call) and self._is_distribution(v) for v in values)

    def _is_tensor_only_method(self, name: str) -> bool:
        """A tensor method that plain Python values and ``nn.Module`` s do not have."""
        return (
            name not in PLAIN_PYTHON_ATTRIBUTES
            and name not in MODULE_METHODS
            and self._result_kind(self.facts.method_kind(name)) is Kind.TENSOR
        )

    def _method_of_self(self, func: nodes.Attribute) -> nodes.FunctionDef | None:
        klass = func.frame().parent
        while klass is not None and not isinstance(klass, nodes.ClassDef):
            klass = klass.parent
        if klass is None:
            return None
        for owner in self._lineage(klass):  # the class, then the bases of this module it inherits from
            method = owner.locals.get(func.attrname)
            if method:
                return method[0] if isinstance(method[0], nodes.FunctionDef) else None
        return None

    def _is_module_attribute(self, node: nodes.Attribute) -> bool:
        if not (isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
            return False
        return any(self._constructs_module(value) for value in self._self_assignments(node))

    def _local_call(self, func: nodes.Name) -> Kind | None:
        try:
            _, found = func.lookup(func.name)
        except Exception:
            return Kind.UNKNOWN
        for candidate in found[:_MAX_LOOKUPS]:
            if isinstance(candidate, nodes.FunctionDef):
                return self._returns(candidate)
            if isinstance(candidate, nodes.ClassDef):
                return Kind.STATIC  # constructing an object
            if isinstance(candidate, nodes.AssignName):
                parent = candidate.parent
                if isinstance(parent, nodes.Assign) and self._constructs_module(parent.value):
                    return Kind.TENSOR  # calling a module instance
                lam = self._named_lambda(func)
                if lam is not None:
                    return self._kind(lam.body)  # its parameters typed by the calls that pass them
                loop = parent.parent if isinstance(parent, nodes.Tuple) else parent
                if isinstance(loop, nodes.For) and self._iterates_modules(loop.iter):
                    return Kind.TENSOR  # for layer in self.layers / enumerate(self.layers): layer(x)
        return Kind.UNKNOWN

    def _returns(self, function: nodes.FunctionDef) -> Kind | None:
        """What a project function returns: the join of its ``return`` values, or, when they say nothing,
        its return annotation (mbrl's ``def rfftfreq(...) -> torch.Tensor``)."""
        if function.name in {"forward", "__call__"}:
            return Kind.TENSOR
        found = self._returned_kind(function)
        if found is Kind.UNKNOWN and function.returns is not None:
            return self._annotation_kind(function.returns)
        return found

    def _returned_kind(self, function: nodes.FunctionDef) -> Kind | None:
        returns = self._returned(function)
        if not returns:
            return Kind.UNKNOWN
        if any(value is None for value in returns):
            return Kind.UNKNOWN
        kinds = [(value, self._kind(value)) for value in returns[:_MAX_LOOKUPS]]
        if any(kind is Kind.TENSOR for _, kind in kinds) and all(
            kind is Kind.TENSOR or (isinstance(value, nodes.Const) and type(value.value) is bool) for value, kind in kinds
        ):
            # ``if ...: return False`` ... ``return mask.any()`` (transformers' ``_is_packed_sequence``):
            # a predicate that decides on the tensor's data past its early exits
            if join(kind for _, kind in kinds) is not Kind.TENSOR:
                self._partial_seen += 1
            return Kind.TENSOR
        return join(kind for _, kind in kinds)

    def _returned(self, function: nodes.FunctionDef) -> list[nodes.NodeNG | None]:
        """The values of *function*'s own ``return`` statements (``None`` for a bare one), found once."""
        found = self._return_values.get(function)
        if found is None:
            found = [r.value for r in descendants(function, nodes.Return, skip=(nodes.FunctionDef, nodes.Lambda))]
            self._return_values[function] = found
        return found

    def _iterates_modules(self, iterable: nodes.NodeNG) -> bool:
        if isinstance(iterable, nodes.Call) and self.qualified_name(iterable.func) == "enumerate" and iterable.args:
            iterable = iterable.args[0]
        return isinstance(iterable, nodes.Attribute) and self._is_module_attribute(iterable)

    def _subscript(self, node: nodes.Subscript) -> Kind | None:
        index = node.slice
        if isinstance(index, nodes.Const) and (type(index.value) is int and index.value >= 0 or type(index.value) is str):
            element = self._element(node.value, index.value)
            if element is not None:
                return element  # ``self._pad(x)[1]``, ``(x, n)[0]``, ``self.step(...)["prev_sample"]``
        value = self._kind(node.value)
        if value is Kind.STATIC:
            # ``self.state[key]`` of a dict the class fills; ``hs[-1]`` of ``hs = []`` the function appends tensors to
            stored = self._stored_items(node)
            if stored:
                return join(self._kind(item) for item in stored)
            if self._appended_tensors(node.value):
                return Kind.TENSOR
        if value in (Kind.TENSOR, Kind.STATIC):
            return value
        return Kind.TENSOR if is_array_index(index) else Kind.UNKNOWN

    def _appended_tensors(self, container: nodes.NodeNG) -> bool:
        """*container* names a list its function builds by appending (:func:`appended_items`) tensors only, at
        most :data:`_MAX_APPENDED` of them (``hs.append(layer(h))``, then ``if hs[-1].sum() > 0:``: GB0170,
        measured on torch 2.13). A read of the list while its items are being classified answers no: items
        that read the list again (Qwen2.5-Omni's ``st_idx = llm_pos_ids_list[-1].max() + 1`` before each
        append) would otherwise be classified again for every read, without end."""
        items = appended_items(container)
        if not items or len(items) > _MAX_APPENDED or not isinstance(container, nodes.Name):
            return False
        key = (container.scope(), container.name)
        if key in self._open_lists:
            return False
        self._open_lists.add(key)
        try:
            return join(self._kind(item) for item in items) is Kind.TENSOR
        finally:
            self._open_lists.discard(key)

    def _stored_items(self, node: nodes.Subscript) -> list[nodes.NodeNG]:
        """What ``self.state[key]`` can hold when ``self.state`` is a dict or list literal the class fills with
        ``self.state[key] = value`` (stores under another constant key left out), with the literal's own items.

        A container's truthiness and length are static, its items need not be: audiocraft's
        ``StreamingModule`` starts ``self._streaming_state = {}`` and stores tensors in it
        (``int(self._streaming_state['offset'].item())``, GB0124, measured). Empty when the class stores
        nothing there, or the attribute is ever anything but a literal.
        """
        container = node.value
        if not (isinstance(container, nodes.Attribute) and isinstance(container.expr, nodes.Name)
                and container.expr.name == "self"):  # fmt: skip
            return []
        klass = enclosing_class(node)
        if klass is None:
            return []
        literals = list(self._self_assignments(container))
        if not literals or not all(isinstance(value, (nodes.Dict, nodes.List)) for value in literals):
            return []
        key = node.slice.value if isinstance(node.slice, nodes.Const) else None
        stored = [
            value
            for owner in self._lineage(klass)
            for target, value in _class_attributes(owner).items.get(container.attrname, ())
            if key is None or not isinstance(target.slice, nodes.Const) or target.slice.value == key
        ]
        if not stored:
            return []
        for literal in literals:
            if isinstance(literal, nodes.Dict):
                stored += [value for item_key, value in literal.items
                           if key is None or not isinstance(item_key, nodes.Const) or item_key.value == key]  # fmt: skip
            else:
                stored += literal.elts
        return stored[:_MAX_LOOKUPS]

    def _element(self, value: nodes.NodeNG, index: int | str, arity: int | None = None) -> Kind | None:
        """The kind of ``value[index]`` when *value* is a tuple, list or dict built in this module; ``None`` when unsure.

        A ``None`` element counts only when every element is one. Follows names to their assignments and calls of project functions
        and methods to their ``return`` statements, so that a helper returning
        ``padding_len, input_ids, attention_mask`` types each of them.
        """
        elements = self.element_values(value, index, arity=arity)
        return None if elements is None else join(self._kind(element) for element in without_none(elements))

    def element_values(
        self, value: nodes.NodeNG, index: int | str, depth: int = 0, arity: int | None = None
    ) -> list[nodes.NodeNG] | None:
        """The expressions ``value[index]`` can be when *value* is a tuple or list literal (an ``int``
        *index*) or a dict literal with constant keys (a key) of this module, reached through names,
        parameters (what every call passes), both arms of a conditional expression and calls of this
        module's functions, methods and submodules (their ``return`` values); ``None`` when one path leads
        elsewhere.

        *arity* is the number of targets an unpacking assigns: a tuple literal of another length cannot be
        what it unpacks (it would raise), so it is passed over. GeoDiff's ``forward`` returns six values
        when asked for its edges and two otherwise; ``get_loss`` unpacks six from ``self(...)``.
        """
        if depth > 4:
            return None
        if isinstance(value, (nodes.Tuple, nodes.List)):
            starred = any(isinstance(e, nodes.Starred) for e in value.elts)
            if arity is not None and not starred and len(value.elts) != arity:
                return []
            if not isinstance(index, int) or index >= len(value.elts):
                return None
            if any(isinstance(e, nodes.Starred) for e in value.elts[: index + 1]):
                return None
            return [value.elts[index]]
        if isinstance(value, (nodes.ListComp, nodes.GeneratorExp)) and isinstance(index, int):
            # ``query, key = [x.reshape(...) for x in (query, key)]`` (Qwen3-Next): every item is the element
            return [value.elt]
        if isinstance(index, int) and (mapped := _mapped_lambda(value)) is not None:
            # ``b_ids, mconf = map(lambda x, y: torch.cat([x, y]), ...)`` (LoFTR): every item is the lambda's value
            return [mapped.body]
        if isinstance(value, nodes.Dict):
            if not all(isinstance(key, nodes.Const) for key, _ in value.items):
                return None  # ``{**other, ...}``: the key may come from elsewhere
            found = [item for key, item in value.items if key.value == index]
            return found[-1:] or None
        if isinstance(value, nodes.Call) and is_builtin_call(value, "dict") and not value.args:
            # ``dict(fn_idx=torch.randperm(4), ...)`` (torchvision's ColorJitter params)
            keywords = value.keywords or []
            if any(keyword.arg is None for keyword in keywords):
                return None  # ``dict(**other, ...)``: the key may come from elsewhere
            found = [keyword.value for keyword in keywords if keyword.arg == index]
            return found or None
        sources: list[nodes.NodeNG | None] | None
        if isinstance(value, nodes.IfExp):
            # ``(mask, ids) = self.random_masking(x) if self.is_mae else (None, None)`` (Hiera): either arm's element
            folded = self.compiled_constant(value.test)
            sources = [value.body, value.orelse] if folded is None else [value.body if folded else value.orelse]
        elif isinstance(value, nodes.Name):
            # ``padding_left, padding_right = paddings``: a parameter holds what every call passes (EnCodec's ``_pad1d``)
            sources = self.value_sources(value, depth + 1)
        elif isinstance(value, nodes.Call):
            function = self._project_function(value.func)
            if function is not None and function.name in {"forward", "__call__"}:
                return None
            if function is None and isinstance(value.func, nodes.Attribute):
                function = self._instance_method(value.func)
            function = function or self._submodule_forward(value.func)
            if function is None:
                return None
            sources = list(self._returned(function)[:_MAX_LOOKUPS])
        else:
            return None
        if not sources or any(source is None for source in sources):
            return None
        found: list[nodes.NodeNG] = []
        for source in sources:
            elements = self.element_values(source, index, depth + 1, arity)
            if elements is None:
                return None
            found += elements
        return found or None

    def value_sources(self, node: nodes.NodeNG, depth: int = 0) -> list[nodes.NodeNG] | None:
        """The expressions *node*'s value comes from, one step back, or ``None`` when one of them is not
        an expression of this module (a loop variable, an import, a parameter no call here passes).

        A name: what each of its bindings assigns (an unpacked name: that element of each tuple the value
        can be); a parameter: what the calls of its function in this module pass for it, and its default
        unless that is ``None`` (a call that leaves it out gets ``None``, which code tests before use);
        ``self.x``: every value its class assigns to it and the buffer it registers under that name;
        ``obj.x`` of an instance built here: :meth:`field_values`; a call of this module's function,
        method or submodule: its ``return`` values. Dtype facts
        (:func:`~graphmend_lint.analysis.host_values.is_bool_tensor`) follow a value through these steps.
        *depth* counts the unpackings already followed (``a, b = c`` where ``c, d = a, ...``).
        """
        if isinstance(node, nodes.Name):
            try:
                bindings = reaching_bindings(node)[:_MAX_LOOKUPS]
            except Exception:  # astroid lookups can fail on odd code; stay quiet
                return None
            found: list[nodes.NodeNG] = []
            for binding in bindings:
                sources = self.binding_sources(binding, depth)
                if sources is None:
                    return None
                found += sources
            return found or None
        if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self":
            return list(self._self_assignments(node))[:_MAX_LOOKUPS] or None
        if isinstance(node, nodes.Attribute):
            return self.field_values(node)
        if isinstance(node, nodes.Call):
            lam = self._named_lambda(node.func)
            if lam is not None:
                return [lam.body]
            function = self.called_function(node)
            returned = self._returned(function)[:_MAX_LOOKUPS] if function is not None else []
            return None if not returned or any(value is None for value in returned) else list(returned)
        return None

    @staticmethod
    def _named_lambda(func: nodes.NodeNG) -> nodes.Lambda | None:
        """The lambda a name holds when it is bound once, in the scope that calls it: VIBE's loss
        ``flatten = lambda x: x.reshape(-1)`` then ``w_smpl = flatten(w_smpl)``."""
        if not isinstance(func, nodes.Name):
            return None
        try:
            bindings = reaching_bindings(func)
        except Exception:  # astroid lookups can fail on odd code; then nothing is known
            return None
        if len(bindings) != 1 or not isinstance(bindings[0], nodes.AssignName):
            return None
        statement = bindings[0].parent
        if isinstance(statement, nodes.Assign) and isinstance(statement.value, nodes.Lambda) and statement.targets == [bindings[0]]:
            return statement.value
        return None

    def _lambda_calls(self, lam: nodes.Lambda) -> list[nodes.Call]:
        """The calls of *lam* by the one name it is bound to, in the scope that binds it."""
        statement = lam.parent
        if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
            return []
        target = statement.targets[0]
        if not isinstance(target, nodes.AssignName):
            return []
        return [
            call
            for call in self._sites(target.name)
            if isinstance(call.func, nodes.Name) and self._named_lambda(call.func) is lam
        ][:_MAX_LOOKUPS]

    def binding_sources(self, binding: nodes.NodeNG, depth: int = 0) -> list[nodes.NodeNG] | None:
        """The expressions one binding of a name gives it (see :meth:`value_sources`), else ``None``."""
        if not isinstance(binding, nodes.AssignName):
            return None
        parent = binding.parent
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.NamedExpr)) and parent.value is not None:
            return [parent.value]
        if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
            if parent.parent.targets != [parent]:
                return None
            return self.element_values(parent.parent.value, parent.elts.index(binding), depth, len(parent.elts))
        if isinstance(parent, nodes.Arguments):
            passed = self.call_site_arguments(parent.parent, binding.name)
            if not passed:
                return None
            default = self._default_of(binding, parent)
            keeps_default = default is not None and not (isinstance(default, nodes.Const) and default.value is None)
            return [*passed, default] if keeps_default else passed
        return None

    def _project_function(self, func: nodes.NodeNG) -> nodes.FunctionDef | None:
        """The function a call runs when it is a function or ``self`` method of this module."""
        if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == "self":
            return self._method_of_self(func)
        if isinstance(func, nodes.Name):
            try:
                found = reaching_bindings(func)
            except Exception:
                return None
            functions = [f for f in found if isinstance(f, nodes.FunctionDef)]
            return functions[0] if len(functions) == 1 and len(found) == 1 else None
        return None


def _calls_by_own_name(call: nodes.Call, function: nodes.FunctionDef) -> bool:
    """*call* surely calls *function*, not another callable spelled alike: ``helper(...)`` of a module-level
    function, ``self.helper(...)`` from a method of the same class, ``Block(...)`` of a class's ``__init__``,
    and the instance calls scope analysis resolved for a ``forward`` or ``__call__``."""
    owner = function.parent
    func = call.func
    if function.name in {"forward", "__call__"}:
        return True
    if isinstance(owner, nodes.Module):
        return isinstance(func, nodes.Name) and func.name == function.name
    if not isinstance(owner, nodes.ClassDef):
        return False
    if function.name == "__init__":
        return isinstance(func, nodes.Name) and func.name == owner.name
    return (
        isinstance(func, nodes.Attribute)
        and func.attrname == function.name
        and isinstance(func.expr, nodes.Name)
        and func.expr.name == "self"
        and enclosing_class(call) is owner
    )


def is_text(node: nodes.NodeNG) -> bool:
    """A string literal or an f-string."""
    return isinstance(node, nodes.JoinedStr) or (isinstance(node, nodes.Const) and isinstance(node.value, str))


def _tests_isinstance(test: nodes.NodeNG, name: str, accepts: Callable[[list[nodes.NodeNG]], bool]) -> bool:
    """*test* is ``isinstance(name, <classes>)`` whose classes (a tuple's items, or the one) *accepts*, or an
    ``and`` with such an operand: inside its body *name* is known to be an instance of them."""
    if isinstance(test, nodes.BoolOp) and test.op == "and":
        return any(_tests_isinstance(value, name, accepts) for value in test.values)
    if not (
        isinstance(test, nodes.Call)
        and isinstance(test.func, nodes.Name)
        and test.func.name == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], nodes.Name)
        and test.args[0].name == name
    ):
        return False
    classes = test.args[1]
    return accepts(classes.elts if isinstance(classes, nodes.Tuple) else [classes])


def _self_attribute(node: nodes.NodeNG) -> bool:
    """``self.<attr>``."""
    return isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"


def _assigned_when_none(binding: nodes.NodeNG, name: str) -> bool:
    """*binding* is an assignment in the body of ``if <name> is None:``."""
    statement = binding.parent if isinstance(binding, nodes.AssignName) else None
    guard = statement.parent if isinstance(statement, nodes.Assign) else None
    if not isinstance(guard, nodes.If) or statement not in guard.body:
        return False
    return none_test(guard.test) == (name, True)


def _python_literal(node: nodes.NodeNG | None) -> bool:
    """A literal ``bool``, number or string: a Python value whatever an annotation beside it says."""
    return isinstance(node, nodes.Const) and type(node.value) in (bool, int, float, complex, str)


def _literal_binding(binding: nodes.NodeNG) -> bool:
    """``x = None`` / ``False`` / ``0``: a name bound to a literal constant."""
    parent = binding.parent
    return (
        isinstance(binding, nodes.AssignName)
        and isinstance(parent, (nodes.Assign, nodes.AnnAssign))
        and isinstance(parent.value, nodes.Const)
        and type(parent.value.value) in (bool, int, float, type(None))
    )


def _declared_fields(klass: nodes.ClassDef, imports: ImportTable) -> dict[str, nodes.NodeNG | None] | None:
    """A dataclass's or ``NamedTuple``'s fields in order, each with its default (``None``: none), else ``None``."""
    decorators = klass.decorators.nodes if klass.decorators else []
    names = [dotted(d.func if isinstance(d, nodes.Call) else d) for d in decorators]
    names += [dotted(base) for base in klass.bases]
    if not any(n and imports.resolve(n) in {"dataclasses.dataclass", "typing.NamedTuple"} for n in names):
        return None
    return {
        statement.target.name: statement.value
        for statement in klass.body
        if isinstance(statement, nodes.AnnAssign) and isinstance(statement.target, nodes.AssignName)
        and "ClassVar" not in statement.annotation.as_string()
    }


def _argument_for(call: nodes.Call, parameters: list[str], name: str, skip_first: bool) -> nodes.NodeNG | None:
    """What *call* passes for the parameter *name* of *parameters* (the first one being ``self`` when
    *skip_first*), by keyword or by position before any ``*args``; ``None`` when it passes nothing."""
    for keyword in call.keywords or []:
        if keyword.arg == name:
            return keyword.value
    positional = parameters[1:] if skip_first else parameters
    if name not in positional:
        return None
    index = positional.index(name)
    leading = call.args[: index + 1]
    if index < len(call.args) and not any(isinstance(a, nodes.Starred) for a in leading):
        return call.args[index]
    return None


def _init_parameter(init: nodes.FunctionDef | None, value: nodes.NodeNG) -> nodes.AssignName | None:
    """The ``__init__`` parameter *value* (assigned to ``self.x`` in ``__init__``) reads, unrebound."""
    if init is None or not isinstance(value, nodes.Name) or value.frame() is not init:
        return None
    try:
        bindings = reaching_bindings(value)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return None
    if len(bindings) == 1 and isinstance(bindings[0], nodes.AssignName) and isinstance(bindings[0].parent, nodes.Arguments):
        return bindings[0]
    return None


def _module_class(base: nodes.NodeNG) -> nodes.ClassDef | None:
    """The class of this module a base-class name binds, when it binds exactly one."""
    if not isinstance(base, nodes.Name):
        return None
    try:
        found = reaching_bindings(base)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return None
    return found[0] if len(found) == 1 and isinstance(found[0], nodes.ClassDef) else None


def _sole_method(klass: nodes.ClassDef | None, name: str) -> nodes.FunctionDef | None:
    """*klass*'s own method *name* when it defines exactly one (no property or reassignment)."""
    found = klass.locals.get(name, []) if klass is not None else []
    return found[0] if len(found) == 1 and isinstance(found[0], nodes.FunctionDef) else None


def is_array_index(index: nodes.NodeNG) -> bool:
    """``[:, 0]``, ``[..., None]``: several axes at once, which only arrays (tensors, NumPy) accept; a list takes
    no tuple, and a dict no slice in its key (torchmd-net's untyped ``edge_index[:, mask]``)."""
    if not isinstance(index, nodes.Tuple):
        return False
    return any(
        isinstance(part, nodes.Slice) or (isinstance(part, nodes.Const) and (part.value is None or part.value is Ellipsis))
        for part in index.elts
    )
