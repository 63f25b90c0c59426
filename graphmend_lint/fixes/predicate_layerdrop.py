"""LayerDrop's ``if torch.rand([]) < p: continue``: the one ``continue`` GM101 rewrites.

transformers skips a whole layer while training (LayerDrop)::

    for idx, decoder_layer in enumerate(self.layers):
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if dropout_probability < self.layerdrop:
                continue

        hidden_states = decoder_layer(hidden_states, attention_mask, ...)

The ``if`` on the draw is a data-dependent branch (GB0170) in every training
step. The rewrite keeps the eager code as it is and gives the compiler a
branch-free path::

        _gm_dropped = None
        if self.training and self.layerdrop > 0.0:
            dropout_probability = torch.rand([])
            if torch.compiler.is_compiling():
                _gm_dropped = dropout_probability < self.layerdrop
                _gm_kept_hidden_states = hidden_states
            elif dropout_probability < self.layerdrop:
                continue

        hidden_states = decoder_layer(hidden_states, attention_mask, ...)
        if _gm_dropped is not None:
            hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)

Why not ``torch.cond`` over the rest of the loop body, which would run only the
taken side? Measured on torch 2.13.0 (CPU), a 6-layer toy with ``nn.Dropout``
inside each layer: outputs and the RNG state after the forward equal the
original's, but cond's backward re-runs the layer's forward, so dropout draws a
new mask there: the gradients are not those of the computed outputs (max
difference 1.86 in eager, with the ``eager``/``aot_eager`` backends and with
inductor), and the RNG state after ``backward`` differs. Without dropout the
gradients agree, except that the skipped layers' parameters get zeros where
the original left ``.grad`` at ``None``. Also, in eager mode cond compiles its
branches: the second dropout probability the same branch code meets becomes a
symbolic float and tracing fails ("Could not guard on data-dependent
expression zuf0 < 0.0"). ``torch.where`` without the eager guard runs every
layer in eager mode too, so dropout draws extra masks and every later output
changes.

Three shapes are rewritten (always *unsafe*), each proven before:

* ``if draw < p: continue``, with the rest of the loop body as the layer;
* ``flag = False`` ... ``if draw < p: flag = True``, then ``if not flag:`` whose
  body is the layer (BART's encoders), or ``if flag: <placeholders> else:
  <layer>`` (LED's encoder: ``layer_outputs = (None, None)``); the ``if``
  becomes the ``elif`` of the compiled twin, as above;
* ``flag = False`` ... ``flag = draw < p``, then ``if not flag or S:`` (wav2vec2's
  ``skip_the_layer``; ``S`` a plain Python value such as ``synced_gpus``, which
  runs the layer anyway): the assignment moves under ``else:`` of the compiled
  twin, and the select is skipped when ``S`` holds. GM101 reports this ``if``
  through :func:`layerdrop_gate`, since the value oracle cannot type a flag that
  is ``False`` or a tensor.

What is proven:

* the draw is ``torch.rand(...)`` (a name bound by the statement just before the
  comparison, or the call itself), compared with ``<``/``<=`` against a value
  not known to be a tensor (``self.layerdrop``);
* it sits in a ``for`` loop's body, directly or as the last statement of
  ``if`` guards (not on tensors) without ``else``; a flag is bound nowhere but
  ``flag = False`` earlier in the loop body and the draw, and read only by the
  gate;
* the layer is assignments to names, and every name it assigns that is read
  elsewhere (after it, or in the next iteration) holds a tensor before the
  loop: that value is what a dropped layer keeps; or ``None`` (WavLM's
  ``position_bias``, computed by the first layer, which ``i > 0`` keeps from
  being dropped): the compiled twin then also needs ``position_bias is not
  None``, a Python test Dynamo decides while tracing, so a draw that meets it
  still ``None`` runs the original code;
* the layer, and the loop body after a flag's gate, may also hold
  ``if output_attentions: ...`` (no ``else``, on a name the loop never binds):
  a dropped layer adds nothing (or its placeholders) there, which a compiled
  path running every layer cannot honour, so the compiled twin is taken only
  while such switches are off (``if torch.compiler.is_compiling() and not
  output_attentions:``); otherwise the original code and its break stay.

Once the draw is proven, a decline is a :class:`LayerDropDeclined`, whose reason
GM101 shows; otherwise an ``if not flag`` falls through to the other rewrites.
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.mutations import contains
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.diagnostics import Position
from graphmend_lint.fixes.predicate import Declined, Predicator, Rewrite

LAYERDROP_MESSAGE = (
    "LayerDrop without a graph break: under `torch.compile` the layer runs and `torch.where` keeps its input "
    "when dropped; eager code is unchanged"
)
FLAG = "_gm_dropped"
KEPT = "_gm_kept_"


class LayerDropDeclined(Declined):
    """The ``if`` is LayerDrop's (a ``torch.rand`` draw decides), but the rest of the rewrite is not proven."""


def is_layerdrop(node: nodes.If) -> bool:
    """The shapes this module may rewrite: ``if <test>: continue``, ``if <test>: flag = True``, ``if not flag...:``."""
    if node.orelse:
        return False
    if len(node.body) == 1 and (isinstance(node.body[0], nodes.Continue) or _flag_set(node.body[0]) is not None):
        return True
    return _gate_flag(node) is not None


def layerdrop_rewrite(predicator: Predicator, node: nodes.If) -> Rewrite:
    """The compiled-only ``torch.where`` LayerDrop of *node*; raises :class:`Declined` unless the shape is proven."""
    if _gate_flag(node) is not None:
        drop = _gate_drop(predicator.values, node)
    else:
        guards, test = _split_guards(node.test)
        _check_draw(predicator.values, test, node)
    try:
        if _gate_flag(node) is None:
            _check_guards(predicator.values, guards)
            loop, top = _enclosing_loop(predicator.values, node)
            drop = _Drop(loop, top, node, test, _layer_statements(loop, top, node), guards=guards)
        kept, unset = _kept_names(predicator, drop)
        used = {name.name for name in drop.loop.nodes_of_class((nodes.Name, nodes.AssignName))}
        if used & {FLAG, *(KEPT + name for name in kept)}:
            raise Declined(f"the loop already uses `{FLAG}` or `{KEPT}<name>`, which the rewrite needs")
        return _rewrite(predicator, drop, kept, unset)
    except Declined as reason:
        raise LayerDropDeclined(f"LayerDrop: {reason}") from None


@dataclass(frozen=True)
class _Drop:
    """One proven LayerDrop: where the draw decides, and which statements a dropped layer skips."""

    loop: nodes.For
    top: nodes.NodeNG  # the statement of the loop body that holds the decision
    decision: nodes.NodeNG  # the ``if draw < p`` (kept as an ``elif``) or the ``flag = draw < p`` (kept under ``else``)
    test: nodes.NodeNG  # ``draw < p``
    rest: list[nodes.NodeNG]  # the dropped layer
    #: Python operands of ``if not flag or synced_gpus:`` that run the layer anyway (they stop the select)
    runs_anyway: tuple[nodes.NodeNG, ...] = ()
    #: Python operands ``G`` of ``if G and draw < p:`` (``self.training``): the compiled twin needs them too
    guards: tuple[nodes.NodeNG, ...] = ()


def layerdrop_gate(values: ValueOracle, node: nodes.If) -> tuple[nodes.NodeNG, nodes.NodeNG] | None:
    """``(not flag, flag = draw < p)`` of ``if not flag [or S]:`` when ``flag`` is a proven LayerDrop draw.

    The value oracle cannot call ``flag`` a tensor (it is ``False`` or a tensor), but Dynamo
    breaks on it in every training step: GM101 reports it through this, with the draw's
    gates (``self.training``).
    """
    if node.orelse or _gate_flag(node) is None:
        return None
    try:
        drop = _gate_drop(values, node)
    except Declined:
        return None
    return (node.test.values[0] if isinstance(node.test, nodes.BoolOp) else node.test), drop.decision


def _split_guards(test: nodes.NodeNG) -> tuple[tuple[nodes.NodeNG, ...], nodes.NodeNG]:
    """``(G, ...), draw < p`` of ``G and ... and draw < p``; ``(), test`` for any other test.

    LED's and FSMT's encoders in transformers 4.x write ``if self.training and (dropout_probability <
    self.layerdrop): continue``.
    """
    if isinstance(test, nodes.BoolOp) and test.op == "and":
        *guards, draw = test.values
        return tuple(guards), draw
    return (), test


def _check_guards(values: ValueOracle, guards: tuple[nodes.NodeNG, ...]) -> None:
    """Each ``G`` of ``G and draw < p`` is a plain Python value (no tensor, no call).

    Dynamo decides such a value while tracing, so the compiled twin can test it too (and skip the
    select where the original never draws), and reading it once more has no effect.
    """
    for guard in guards:
        if values.kind(guard) is Kind.TENSOR or any(True for _ in guard.nodes_of_class(nodes.Call)):
            raise Declined(f"`{guard.as_string()}` is not a plain Python value, so the twin cannot test it")


def _check_draw(values: ValueOracle, test: nodes.NodeNG, statement: nodes.NodeNG) -> None:
    """``draw < p`` / ``draw <= p``: ``draw`` is ``torch.rand(...)`` or a name *statement*'s previous one binds to it."""
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in {"<", "<="}):
        raise Declined("control leaves one branch only, and the condition is not LayerDrop's `draw < p`")
    threshold = test.ops[0][1]
    if values.kind(threshold) is Kind.TENSOR:
        raise Declined(f"`{threshold.as_string()}` is a tensor, so this is not LayerDrop's `draw < p`")
    draw = test.left
    if isinstance(draw, nodes.Name):
        previous = statement.previous_sibling()
        bindings = _bindings(draw)
        if not (
            isinstance(previous, nodes.Assign)
            and len(bindings) == 1
            and bindings[0].parent is previous
            and len(previous.targets) == 1
        ):
            raise Declined(f"`{draw.name}` is not bound once, by the statement just before the LayerDrop test")
        draw = previous.value
    if not (isinstance(draw, nodes.Call) and values.qualified_name(draw.func) == "torch.rand"):
        raise Declined("control leaves one branch only, and the condition is not a `torch.rand` draw")


def _gate_flag(node: nodes.If) -> str | None:
    """``if not flag:`` / ``if not flag or <more>:``: the flag's name (wav2vec2's ``skip_the_layer``)."""
    test = node.test
    first = test.values[0] if isinstance(test, nodes.BoolOp) and test.op == "or" else test
    if isinstance(first, nodes.UnaryOp) and first.op == "not" and isinstance(first.operand, nodes.Name):
        return first.operand.name
    return None


def _gate_drop(values: ValueOracle, node: nodes.If) -> _Drop:
    """``flag = False``; guards; ``flag = draw < p``; then ``if not flag [or S]: <layer>``."""
    flag = _gate_flag(node)
    loop = node.parent
    if not isinstance(loop, nodes.For) or node not in loop.body or loop.body.index(node) == 0:
        raise Declined(f"`if not {flag}` is not in a `for` loop's body after the LayerDrop draw")
    runs_anyway = tuple(node.test.values[1:]) if isinstance(node.test, nodes.BoolOp) else ()
    for operand in runs_anyway:
        if values.kind(operand) is Kind.TENSOR or any(True for _ in operand.nodes_of_class(nodes.Call)):
            raise Declined(f"`{operand.as_string()}` is not a plain Python value, so the layer's gate is not proven")
    top = loop.body[loop.body.index(node) - 1]
    decision = top
    while isinstance(decision, nodes.If):
        if decision.orelse or values.kind(decision.test) is Kind.TENSOR:
            raise Declined("the LayerDrop draw sits in an `if` with `else` or on a tensor")
        decision = decision.body[-1]
    if not (_assigns(decision) == flag and isinstance(decision.value, nodes.Compare)):
        raise Declined(f"the statement before `if not {flag}` does not end in `{flag} = draw < p`")
    _check_draw(values, decision.value, decision)
    _check_flag_uses(loop, flag, top, node.test, decision)
    return _Drop(loop, top, decision, decision.value, list(node.body), runs_anyway)


def _enclosing_loop(values: ValueOracle, node: nodes.If) -> tuple[nodes.For, nodes.NodeNG]:
    """The ``for`` loop and the statement of its body that holds *node* (itself, or its guard ``if``)."""
    statement: nodes.NodeNG = node
    while isinstance(statement.parent, nodes.If):
        guard = statement.parent
        if statement is not guard.body[-1] or guard.orelse or values.kind(guard.test) is Kind.TENSOR:
            raise Declined(
                "the LayerDrop `if` is not the last statement of `if` guards (not on tensors) without `else`"
            )
        statement = guard
    loop = statement.parent
    if not isinstance(loop, nodes.For) or statement not in loop.body:
        raise Declined("the LayerDrop `continue` is not in the body of a `for` loop")
    return loop, statement


def _layer_statements(loop: nodes.For, top: nodes.NodeNG, node: nodes.If) -> list[nodes.NodeNG]:
    """The statements a dropped layer skips.

    After ``continue``: the rest of the loop body. After ``flag = True``: the body of the
    ``if not flag:`` right after the LayerDrop statement, or the ``else`` of an ``if flag:``
    whose body only fills in placeholders (``layer_outputs = (None, None)``, LED's encoder),
    where ``flag = False`` starts the iteration and nothing else reads or binds ``flag``.
    """
    index = loop.body.index(top)
    flag = _flag_set(node.body[0])
    if flag is None:
        return list(loop.body[index + 1 :])
    following = loop.body[index + 1] if index + 1 < len(loop.body) else None
    test = following.test if isinstance(following, nodes.If) else None
    read = test.operand if isinstance(test, nodes.UnaryOp) and test.op == "not" and not following.orelse else test
    if isinstance(read, nodes.Name) and read is test and following.orelse:
        if not all(_fills_placeholder(statement) for statement in following.body):
            raise Declined(f"the `if {flag}:` side does more than fill in placeholders such as `(None, None)`")
        layer = list(following.orelse)
    elif isinstance(read, nodes.Name) and read is not test:
        layer = list(following.body)
    else:
        raise Declined(
            f"the LayerDrop `if` sets `{flag}`, but the next statement is neither `if not {flag}:` without `else` "
            f"nor `if {flag}: <placeholders> else: <layer>`"
        )
    if read.name != flag:
        raise Declined(f"the statement after the LayerDrop `if` does not test `{flag}`")
    _check_flag_uses(loop, flag, top, test, node.body[0])
    return layer


def _fills_placeholder(statement: nodes.NodeNG) -> bool:
    """``name = None`` / ``name = (None, None)``: what a dropped layer leaves for output switches to read."""
    if _assigns(statement) is None:
        return False
    value = statement.value
    elements = value.elts if isinstance(value, nodes.Tuple) else [value]
    return all(isinstance(element, nodes.Const) and element.value is None for element in elements)


def _check_flag_uses(loop: nodes.For, flag: str, top: nodes.NodeNG, gate: nodes.NodeNG, setter: nodes.NodeNG) -> None:
    """``flag = False`` before *top* in the loop body, *setter*, and one read in *gate*: nothing else.

    A last ``if flag: continue`` of the loop body (nllb-moe's decoder) does nothing and is allowed:
    under compile the flag stays ``False`` there.
    """
    function = loop.scope()
    reads = [use for use in function.nodes_of_class(nodes.Name) if use.name == flag and not _ends_iteration(loop, use)]
    starts = [b.parent for b in function.nodes_of_class(nodes.AssignName) if b.name == flag and b.parent is not setter]
    if (
        len(reads) != 1
        or not contains(gate, reads[0])
        or len(starts) != 1
        or starts[0] not in loop.body[: loop.body.index(top)]
        or not _assigns_constant(starts[0], False)
    ):
        raise Declined(f"`{flag}` is read or bound elsewhere than `{flag} = False`, the LayerDrop draw and its gate")


def _ends_iteration(loop: nodes.For, use: nodes.Name) -> bool:
    """*use* is the test of ``if flag: continue``, the last statement of *loop*'s body: a no-op."""
    last = loop.body[-1]
    return (
        isinstance(last, nodes.If)
        and last.test is use
        and not last.orelse
        and len(last.body) == 1
        and isinstance(last.body[0], nodes.Continue)
    )


def _flag_set(statement: nodes.NodeNG) -> str | None:
    """``flag = True``: the flag's name."""
    return _assigns(statement) if _assigns_constant(statement, True) else None


def _assigns(statement: nodes.NodeNG) -> str | None:
    """``name = ...``: the name."""
    if isinstance(statement, nodes.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return target.name if isinstance(target, nodes.AssignName) else None
    return None


def _assigns_constant(statement: nodes.NodeNG, value: bool) -> bool:
    return (
        _assigns(statement) is not None
        and isinstance(statement.value, nodes.Const)
        and statement.value.value is value
    )


def _kept_names(predicator: Predicator, drop: _Drop) -> tuple[list[str], list[str]]:
    """The names the dropped layer assigns and something else reads (a dropped layer keeps their value), and
    those of them that are ``None`` before the loop (WavLM's ``position_bias``, which its first layer computes).

    A ``None`` cannot be selected with ``torch.where``, so the compiled twin is taken only once such a
    name holds a value (``... and position_bias is not None``, which Dynamo decides while tracing):
    until then the original code runs.
    """
    loop, top, rest = drop.loop, drop.top, drop.rest
    if not rest:
        raise Declined("no statement follows the LayerDrop `if` in the loop, so there is no layer to drop")
    assigned: list[str] = []
    carried: set[str] = set()
    for statement in rest:
        if _is_output_switch(predicator.values, loop, statement):
            continue  # the compiled twin is taken only while it is off
        targets = _assigned_names(statement)
        if targets is None:
            raise Declined(
                f"the rest of the loop body holds `{statement.as_string().splitlines()[0]}`; only assignments "
                "to names and `if <flag>:` on a Python flag are rewritten"
            )
        carried |= {use.name for use in statement.value.nodes_of_class(nodes.Name)} - set(assigned)
        assigned += [name for name in targets if name not in assigned]
    function = loop.scope()
    inside = [*rest, *_output_switches(predicator.values, drop)]  # a switch is off whenever the twin runs
    kept = [
        name
        for name in assigned
        if name in carried
        or any(use.name == name and not any(contains(s, use) for s in inside) for use in function.nodes_of_class(nodes.Name))
    ]
    if not kept:
        raise Declined("the rest of the loop body assigns nothing read elsewhere, so there is nothing to keep")
    unset = [name for name in kept if not _holds_tensor(predicator, top, name)]
    for name in unset:
        if not _starts_none(top, name):
            raise Declined(
                f"`{name}` is not known to hold a tensor or `None` before the loop, so a dropped layer has no value to keep"
            )
    return kept, unset


def _output_switches(values: ValueOracle, drop: _Drop) -> list[nodes.If]:
    """The output switches in the dropped layer and, after a flag's gate, in the rest of the loop body."""
    holder = drop.rest[0].parent
    after = drop.loop.body[drop.loop.body.index(holder) + 1 :] if holder in drop.loop.body else []
    return [statement for statement in [*drop.rest, *after] if _is_output_switch(values, drop.loop, statement)]


def _is_output_switch(values: ValueOracle, loop: nodes.For, statement: nodes.NodeNG) -> bool:
    """``if output_attentions: ...`` without ``else``, on a name the loop never binds and that is no tensor.

    A dropped layer adds nothing to ``all_self_attns`` in the original, so a compiled path that
    runs every layer cannot honour such a switch: the compiled twin is taken only while every
    switch is off, and otherwise the original ``continue`` (and its graph break) stays.
    """
    if not (isinstance(statement, nodes.If) and not statement.orelse and isinstance(statement.test, nodes.Name)):
        return False
    name = statement.test.name
    bound = any(binding.name == name for binding in loop.nodes_of_class(nodes.AssignName))
    return not bound and values.kind(statement.test) is not Kind.TENSOR


def _holds_tensor(predicator: Predicator, statement: nodes.NodeNG, name: str) -> bool:
    """Whether *name* holds a tensor when *statement* runs: its nearest earlier binding assigns one.

    The nearest binding is what a layer-by-layer encoder's ``hidden_states = self.dropout(hidden_states)``
    leaves before its loop; when it says nothing (a call the oracle cannot type), the function-wide
    check of :meth:`Predicator.previous_value` decides.
    """
    earlier = [
        binding
        for binding in statement.scope().nodes_of_class(nodes.AssignName)
        if binding.name == name and binding.lineno < statement.lineno
    ]
    nearest = max(earlier, key=lambda binding: binding.lineno, default=None)
    if nearest is not None and _assigns(nearest.parent) == name:
        if predicator.values.kind(nearest.parent.value) is Kind.TENSOR:
            return True
    try:
        predicator.previous_value(statement, name)
    except Declined:
        return False
    return True


def _starts_none(statement: nodes.NodeNG, name: str) -> bool:
    """The nearest binding of *name* before *statement* is ``name = None``."""
    earlier = [
        binding
        for binding in statement.scope().nodes_of_class(nodes.AssignName)
        if binding.name == name and binding.lineno < statement.lineno
    ]
    nearest = max(earlier, key=lambda binding: binding.lineno, default=None)
    return nearest is not None and _assigns(nearest.parent) == name and _assigns_constant_none(nearest.parent)


def _assigns_constant_none(statement: nodes.Assign) -> bool:
    return isinstance(statement.value, nodes.Const) and statement.value.value is None


def _assigned_names(statement: nodes.NodeNG) -> list[str] | None:
    """``a = ...`` / ``a, b = ...``: the names; ``None`` for any other statement."""
    if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    elements = target.elts if isinstance(target, (nodes.Tuple, nodes.List)) else [target]
    if not all(isinstance(element, nodes.AssignName) for element in elements):
        return None
    return [element.name for element in elements]


def _rewrite(predicator: Predicator, drop: _Drop, kept: list[str], unset: list[str]) -> Rewrite:
    """Three insertions, as one replacement from the loop statement holding the draw to the end of the dropped layer.

    The decision gets a compiled twin before it: an ``if d < p:`` becomes the ``elif`` of
    ``if torch.compiler.is_compiling():``, a ``flag = d < p`` moves under its ``else:``.
    """
    analysis, torch = predicator.analysis, predicator.torch
    source = analysis.source
    start = analysis.start_of(drop.top)
    end_line = analysis.end_of(drop.rest[-1]).line
    end = Position(end_line, len(source.line(end_line)))
    top_indent = _indent(predicator, drop.top)
    indent = _indent(predicator, drop.decision)
    rest_indent = _indent(predicator, drop.rest[0])
    compiled = [f"{FLAG} = {predicator.text(drop.test)}", *(f"{KEPT}{name} = {name}" for name in kept)]
    switches = list(dict.fromkeys(predicator.text(s.test) for s in _output_switches(predicator.values, drop)))
    guards = [Predicator.parenthesised(predicator.text(guard)) for guard in drop.guards]
    when = " and ".join([f"{torch}.compiler.is_compiling()", *guards, *(f"{name} is not None" for name in unset)])
    if switches:
        when += f" and not {Predicator.parenthesised(' or '.join(switches))}"
    twin = [f"if {when}:\n", *(f"{indent}    {line}\n" for line in compiled)]
    text = source.text
    decision_start = source.offset(analysis.start_of(drop.decision))
    if isinstance(drop.decision, nodes.If):
        twin.append(f"{indent}el")
        decision = text[decision_start : source.offset(end)]
    else:
        decision_end = source.offset(analysis.end_of(drop.decision))
        eager = text[decision_start:decision_end].replace("\n", "\n    ")
        twin.append(f"{indent}else:\n{indent}    {eager}")
        decision = text[decision_end : source.offset(end)]
    selected = f"{FLAG} is not None"
    if drop.runs_anyway:
        anyway = " or ".join(predicator.text(operand) for operand in drop.runs_anyway)
        selected += f" and not {Predicator.parenthesised(anyway)}"
    selects = [f"{name} = {torch}.where({FLAG}, {KEPT}{name}, {name})" for name in kept]
    tail = "".join([f"\n{rest_indent}if {selected}:", *(f"\n{rest_indent}    {line}" for line in selects)])
    head = text[source.offset(start) : decision_start]
    content = f"{FLAG} = None\n{top_indent}{head}{''.join(twin)}{decision}{tail}"
    return Rewrite(start, end, content, safe=False, message=LAYERDROP_MESSAGE)


def _indent(predicator: Predicator, statement: nodes.NodeNG) -> str:
    start = predicator.analysis.start_of(statement)
    indent = predicator.analysis.source.line(start.line)[: start.col]
    if indent.strip():
        raise Declined("the LayerDrop `if` shares its line with other code")
    return indent


def _bindings(name: nodes.Name) -> list[nodes.NodeNG]:
    try:
        return list(name.lookup(name.name)[1])
    except Exception:  # astroid lookups can fail on odd code; treat as unknown
        return []
