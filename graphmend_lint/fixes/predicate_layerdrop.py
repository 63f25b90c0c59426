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

The rewrite (always *unsafe*) is offered only for that shape, proven:

* the ``if`` compares a ``torch.rand(...)`` draw (a name bound by the statement
  just before, or the call itself) with ``<``/``<=`` against a value not known
  to be a tensor (``self.layerdrop``), and its body is ``continue`` alone;
* it sits in a ``for`` loop's body, directly or as the last statement of
  ``if`` guards (not on tensors) without ``else``;
* the rest of the loop body is assignments to names, and every name it
  assigns that is read elsewhere (after it, or in the next iteration) already
  holds a tensor before the loop: that value is what a dropped layer keeps.
"""

from __future__ import annotations

from collections.abc import Sequence

from astroid import nodes

from graphmend_lint.analysis.mutations import contains
from graphmend_lint.analysis.values import Kind
from graphmend_lint.diagnostics import Position
from graphmend_lint.fixes.predicate import Declined, Predicator, Rewrite

LAYERDROP_MESSAGE = (
    "LayerDrop without a graph break: under `torch.compile` the layer runs and `torch.where` keeps its input "
    "when dropped; eager code is unchanged"
)
FLAG = "_gm_dropped"
KEPT = "_gm_kept_"


def is_layerdrop_skip(node: nodes.If) -> bool:
    """``if <test>: continue`` or ``if <test>: flag = True``, nothing else: the shapes this module may rewrite."""
    return (
        len(node.body) == 1
        and not node.orelse
        and (isinstance(node.body[0], nodes.Continue) or _flag_set(node.body[0]) is not None)
    )


def layerdrop_rewrite(predicator: Predicator, node: nodes.If) -> Rewrite:
    """The compiled-only ``torch.where`` LayerDrop of *node*; raises :class:`Declined` unless the shape is proven."""
    _check_draw(predicator, node)
    loop, top = _enclosing_loop(predicator, node)
    rest = _layer_statements(loop, top, node)
    kept = _kept_names(predicator, loop, top, rest)
    if any(name.name in (FLAG, *(KEPT + k for k in kept)) for name in loop.nodes_of_class((nodes.Name, nodes.AssignName))):
        raise Declined(f"the loop already uses `{FLAG}`, which the rewrite needs")
    return _rewrite(predicator, node, top, rest, kept)


def _check_draw(predicator: Predicator, node: nodes.If) -> None:
    """``draw < p`` / ``draw <= p`` where ``draw`` is ``torch.rand(...)`` and ``p`` a Python value."""
    test = node.test
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in {"<", "<="}):
        raise Declined("control leaves one branch only (`continue`), and the `if` is not LayerDrop's `draw < p`")
    threshold = test.ops[0][1]
    if predicator.values.kind(threshold) is Kind.TENSOR:
        raise Declined(f"`{threshold.as_string()}` is a tensor, so this is not LayerDrop's `draw < p`")
    draw = test.left
    if isinstance(draw, nodes.Name):
        previous = node.previous_sibling()
        bindings = _bindings(draw)
        if not (
            isinstance(previous, nodes.Assign)
            and len(bindings) == 1
            and bindings[0].parent is previous
            and len(previous.targets) == 1
        ):
            raise Declined(f"`{draw.name}` is not bound once, by the statement just before the `if`")
        draw = previous.value
    if not (isinstance(draw, nodes.Call) and predicator.values.qualified_name(draw.func) == "torch.rand"):
        raise Declined("control leaves one branch only (`continue`), and the condition is not a `torch.rand` draw")


def _enclosing_loop(predicator: Predicator, node: nodes.If) -> tuple[nodes.For, nodes.NodeNG]:
    """The ``for`` loop and the statement of its body that holds *node* (itself, or its guard ``if``)."""
    statement: nodes.NodeNG = node
    while isinstance(statement.parent, nodes.If):
        guard = statement.parent
        if statement is not guard.body[-1] or guard.orelse or predicator.values.kind(guard.test) is Kind.TENSOR:
            raise Declined(
                "the LayerDrop `if` is not the last statement of `if` guards on Python values without `else`"
            )
        statement = guard
    loop = statement.parent
    if not isinstance(loop, nodes.For) or statement not in loop.body:
        raise Declined("the LayerDrop `continue` is not in the body of a `for` loop")
    if statement is not node and node is not node.parent.body[-1]:
        raise Declined("statements follow the LayerDrop `if` inside its guard")
    return loop, statement


def _layer_statements(loop: nodes.For, top: nodes.NodeNG, node: nodes.If) -> list[nodes.NodeNG]:
    """The statements a dropped layer skips.

    After ``continue``: the rest of the loop body. After ``flag = True``: the body of the
    ``if not flag:`` right after the LayerDrop statement, where ``flag = False`` starts the
    iteration and nothing else reads or binds ``flag``.
    """
    index = loop.body.index(top)
    flag = _flag_set(node.body[0])
    if flag is None:
        return list(loop.body[index + 1 :])
    following = loop.body[index + 1] if index + 1 < len(loop.body) else None
    test = following.test if isinstance(following, nodes.If) else None
    if not (
        isinstance(test, nodes.UnaryOp)
        and test.op == "not"
        and isinstance(test.operand, nodes.Name)
        and test.operand.name == flag
        and not following.orelse
    ):
        raise Declined(f"the LayerDrop `if` sets `{flag}`, but the next statement is not `if not {flag}:` without `else`")
    function = loop.scope()
    reads = [use for use in function.nodes_of_class(nodes.Name) if use.name == flag]
    bindings = [b.parent for b in function.nodes_of_class(nodes.AssignName) if b.name == flag]
    starts = [b for b in bindings if b is not node.body[0]]
    if reads != [test.operand] or len(starts) != 1 or starts[0] not in loop.body[:index] or not _assigns_constant(starts[0], False):
        raise Declined(f"`{flag}` is read or bound elsewhere than `{flag} = False`, the LayerDrop `if` and `if not {flag}:`")
    return list(following.body)


def _flag_set(statement: nodes.NodeNG) -> str | None:
    """``flag = True``: the flag's name."""
    if _assigns_constant(statement, True):
        return statement.targets[0].name
    return None


def _assigns_constant(statement: nodes.NodeNG, value: bool) -> bool:
    return (
        isinstance(statement, nodes.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], nodes.AssignName)
        and isinstance(statement.value, nodes.Const)
        and statement.value.value is value
    )


def _kept_names(predicator: Predicator, loop: nodes.For, top: nodes.NodeNG, rest: Sequence[nodes.NodeNG]) -> list[str]:
    """The names the rest of the loop body assigns and something else reads: a dropped layer keeps their value."""
    if not rest:
        raise Declined("no statement follows the LayerDrop `if` in the loop, so there is no layer to drop")
    assigned: list[str] = []
    carried: set[str] = set()
    for statement in rest:
        targets = _assigned_names(statement)
        if targets is None:
            raise Declined(
                f"the rest of the loop body holds `{statement.as_string().splitlines()[0]}`; only assignments "
                "to names are rewritten"
            )
        carried |= {use.name for use in statement.value.nodes_of_class(nodes.Name)} - set(assigned)
        assigned += [name for name in targets if name not in assigned]
    function = loop.scope()
    kept = [
        name
        for name in assigned
        if name in carried
        or any(use.name == name and not any(contains(s, use) for s in rest) for use in function.nodes_of_class(nodes.Name))
    ]
    if not kept:
        raise Declined("the rest of the loop body assigns nothing read elsewhere, so there is nothing to keep")
    for name in kept:
        try:
            predicator.previous_value(top, name)
        except Declined:
            raise Declined(
                f"`{name}` is not known to hold a tensor before the loop, so a dropped layer has no value to keep"
            ) from None
    return kept


def _assigned_names(statement: nodes.NodeNG) -> list[str] | None:
    """``a = ...`` / ``a, b = ...``: the names; ``None`` for any other statement."""
    if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    elements = target.elts if isinstance(target, (nodes.Tuple, nodes.List)) else [target]
    if not all(isinstance(element, nodes.AssignName) for element in elements):
        return None
    return [element.name for element in elements]


def _rewrite(
    predicator: Predicator, node: nodes.If, top: nodes.NodeNG, rest: Sequence[nodes.NodeNG], kept: list[str]
) -> Rewrite:
    """Three insertions, as one replacement from the loop statement holding *node* to the end of the dropped layer."""
    analysis, torch = predicator.analysis, predicator.torch
    source = analysis.source
    start = analysis.start_of(top)
    end_line = analysis.end_of(rest[-1]).line
    end = Position(end_line, len(source.line(end_line)))
    top_indent = _indent(predicator, top)
    if_indent = _indent(predicator, node)
    rest_indent = _indent(predicator, rest[0])
    compiled = [f"{FLAG} = {predicator.text(node.test)}", *(f"{KEPT}{name} = {name}" for name in kept)]
    guard = "".join(
        [f"if {torch}.compiler.is_compiling():\n", *(f"{if_indent}    {line}\n" for line in compiled), f"{if_indent}el"]
    )
    selects = [f"{name} = {torch}.where({FLAG}, {KEPT}{name}, {name})" for name in kept]
    tail = "".join([f"\n{rest_indent}if {FLAG} is not None:", *(f"\n{rest_indent}    {line}" for line in selects)])
    text = source.text
    head = text[source.offset(start) : source.offset(analysis.start_of(node))]
    body = text[source.offset(analysis.start_of(node)) : source.offset(end)]
    content = f"{FLAG} = None\n{top_indent}{head}{guard}{body}{tail}"
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
