"""Rewrites that keep a tensor's value on the device instead of copying it to Python.

Dynamo breaks the graph at ``t.item()`` / ``int(t)`` (GB0124) because a
Python number cannot live in an FX graph unless
``torch._dynamo.config.capture_scalar_outputs`` is set. When the number is
only used where a tensor would do, the copy can simply be dropped:

* :func:`keep_scalar_on_device`: ``s = t.sum().item(); y = x * s`` becomes
  ``s = t.sum().detach()``: ``s`` stays a 0-d tensor. ``detach`` keeps the
  gradient cut that ``.item()`` made.
* :func:`assert_without_item`: ``assert t.max().item() <= n`` becomes
  ``assert t.max() <= n``; Dynamo lowers an assert on a tensor to an async
  assert, with no break.
* :func:`keep_flag_for_predication`: ``flag = m.any().item()`` that only
  feeds ``if flag:`` stays a tensor when GM101 can then predicate every such
  branch (checked by linting the edited text); otherwise
  :func:`branch_only_decline` says why there is no fix.

Anything else is display-only: :data:`CAPTURE_SCALARS` names the setting that
would trace it, and what that costs.
"""

from __future__ import annotations

from dataclasses import replace

from astroid import nodes

from graphmend_lint.analysis.host_values import (
    ScalarConversion,
    is_python_int,
    reads_of,
    single_target,
)
from graphmend_lint.analysis.values import ValueOracle, is_elementwise_comparison
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.capture_switch import scalar_capture_fix
from graphmend_lint.source import SourceFile

CAPTURE_SCALARS = (
    "no source fix: `torch._dynamo.config.capture_scalar_outputs = True` would trace it as an unbacked "
    "symbol (the device-to-host sync stays, and code that branches on or slices with the number then needs "
    "`torch._check` hints or breaks anyway)"
)
_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**"})


def node_text(analysis: FileAnalysis, node: nodes.NodeNG) -> str:
    """The exact source text of *node* (astroid ranges exclude enclosing parentheses)."""
    source = analysis.source
    return source.text[source.offset(analysis.start_of(node)) : source.offset(analysis.end_of(node))]


def _without_conversion(analysis: FileAnalysis, conversion: ScalarConversion, suffix: str = "") -> Edit:
    """Replace ``t.item()`` (or ``float(t)``) by ``t`` + *suffix*.

    ``.item()`` is cut at the end of its receiver, so comments and line breaks
    inside the receiver survive; a builtin call keeps its argument's text.
    """
    call = conversion.call
    if conversion.is_item:
        return Edit(analysis.end_of(conversion.tensor), analysis.end_of(call), suffix)
    text = node_text(analysis, conversion.tensor)
    return Edit(analysis.start_of(call), analysis.end_of(call), parenthesized(conversion.tensor, text) + suffix)


def parenthesized(node: nodes.NodeNG, text: str) -> str:
    """*text* safe to use as an operand or a receiver."""
    atoms = (nodes.Name, nodes.Attribute, nodes.Call, nodes.Subscript, nodes.Const)
    return text if isinstance(node, atoms) else f"({text})"


# -- fix 1: the scalar only feeds tensor arithmetic --------------------------------------


def _feeds_tensor_arithmetic(values: ValueOracle, read: nodes.Name) -> bool:
    """``x * s`` or ``s - x`` where the other operand is a tensor.

    ``x *= s`` is not accepted: the oracle cannot tell what ``x`` holds
    before an augmented assignment whose operand is a Python number.
    """
    parent = read.parent
    if isinstance(parent, nodes.BinOp) and parent.op in _ARITHMETIC:
        other = parent.right if parent.left is read else parent.left
        return values.is_tensor(other)
    return False


def keep_scalar_on_device(analysis: FileAnalysis, conversion: ScalarConversion) -> Fix | None:
    """``s = t.item()`` → ``s = t.detach()`` when every read of ``s`` is a tensor's operand.

    Unsafe: a 0-d tensor promotes like its dtype, not like a Python number,
    so an integer tensor times a float64 scalar becomes float64 instead of the
    default float dtype; devices must match (a CUDA 0-d tensor cannot meet a
    CPU tensor); and the arithmetic is now traced with the other tensors.
    """
    if not conversion.is_item:
        return None  # int(t) truncates and float(t) converts: dropping them changes values
    target = single_target(conversion.call)
    reads = reads_of(target) if target is not None else None
    if not reads or not all(_feeds_tensor_arithmetic(analysis.values, read) for read in reads):
        return None
    return Fix(
        edits=(_without_conversion(analysis, conversion, ".detach()"),),
        applicability=Applicability.UNSAFE,
        message=f"Keep `{target.name}` a 0-d tensor (`.detach()`, not `.item()`): it only feeds tensor arithmetic",
    )


# -- fix 2: the scalar only feeds a condition --------------------------------------------


def if_test_of(value: nodes.NodeNG) -> nodes.If | None:
    """The ``if`` whose whole test is *value* or ``not`` *value*."""
    node: nodes.NodeNG = value
    if isinstance(node.parent, nodes.UnaryOp) and node.parent.op == "not":
        node = node.parent
    parent = node.parent
    return parent if isinstance(parent, nodes.If) and parent.test is node else None


def _branch_reads(conversion: ScalarConversion) -> tuple[nodes.AssignName, list[nodes.Name]] | None:
    """``flag`` and its reads when ``flag = t.item()`` is read by nothing but ``if`` tests."""
    target = single_target(conversion.call)
    reads = reads_of(target) if target is not None else None
    if not reads or any(if_test_of(read) is None for read in reads):
        return None
    return target, reads


def predicated_after(analysis: FileAnalysis, edit: Edit, reads: list[nodes.NodeNG]) -> bool:
    """Would GM101 offer an applicable predication for every branch once *edit* is made?

    Proven by trial: the edited text is linted with GM101 alone (so this never
    recurses), about the function of the reads only (:meth:`FileAnalysis.trial_around`).
    Dropping the copy without the predication would only move the break to
    the ``if``, once per test.
    """
    source = analysis.source
    start, end = source.offset(edit.start), source.offset(edit.end)
    candidate = SourceFile(source.text[:start] + edit.content + source.text[end:], source.encoding, source.bom)
    settings = replace(analysis.settings, select=("GM101",), extend_select=(), ignore=(), per_file_ignores=())
    fixes = {d.start: d.fix for d in analysis.trial_around(reads[0], candidate, settings)}
    wanted = [fixes.get(analysis.break_start(read)) for read in reads]
    return all(fix is not None and fix.applicability is not Applicability.DISPLAY_ONLY for fix in wanted)


def keep_flag_for_predication(analysis: FileAnalysis, conversion: ScalarConversion) -> Fix | None:
    """``flag = m.any().item()`` → ``flag = m.any()`` when every ``if flag:`` can then be predicated.

    ``int(t)`` is left alone: ``if int(t):`` truncates first (``0.5`` is false).
    Unsafe, as the predication that follows is (GM101's ``torch.where`` or ``torch.cond``).
    """
    found = _branch_reads(conversion) if conversion.spelling in {"item", "bool", "float"} else None
    if found is None:
        return None
    target, reads = found
    edit = _without_conversion(analysis, conversion)
    if not predicated_after(analysis, edit, reads):
        return None
    lines = ", ".join(str(read.lineno) for read in reads)
    return Fix(
        edits=(edit,),
        applicability=Applicability.UNSAFE,
        message=f"Keep `{target.name}` a tensor; the branch at line {lines} is then predicated (GM101)",
    )


def branch_only_decline(conversion: ScalarConversion) -> Fix | None:
    """A display-only pointer at the branches when the scalar feeds nothing but ``if`` tests
    and predicating them is not possible: dropping the copy alone would only turn this break
    into a data-dependent-branch break at each ``if``.
    """
    found = _branch_reads(conversion)
    if found is None:
        return None
    target, reads = found
    lines = ", ".join(str(read.lineno) for read in reads)
    return Fix.advice(
        (
            f"`{target.name}` only feeds the branch at line {lines}, which GM101 cannot predicate "
            "(see its finding once the copy is gone): no automatic fix"
        ),
    )


# -- fix 4: the scalar only feeds an assert ----------------------------------------------


def _assert_of(conversion: ScalarConversion, values: ValueOracle) -> nodes.Assert | None:
    """The ``assert`` whose test keeps its meaning once the conversion is dropped.

    ``assert t.item()``, ``assert not t.item()`` and ``assert t.item() <= n``
    with ``n`` a Python int compare the same numbers on the tensor: integer
    tensors exactly, floating ones exactly while ``|n| <= 2**24`` (float32).
    A float ``n`` could round differently, and ``int(t)`` truncates, so both
    are left alone.
    """
    if conversion.spelling not in {"item", "bool", "float"}:
        return None
    node: nodes.NodeNG = conversion.call
    parent = node.parent
    if isinstance(parent, nodes.UnaryOp) and parent.op == "not":
        node, parent = parent, parent.parent
    elif is_elementwise_comparison(parent):
        other = parent.ops[0][1] if parent.left is node else parent.left
        if not is_python_int(values, other):
            return None
        node, parent = parent, parent.parent
    return parent if isinstance(parent, nodes.Assert) and parent.test is node else None


def assert_without_item(analysis: FileAnalysis, conversion: ScalarConversion) -> Fix | None:
    """``assert t.max().item() <= n`` → ``assert t.max() <= n``.

    Unsafe: eagerly nothing changes, but under ``torch.compile`` a failing
    tensor assert raises ``RuntimeError("assertion error")`` from the async
    assert instead of ``AssertionError`` (measured, torch 2.13 CPU).
    """
    if _assert_of(conversion, analysis.values) is None:
        return None
    return Fix(
        edits=(_without_conversion(analysis, conversion),),
        applicability=Applicability.UNSAFE,
        message="Assert on the tensor itself: Dynamo turns it into an async assert without a graph break",
    )


def scalar_fix(analysis: FileAnalysis, conversion: ScalarConversion) -> Fix:
    """The best fix for one conversion, falling back to the display-only setting.

    The rewrites keep the value a tensor, so they need the receiver proven one (a NumPy array has no
    ``.detach()``, and its ``assert`` or branch is no tensor condition).
    """
    rewrites = (assert_without_item, keep_scalar_on_device, keep_flag_for_predication) if conversion.proven else ()
    return (
        next((fix for rewrite in rewrites if (fix := rewrite(analysis, conversion)) is not None), None)
        or branch_only_decline(conversion)
        or scalar_capture_fix(analysis)
        or Fix.advice(CAPTURE_SCALARS)
    )
