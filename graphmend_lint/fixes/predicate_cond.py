"""``torch.cond`` for call-bearing branches: pattern 5 of GM101's fix.

``torch.where`` computes both sides. That is fine for a name, a constant or
elementwise arithmetic, but not when a side calls a submodule, a method of
``self`` or a user function: the expert of the branch not taken would run on
every call (and its NaNs could reach the gradients). Such an ``if`` becomes
``torch.cond`` with two local functions, so only the taken side runs::

    def _gm_cond_true_19(x):
        return normalize(self.expert_a(x))

    def _gm_cond_false_19(x):
        return torch.relu(self.expert_b(x))

    h = torch.cond(gate > 0.5, _gm_cond_true_19, _gm_cond_false_19, (x,))

Which rewrite (:func:`needs_cond`): look at every value the branches assign
or return. If one of them calls anything other than a torch function
(``torch.*``, ``F.*``), a method of a tensor (``h.relu()``, ``self.w.t()``)
or a pure builtin (``max``, ``len``...), the ``if`` is *call-bearing* and gets
``torch.cond``; otherwise it keeps ``torch.where``. So ``self.expert(x)``,
``self._helper(x)``, ``normalize(x)`` and ``layer(x)`` mean ``cond``.

The rewrite, always *unsafe*:

* the branch functions are defined right before the statement and named
  ``_gm_cond_true_<line>`` / ``_gm_cond_false_<line>`` (``_2``, ``_3``... when a
  name is taken); each branch's assignments are copied in order;
* their parameters are the operands: every local tensor name a branch reads
  before binding it. ``self``, module-level names and local Python values are
  closed over (Dynamo lifts parameters and specialises on Python values);
* they return the names the branches assign that are read outside the ``if``
  (a tuple unpacked at the call when there are several); a side that does not
  assign a name returns its value from before the ``if``, which must be a
  tensor. Both-return ``if``s (also ``if c: return a`` followed by
  ``return b``) become ``return torch.cond(...)``;
* an output that is not provably a new tensor gets ``.clone()``: cond's
  outputs may not alias its inputs. Provably new: arithmetic, a torch op that
  is not a view or a possible no-op (:data:`ALIASING_OPS`), a ``torch.nn``
  layer that computes (:data:`COMPUTING_LAYERS`), a user function whose every
  return is provably new.

Declined (display-only, the message says why): a statement other than an
assignment to a local name (a call for its effect, ``+=``, nested control
flow), an early ``return``/``raise``/``break``, one side returning and the
other not, an ``elif`` chain (it would need nested conds), a value that is
``None`` or not a tensor, a name assigned on one side only without a tensor
value before the ``if``, outputs of provably different shapes
(:func:`~graphmend_lint.fixes.predicate.same_shape`) or dtypes, a call with
side effects or that the linter cannot classify, a called user function or
method that mutates, prints, logs or declares ``global`` (one level deep), or
that is given a name the test branches on (a scheduler's ``self.q_posterior(...,
timestep)`` under ``if timestep == 0:``: its helpers index with the timestep,
which ``torch.cond`` cannot trace, in eager mode too), a
submodule built with ``inplace=True``, a closure over a local that the
function mutates in place, a non-tensor local that a branch rebinds after
reading it, and a ``.clone()`` that would cut an alias the function later
mutates through.

Measured on torch 2.13.0 (CPU), eager, ``torch.compile(fullgraph=True)`` and
``torch._dynamo.explain`` (``torch.cond`` compiles its branches even in eager,
so eager fails the same way):

* predicate: a Python bool, or a tensor with exactly one element of any dtype
  (0-d, shape ``(1,)`` or ``(1, 1)``; bool, float or int) works. A tensor with
  more elements fails ("Expected pred to be bool or single-element tensor").
  The rewrite passes :meth:`Predicator.condition`, a boolean tensor with the
  ``if``'s own element count (an ``if`` on a larger tensor already fails).
* outputs: tensors (or ints/bools); a float or ``None`` fails ("HOP body
  output unsupported"). Dtypes must match ("expected same dtype"); ranks must
  match ("expected same dim"); sizes of the same rank may differ (the output
  gets an unbacked size), but the rewrite still declines provable differences.
* aliasing: returning an operand, a view of one (``t.view(...)``), a no-op
  ``t.to(t.dtype)``/``t.contiguous()``, ``nn.Identity()(t)``, a parameter or a
  closed-over tensor fails with "Encountered aliasing during higher order op
  tracing" whenever grad mode is on (also for inputs that do not require
  grad). Under ``torch.no_grad()`` the alias is accepted. ``t.clone()`` works
  in both, hence the clones.
* side effects inside a branch: ``print``, ``list.append`` and attribute
  assignment on ``self`` fail ("Non-nullified side effect", "Unsafe side
  effect"); in-place ops on an operand or a buffer fail with "Encountered input
  mutation" in grad mode and are applied under ``no_grad``. A side effect
  deeper than the one level this module checks is therefore either refused
  loudly or run once, on the taken side only, as the original did. A nested
  ``if`` on a tensor inside a branch fails ("Data-dependent branching").
* autograd works through cond on 2.13: gradients of the inputs and of
  submodule parameters equal the original ``if``'s in eager and with the
  ``eager``/``aot_eager`` backends. With inductor (CPU) they can be wrong: the
  compiled backward of a branch may reuse its incoming gradient buffer in
  place while the outer backward still reads it, so an input that reaches the
  loss through the cond *and* another path loses the other path's gradient
  (``x + torch.cond(p, lambda t: t * 2, lambda t: t * 3, (x,))`` at ones
  gives 4 instead of 3; ``x.sin() + cond(...)`` loses the ``cos``). The
  call-bearing catalog program (``x + h``) hits it. Setting
  ``torch._inductor.config.inplace_buffers = False`` gives the right gradient.
* cost: compiled, one graph and no break. Eager, each call re-traces the
  branches: about 1 ms per call without grad and about 37 ms with grad for a
  two-``Linear`` block on this machine (the eager backend of
  ``torch.compile`` pays the same), so the rewritten code is meant to run
  under ``torch.compile`` with inductor (0.1-0.2 ms there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from astroid import nodes

from graphmend_lint.analysis.mutations import Mutations, contains
from graphmend_lint.analysis.lookup import is_builtin_call
from graphmend_lint.analysis.side_effects import SideEffectFinder
from graphmend_lint.analysis.values import (
    ELEMENTWISE_BUILTINS,
    STATIC_BUILTINS,
    Kind,
    assigned_self_values,
    enclosing_class,
)
from graphmend_lint.fixes.predicate import Declined, Predicator, Rewrite, same_shape, shape_operations

COND_MESSAGE = "Branch with `torch.cond` instead of `if`, so only the taken side runs"
#: Builtins that are cheap and pure: calling them does not make a branch call-bearing.
PURE_BUILTINS = STATIC_BUILTINS | ELEMENTWISE_BUILTINS
#: Imported modules whose functions are pure host math.
PURE_MODULES = ("math.", "operator.")
#: torch ops that may return a view of, or the very tensor passed (torch's "Tensor Views" page, plus no-op conversions).
ALIASING_OPS = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute",
     "t", "adjoint", "expand", "expand_as", "broadcast_to", "narrow", "select", "split", "hsplit", "vsplit", "dsplit",
     "tensor_split", "split_with_sizes", "chunk", "unbind", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims",
     "as_strided", "unfold", "real", "imag", "view_as_real", "view_as_complex", "detach", "alias", "positive",
     "contiguous", "to", "type", "type_as", "float", "double", "half", "bfloat16", "int", "long", "short", "bool",
     "byte", "char", "cpu", "cuda", "conj", "resolve_conj", "resolve_neg", "atleast_1d", "atleast_2d", "atleast_3d",
     "requires_grad_", "as_subclass", "rename", "refine_names", "align_to"}
)  # fmt: skip
#: ``torch.nn`` layers whose call always returns a new tensor (unless built with ``inplace=True``, declined).
COMPUTING_LAYERS = frozenset(
    {"Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
     "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
     "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh",
     "Softmax", "LogSoftmax", "LeakyReLU", "ELU", "Mish", "Softplus"}
)  # fmt: skip
#: Tensor methods that fix a result's dtype, and torch dtype aliases, for the dtype check.
DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
                 "int": "int32", "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8"}  # fmt: skip
DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                 "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}  # fmt: skip
_LEAVES = (nodes.Return, nodes.Raise, nodes.Break, nodes.Continue)
#: torch calls with an effect of their own (GM201's fix writes the first one).
EFFECTFUL_TORCH_CALLS = frozenset({"torch._higher_order_ops.print", "torch._assert_async"})
_BLOCKS = (nodes.If, nodes.For, nodes.While, nodes.With, nodes.Try, nodes.Match)
_CALLEE_DEPTH = 2


class NestedControlFlow(Declined):
    """A branch holds an ``if``/loop/``with``/``try``: no ``torch.cond``, though computing both sides may do."""


def needs_cond(predicator: Predicator, node: nodes.If) -> bool:
    """Whether a value the branches of *node* assign or return calls code that should not run on both sides."""
    return any(
        _runs_user_code(predicator, call) for value in _branch_values(node) for call in value.nodes_of_class(nodes.Call)
    )


def callee_effect(predicator: Predicator, node: nodes.If) -> str | None:
    """Why the project code the branch values call must not run on both sides, or ``None`` when it may.

    The same one-level check ``torch.cond`` applies (mutation, I/O, globals, in-place layers), for a
    fallback that computes both branches.
    """
    builder = _CondBuilder(predicator, node)
    try:
        for value in _branch_values(node):
            for call in value.nodes_of_class(nodes.Call):
                builder._check_callee(call)
    except Declined as reason:
        return str(reason)
    return None


def cond_rewrite(predicator: Predicator, node: nodes.If) -> Rewrite:
    """The ``torch.cond`` rewrite of *node*; raises :class:`Declined` with the reason when it is not provably legal."""
    return _CondBuilder(predicator, node).rewrite()


@dataclass(frozen=True)
class _Statement:
    """One assignment of a branch: ``target`` (with its annotation, if any) ``= text``."""

    name: str
    target: str
    value: nodes.NodeNG
    text: str


@dataclass
class _Branch:
    """One side of the ``if``, as the body of its local function."""

    statements: list[_Statement] = field(default_factory=list)
    #: the value each name was last bound to in this branch.
    bindings: dict[str, nodes.NodeNG] = field(default_factory=dict)
    #: whether that value is provably a new tensor (no alias of an input).
    fresh: dict[str, bool] = field(default_factory=dict)
    #: names read before this branch binds them, in order: the operand candidates (None: known to be a tensor).
    reads: dict[str, nodes.Name | None] = field(default_factory=dict)
    #: names read first and bound later in this branch: they must be parameters.
    rebound: set[str] = field(default_factory=set)
    #: the returned value of a both-return ``if``.
    returned: nodes.NodeNG | None = None


@dataclass(frozen=True)
class _Output:
    """What one side gives for one output: its text in the return, and what decides its shape and dtype."""

    text: str
    value: nodes.NodeNG | None  # None: the value from before the ``if``
    shape: frozenset[str]
    cloned: bool


class _CondBuilder:
    """Analyse one call-bearing ``if`` and write its ``torch.cond`` rewrite."""

    def __init__(self, predicator: Predicator, node: nodes.If) -> None:
        function = node.scope()
        if not isinstance(function, nodes.FunctionDef):
            raise Declined("the `if` is not inside a function, so there is nowhere to define the branch functions")
        self.p = predicator
        self.node = node
        self.function = function
        self.mutations = Mutations(function, predicator.values.qualified_name)

    def rewrite(self) -> Rewrite:
        condition = self.p.condition(self.node.test)
        true_block, false_block, last, returns = self._blocks()
        true_side, false_side = self._branch(true_block), self._branch(false_block)
        if returns:
            outputs = self._returned_outputs(true_side, false_side)
        else:
            outputs = self._assigned_outputs(true_side, false_side)
        operands = self._operands(true_side, false_side)
        if not returns:
            self._check_clones(outputs)
        true_name, false_name = self._function_names()
        parameters = ", ".join(operands)
        definitions = [
            _definition(name, parameters, side, [(key, pair[index]) for key, pair in outputs.items()], returns)
            for index, (name, side) in enumerate(((true_name, true_side), (false_name, false_side)))
        ]
        operand_tuple = f"({operands[0]},)" if len(operands) == 1 else f"({parameters})"
        call = f"{self.p.torch}.cond({condition}, {true_name}, {false_name}, {operand_tuple})"
        statement = f"return {call}" if returns else f"{', '.join(outputs)} = {call}"
        rewrite = self.p.statement_rewrite(
            self.node, last, [definitions[0], "", definitions[1], "", statement], safe=False
        )
        return dataclasses.replace(rewrite, message=COND_MESSAGE)

    # -- structure ------------------------------------------------------------------

    def _blocks(self) -> tuple[list[nodes.NodeNG], list[nodes.NodeNG], nodes.NodeNG, bool]:
        """The two sides, the last statement replaced, and whether both sides return."""
        node = self.node
        body, orelse, last = list(node.body), list(node.orelse), node
        if len(orelse) == 1 and isinstance(orelse[0], nodes.If):
            raise Declined("an `elif` chain whose branches call code would need nested `torch.cond`; not rewritten")
        if _ends_in_return(body) and not orelse:
            following = node.next_sibling()
            if not isinstance(following, nodes.Return):
                raise Declined("only the `if` branch returns: control leaves the `if` on one side")
            orelse, last = [following], following
        returns = _ends_in_return(body)
        if returns != _ends_in_return(orelse):
            raise Declined("one branch returns and the other does not: control leaves the `if` on one side")
        return body, orelse, last, returns

    def _branch(self, block: Sequence[nodes.NodeNG]) -> _Branch:
        branch = _Branch()
        for index, statement in enumerate(block):
            if isinstance(statement, nodes.Pass):
                continue
            if isinstance(statement, nodes.Return) and index == len(block) - 1:
                if statement.value is None or _is_none(statement.value):
                    raise Declined(
                        f"line {statement.lineno}: a branch returns None; `torch.cond` branches return tensors"
                    )
                self._read(branch, statement.value)
                branch.returned = statement.value
                continue
            assignment = self._assignment(statement)
            self._read(branch, assignment.value)
            if assignment.name in branch.reads:
                branch.rebound.add(assignment.name)
            branch.fresh[assignment.name] = self._fresh(assignment.value, branch.fresh)
            branch.bindings[assignment.name] = assignment.value
            branch.statements.append(assignment)
        return branch

    def _assignment(self, statement: nodes.NodeNG) -> _Statement:
        """A plain assignment to a local name; any other statement is declined."""
        where = f"line {statement.lineno}: `{statement.as_string().splitlines()[0]}`"
        target: nodes.NodeNG | None = None
        annotation = ""
        if isinstance(statement, nodes.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        elif isinstance(statement, nodes.AnnAssign) and statement.value is not None:
            target, annotation = statement.target, f": {self.p.text(statement.annotation)}"
        elif isinstance(statement, nodes.Expr):
            raise Declined(f"{where} runs for its effect; `torch.cond` branches must trace whole and be free of side effects")
        elif isinstance(statement, nodes.AugAssign):
            raise Declined(f"{where} updates a value in place, which `torch.cond` forbids on its inputs")
        elif isinstance(statement, _LEAVES):
            raise Declined(f"{where} leaves the branch early")
        elif isinstance(statement, _BLOCKS):
            raise NestedControlFlow(f"{where}: nested control flow inside a branch is not moved into `torch.cond`")
        if not isinstance(target, nodes.AssignName):
            raise Declined(f"{where} is not a plain assignment to a local name")
        if target.name in self.mutations.declared_global:
            raise Declined(f"{where} assigns a `global`/`nonlocal` name, a side effect `torch.cond` forbids")
        return _Statement(target.name, target.name + annotation, statement.value, self.p.text(statement.value))

    def _read(self, branch: _Branch, value: nodes.NodeNG) -> None:
        """Check *value* for effects and note the names it reads that the branch has not bound yet."""
        self.p.check_effects(value)
        for call in value.nodes_of_class(nodes.Call):
            self._check_callee(call)
        for name in value.nodes_of_class(nodes.Name):
            if name.name not in branch.bindings:
                branch.reads.setdefault(name.name, name)

    # -- outputs --------------------------------------------------------------------

    def _assigned_outputs(self, true_side: _Branch, false_side: _Branch) -> dict[str, tuple[_Output, _Output]]:
        """name -> (true output, false output), for each name assigned in a branch and read outside the ``if``."""
        assigned = dict.fromkeys([*true_side.bindings, *false_side.bindings])
        outputs = {
            name: self._output_pair(name, true_side, false_side) for name in assigned if self._read_outside(name)
        }
        if not outputs:
            raise Declined("the branches assign nothing that is read after the `if`")
        return outputs

    def _output_pair(self, name: str, true_side: _Branch, false_side: _Branch) -> tuple[_Output, _Output]:
        pair = (self._assigned_output(name, true_side), self._assigned_output(name, false_side))
        self._check_compatible(f"`{name}`", *pair)
        return pair

    def _assigned_output(self, name: str, side: _Branch) -> _Output:
        value = side.bindings.get(name)
        if value is None:
            previous = self.p.previous_value(self.node, name)  # declines when there is no tensor value before the `if`
            side.reads[name] = None  # proven a tensor: an operand
            return _Output(f"{name}.clone()", None, previous.shape, cloned=True)
        self._check_tensor(value, f"`{name}` is assigned `{value.as_string()}`")
        fresh = side.fresh[name]
        return _Output(name if fresh else f"{name}.clone()", value, shape_operations(value), cloned=not fresh)

    def _returned_outputs(self, true_side: _Branch, false_side: _Branch) -> dict[str, tuple[_Output, _Output]]:
        """Position -> (true output, false output) for the returned values (a tuple is element-wise)."""
        left, right = true_side.returned, false_side.returned
        assert left is not None and right is not None  # both sides end in a return with a value
        if isinstance(left, nodes.Tuple) != isinstance(right, nodes.Tuple):
            raise Declined("one branch returns a tuple and the other a single value")
        pairs = list(zip(left.elts, right.elts)) if isinstance(left, nodes.Tuple) else [(left, right)]
        if isinstance(left, nodes.Tuple) and len(left.elts) != len(right.elts):
            raise Declined("the branches return tuples of different lengths")
        outputs: dict[str, tuple[_Output, _Output]] = {}
        for index, (first, second) in enumerate(pairs):
            pair = (self._returned_output(first, true_side), self._returned_output(second, false_side))
            self._check_compatible(f"return value {index + 1}", *pair)
            outputs[str(index)] = pair
        return outputs

    def _returned_output(self, value: nodes.NodeNG, side: _Branch) -> _Output:
        if _is_none(value):
            raise Declined("a branch returns None; `torch.cond` branches return tensors")
        self._check_tensor(value, f"a branch returns `{value.as_string()}`")
        fresh = self._fresh(value, side.fresh)
        text = self.p.text(value)
        return _Output(text if fresh else _cloned(value, text), value, shape_operations(value), cloned=not fresh)

    def _check_tensor(self, value: nodes.NodeNG, what: str) -> None:
        if not self._known_tensor(value):
            raise Declined(f"{what}, which is not known to be a tensor; `torch.cond` branches return tensors")

    def _known_tensor(self, value: nodes.NodeNG) -> bool:
        """A tensor for the value oracle, or a local bound once that the function feeds to a computing layer.

        The oracle leaves ``x`` in ``self.proj(x)`` unknown (submodules take
        flags as often as tensors); an ``nn.Linear`` or ``nn.Conv2d`` input
        must be a tensor, and it is what ``torch.cond`` operands must be.
        """
        if self.p.values.kind(value) is Kind.TENSOR:
            return True
        if not isinstance(value, nodes.Name) or len(self.function.locals.get(value.name, [])) != 1:
            return False
        for call in self.function.nodes_of_class(nodes.Call):
            first = call.args[0] if call.args else None
            if isinstance(first, nodes.Name) and first.name == value.name and self._computes(call):
                return True
        return False

    def _computes(self, call: nodes.Call) -> bool:
        """*call* calls a submodule built as a ``torch.nn`` layer that always returns a new tensor."""
        layer = self._layer(call)
        return (
            layer is not None
            and (self.p.values.qualified_name(layer.func) or "").rsplit(".", 1)[-1] in COMPUTING_LAYERS
        )

    def _check_compatible(self, what: str, first: _Output, second: _Output) -> None:
        """Decline outputs whose shapes or dtypes provably differ: ``torch.cond`` fails on them."""
        if not same_shape(first.shape, second.shape):
            raise Declined(f"the two values of {what} may have different shapes; `torch.cond` needs the same shape")
        dtypes = [self._evident_dtype(output.value) for output in (first, second)]
        if None not in dtypes and dtypes[0] != dtypes[1]:
            raise Declined(
                f"{what} is {dtypes[0]} on one side and {dtypes[1]} on the other; `torch.cond` needs one dtype"
            )

    def _read_outside(self, name: str) -> bool:
        """Whether the function reads *name* anywhere outside the ``if`` (after it, or earlier in a loop)."""
        return any(
            use.name == name and not contains(self.node, use) for use in self.function.nodes_of_class(nodes.Name)
        )

    # -- operands and closures --------------------------------------------------------

    def _operands(self, true_side: _Branch, false_side: _Branch) -> list[str]:
        """The local tensor names the branches read: the parameters of both functions, in order of first read."""
        reads = dict(true_side.reads)
        for name, use in false_side.reads.items():
            if name not in reads or use is None:
                reads[name] = use
        rebound = true_side.rebound | false_side.rebound
        operands: list[str] = []
        for name, use in reads.items():
            if name not in self.function.locals or self._is_self_parameter(name):
                continue  # a module-level name or the module itself: closed over, Dynamo lifts parameters
            if use is None or self._known_tensor(use):
                operands.append(name)
                continue
            if name in rebound:
                raise Declined(
                    f"`{name}` is read and then rebound in a branch, but is not a tensor, so it cannot be an operand"
                )
            mutation = self._mutation_of(name, inside_if=True)
            if mutation is not None:
                raise Declined(
                    f"a branch closes over `{name}`, which the function mutates in place (line {mutation}); "
                    "`torch.cond` branches may not close over mutated state"
                )
        return operands

    def _is_self_parameter(self, name: str) -> bool:
        arguments = self.function.args.args or []
        return self.function.is_method() and bool(arguments) and arguments[0].name == name

    def _check_clones(self, outputs: dict[str, tuple[_Output, _Output]]) -> None:
        """A clone cuts the alias the original had: decline when the function mutates through it elsewhere."""
        for name, pair in outputs.items():
            for output in pair:
                if not output.cloned:
                    continue
                source = output.value
                names = {name} if source is None else {n.name for n in source.nodes_of_class(nodes.Name)} | {name}
                for path in sorted(names):
                    line = self._mutation_of(path, inside_if=False)
                    if line is not None:
                        raise Declined(
                            f"`{path}` is mutated in place at line {line}; the `.clone()` `torch.cond` needs "
                            "(an output may not alias an input) would change what that mutation reaches"
                        )

    def _mutation_of(self, name: str, inside_if: bool) -> int | None:
        """Line of an in-place mutation of *name* (or its attributes), outside the ``if`` unless *inside_if*."""
        for event in self.mutations.events:
            if not event.mutates or event.path.partition(".")[0] != name:
                continue
            if inside_if or not contains(self.node, event.node):
                return int(event.node.lineno)
        return None

    def _function_names(self) -> tuple[str, str]:
        """``_gm_cond_true_<line>`` / ``_gm_cond_false_<line>``, suffixed until neither clashes with a name in scope."""
        taken = set(self.function.locals) | set(self.function.root().locals)
        taken |= {name.name for name in self.function.nodes_of_class((nodes.Name, nodes.AssignName))}
        attempt = 1
        while True:
            suffix = f"{self.node.lineno}" if attempt == 1 else f"{self.node.lineno}_{attempt}"
            names = (f"_gm_cond_true_{suffix}", f"_gm_cond_false_{suffix}")
            if not taken.intersection(names):
                return names
            attempt += 1

    # -- calls ------------------------------------------------------------------------

    def _check_callee(self, call: nodes.Call) -> None:
        """One level into project code: the function or method called must not mutate, print, log or use globals,
        nor be handed the value the test branches on."""
        layer = self._layer(call)
        if layer is not None and any(k.arg == "inplace" and _is_true(k.value) for k in layer.keywords or []):
            raise Declined(f"`{call.as_string()}` calls a layer built with `inplace=True`, which mutates its input")
        callee = self._callee(call)
        if callee is None:
            return
        tested = self._tested_name_in(call)
        if tested is not None:
            # diffusers' VQ-Diffusion: `if timestep == 0: ... else: self.q_posterior(..., timestep)`, whose helpers
            # index schedules with it; `torch.cond` traces the branch on a symbolic value and fails, in eager too
            raise Declined(
                f"`{call.as_string()}` is given `{tested}`, which the test branches on; code that needs that "
                "value cannot trace inside `torch.cond`"
            )
        effect = self._effect_in(callee)
        if effect is not None:
            raise Declined(f"`{call.as_string()}` {effect}; `torch.cond` branches must trace whole and be free of side effects")

    def _tested_name_in(self, call: nodes.Call) -> str | None:
        """A name the ``if`` test branches on itself (``timestep == 0``, ``if flag:``; not ``x`` of
        ``x.sum() > 0``) that *call* passes on, directly or inside an argument."""
        tested = {
            name.name
            for name in self.node.test.nodes_of_class(nodes.Name)
            if isinstance(name.parent, (nodes.Compare, nodes.BoolOp, nodes.UnaryOp)) or name is self.node.test
        }
        arguments = [*call.args, *(keyword.value for keyword in call.keywords or [])]
        for argument in arguments:
            for name in argument.nodes_of_class(nodes.Name):
                if name.name in tested and name.name != "self":
                    return name.name
        return None

    def _effect_in(self, function: nodes.FunctionDef) -> str | None:
        mutations = Mutations(function, self.p.values.qualified_name)
        if mutations.declared_global:
            return f"declares `{min(mutations.declared_global)}` global"
        for event in mutations.events:
            if event.mutates:
                return f"mutates `{event.path}` in place (line {event.node.lineno})"
        failure = self._failure_in(function)
        if failure is not None:
            return failure
        finder = SideEffectFinder(self.p.values)
        for inner in function.nodes_of_class(nodes.Call):
            effect = finder.classify(inner)
            if effect is not None:
                return f"calls `{effect.label}` (line {inner.lineno})"
            if self.p.values.qualified_name(inner.func) in EFFECTFUL_TORCH_CALLS:
                return f"prints from the graph (line {inner.lineno})"
        return None

    def _failure_in(self, function: nodes.FunctionDef) -> str | None:
        """A ``raise``/``assert`` or a branch on a tensor value in *function*'s own body.

        Either breaks the callee's graph, and a graph break inside a ``torch.cond`` branch is an
        error even in eager mode (``torch.cond`` compiles its branches with ``fullgraph=True``);
        run on both sides instead (the ``where`` fallback), a check meant for one side would raise
        for the other.
        """
        skipped = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)
        for statement in function.nodes_of_class((nodes.Raise, nodes.Assert), skip_klass=skipped):
            return f"may raise (line {statement.lineno})"
        for branch in function.nodes_of_class((nodes.If, nodes.While, nodes.IfExp), skip_klass=skipped):
            if self.p.values.is_tensor(branch.test):
                return f"branches on a tensor value (line {branch.lineno})"
        return None

    def _callee(self, call: nodes.Call) -> nodes.FunctionDef | None:
        """The project function, method of ``self``, or local module's ``forward`` that *call* runs."""
        func = call.func
        if isinstance(func, nodes.Name):
            return next((found for found in _lookup(func) if isinstance(found, nodes.FunctionDef)), None)
        if not (isinstance(func, nodes.Attribute) and _on_self(func.expr)):
            return None
        klass = enclosing_class(call)
        if klass is None:
            return None
        method = klass.locals.get(func.attrname, [None])[0]
        if isinstance(method, nodes.FunctionDef):
            return method
        for value in assigned_self_values(klass, func.attrname):
            if isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name):
                for found in _lookup(value.func):
                    forward = found.locals.get("forward", [None])[0] if isinstance(found, nodes.ClassDef) else None
                    if isinstance(forward, nodes.FunctionDef):
                        return forward
        return None

    def _layer(self, call: nodes.Call) -> nodes.Call | None:
        """The ``torch.nn.<Layer>(...)`` construction of the submodule ``self.<name>`` that *call* calls."""
        func = call.func
        if not (isinstance(func, nodes.Attribute) and _on_self(func.expr)):
            return None
        klass = enclosing_class(call)
        for value in assigned_self_values(klass, func.attrname) if klass is not None else ():
            name = self.p.values.qualified_name(value.func) if isinstance(value, nodes.Call) else None
            if name is not None and name.startswith("torch.nn."):
                return value
        return None

    def _fresh(self, value: nodes.NodeNG, bound: dict[str, bool], depth: int = 0) -> bool:
        """Whether *value* is provably a new tensor, never an input, a view of one or a parameter."""
        if isinstance(value, (nodes.BinOp, nodes.Compare)):
            return True
        if isinstance(value, nodes.UnaryOp):
            return value.op in {"-", "~"}
        if isinstance(value, nodes.Name):
            return bound.get(value.name, False)
        if not isinstance(value, nodes.Call):
            return False
        operation = _torch_op(self.p, value)
        if operation is not None:
            return operation not in ALIASING_OPS
        if self._layer(value) is not None:
            return self._computes(value)
        callee = self._callee(value)
        if callee is None or depth >= _CALLEE_DEPTH:
            return False
        returns = [r.value for r in callee.nodes_of_class(nodes.Return, skip_klass=(nodes.FunctionDef, nodes.Lambda))]
        return bool(returns) and all(r is not None and self._fresh(r, {}, depth + 1) for r in returns)

    def _evident_dtype(self, value: nodes.NodeNG | None) -> str | None:
        """The dtype *value* provably has (a comparison, ``.float()``, ``.to(torch.float64)``, ``dtype=``)."""
        if isinstance(value, nodes.Compare):
            return "bool"
        if not isinstance(value, nodes.Call):
            return None
        func = value.func
        method = func.attrname if isinstance(func, nodes.Attribute) and not value.args else None
        if method in DTYPE_METHODS and self.p.values.kind(func.expr) is Kind.TENSOR:
            return DTYPE_METHODS[method]
        candidates = [k.value for k in value.keywords or [] if k.arg == "dtype"]
        if isinstance(func, nodes.Attribute) and func.attrname == "to":
            candidates += value.args[:1]
        for candidate in candidates:
            name = self.p.values.qualified_name(candidate)
            if name is not None and name.startswith("torch."):
                short = name.removeprefix("torch.")
                return DTYPE_ALIASES.get(short, short)
        return None


def _definition(name: str, parameters: str, side: _Branch, outputs: list[tuple[str, _Output]], returns: bool) -> str:
    """The local function for one side: its assignments, then the return of its outputs.

    A single output bound by the branch's last assignment is returned directly
    (``return v`` rather than ``h = v`` then ``return h``).
    """
    statements = list(side.statements)
    results = [output.text for _, output in outputs]
    if not returns and len(outputs) == 1 and statements and statements[-1].name == outputs[0][0]:
        last, output = statements.pop(), outputs[0][1]
        results = [_cloned(last.value, last.text) if output.cloned else last.text]
    body = [*(f"{statement.target} = {statement.text}" for statement in statements), f"return {', '.join(results)}"]
    return f"def {name}({parameters}):\n" + "\n".join(f"    {line}" for line in body)


def _branch_values(node: nodes.If) -> Iterator[nodes.NodeNG]:
    """Every value the branches of *node* assign or return (through ``elif``s), and a following ``return``'s."""
    for statement in _statements(node):
        value = getattr(statement, "value", None)
        if isinstance(statement, (nodes.Assign, nodes.AugAssign, nodes.AnnAssign, nodes.Return)) and value is not None:
            yield value
    if not node.orelse and _ends_in_return(node.body):
        following = node.next_sibling()
        if isinstance(following, nodes.Return) and following.value is not None:
            yield following.value


def _statements(node: nodes.If) -> Iterator[nodes.NodeNG]:
    for statement in [*node.body, *node.orelse]:
        yield statement
        if isinstance(statement, nodes.If):
            yield from _statements(statement)


def _runs_user_code(predicator: Predicator, call: nodes.Call) -> bool:
    """Anything but a torch function, a tensor's method, a pure builtin or host math: a submodule, a helper..."""
    if _torch_op(predicator, call) is not None:
        return False
    func = call.func
    qualified = predicator.values.qualified_name(func)
    if qualified is not None and qualified.startswith(PURE_MODULES):
        return False
    return not (isinstance(func, nodes.Name) and func.name in PURE_BUILTINS and is_builtin_call(call, func.name))


def _torch_op(predicator: Predicator, call: nodes.Call) -> str | None:
    """The short name of the torch function (``torch.relu``, ``F.gelu``) or tensor method *call* runs, else None."""
    func = call.func
    qualified = predicator.values.qualified_name(func)
    if qualified is not None and qualified.startswith("torch."):
        return qualified.rsplit(".", 1)[-1]
    if (
        isinstance(func, nodes.Attribute)
        and not _on_self(func.expr)
        and predicator.values.kind(func.expr) is Kind.TENSOR
    ):
        return func.attrname
    return None


def _on_self(node: nodes.NodeNG) -> bool:
    """``self``: its attributes are submodules or methods, never tensor methods."""
    return isinstance(node, nodes.Name) and node.name == "self"


def _ends_in_return(block: Sequence[nodes.NodeNG]) -> bool:
    return bool(block) and isinstance(block[-1], nodes.Return)


def _is_none(value: nodes.NodeNG) -> bool:
    return isinstance(value, nodes.Const) and value.value is None


def _is_true(value: nodes.NodeNG) -> bool:
    return isinstance(value, nodes.Const) and value.value is True


def _cloned(value: nodes.NodeNG, text: str) -> str:
    """``text.clone()``, parenthesised unless *value* is a primary."""
    primary = isinstance(value, (nodes.Name, nodes.Attribute, nodes.Call, nodes.Subscript))
    return f"{text}.clone()" if primary else f"({text}).clone()"


def _lookup(name: nodes.Name) -> list[nodes.NodeNG]:
    try:
        return list(name.lookup(name.name)[1])
    except Exception:  # astroid lookups can fail on odd code; treat as unknown
        return []
