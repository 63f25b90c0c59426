"""GM201's fix: ``print(...)`` becomes ``torch._higher_order_ops.print(fmt, *values)``.

Measured on torch 2.13.0 (CPU, ``eager``/``aot_eager``/``inductor`` backends,
``fullgraph=True``): the higher-order ``print`` op is traced into the graph, so
no break is logged, and at run time it prints the runtime values in program
order. Eagerly it calls ``builtins.print(fmt.format(*values))``, so the text
is the same as the original ``print`` when the format string reproduces
``print``'s own formatting:

* a positional argument becomes ``{!s}`` (``print`` uses ``str``; a bare ``{}``
  would format a 0-d tensor as its item), joined with ``sep``;
* an f-string keeps its own placeholders: ``f"{y:.3f}"`` becomes ``"{:.3f}"``
  with ``y`` passed as a value (``format`` is what the f-string called);
* string and number constants are folded into the format string.

The op only accepts flat values: tensors, Python numbers, strings, booleans
and ``None``. Anything else fails *when the backend compiles the graph* (a
``torch.Size`` or a list raises ``BackendCompilerFailed`` under ``aot_eager``
and ``inductor``), which is worse than a graph break, so every value must be
provably flat, or the call is not rewritten (the caller falls back to the
guard):

* a tensor, when its value is computed by a tensor operation (a bare
  parameter is only trusted with a ``Tensor`` annotation);
* a constant, or a name every binding of which is a number or string constant;
* sizes as ints: ``x.shape[i]``, ``x.size(i)``, ``x.dim()``, ``x.numel()``,
  ``len(x)``; metadata as text: ``str(x.shape)`` for ``x.shape``, ``x.size()``,
  ``x.dtype`` and ``x.device`` (measured: the string is folded at trace time);
* ``t.item()`` on a full reduction (``y.sum().item()``), when formatted without
  a conversion: the 0-d tensor itself is passed, because ``format`` of a 0-d
  tensor formats its item, so the text is unchanged and the ``.item()`` host
  sync (GB0124) goes away too.

``print(..., file=...)``, ``end=`` other than a newline, ``flush=True``,
``*args`` and format specs that are themselves formatted are declined.

The op needs torch >= 2.10 (Dynamo support landed in pytorch/pytorch#167571);
the ``target-torch`` setting (default: the installed torch) decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.side_effects import name_bindings
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.torch_name import torch_name_at

MINIMUM_TORCH = (2, 10)
HOP_MESSAGE = "Print from inside the graph with `torch._higher_order_ops.print`"
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "norm", "any", "all"})
_INT_METHODS = frozenset({"dim", "numel", "nelement", "ndimension", "element_size"})
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device"})
_FLAT_CONSTANTS = (int, float, str, bool, type(None))
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "str", "bool"})
_MAX_DEPTH = 4


class NotFlat(Exception):
    """A value the print op may not accept; the message says which."""


@dataclass(frozen=True)
class _Piece:
    """Literal text, or a placeholder with the source text of its value."""

    text: str
    value: str | None = None


def hop_print_fix(analysis: FileAnalysis, call: nodes.Call) -> Fix | str:
    """The rewrite of one ``print`` call, or the reason it cannot be rewritten."""
    try:
        separator = _separator(call)
        pieces = list(_pieces(analysis, call, separator))
    except NotFlat as reason:
        return str(reason)
    torch = torch_name_at(analysis, call)
    if torch is None:
        return "the name `torch` is bound to something else here"
    template = "".join(piece.text for piece in pieces)
    values = [piece.value for piece in pieces if piece.value is not None]
    arguments = ", ".join([_string_literal(template, _quote_of(analysis, call)), *values])
    replacement = f"{torch.name}._higher_order_ops.print({arguments})"
    edit = Edit(analysis.start_of(call), analysis.end_of(call), replacement)
    return Fix(edits=(*torch.edits, edit), applicability=Applicability.SAFE, message=HOP_MESSAGE)


def supports_hop_print(target_torch: tuple[int, int]) -> bool:
    return target_torch >= MINIMUM_TORCH


# -- arguments --------------------------------------------------------------------------


def _separator(call: nodes.Call) -> str:
    separator = " "
    for keyword in call.keywords or []:
        value = keyword.value
        constant = value.value if isinstance(value, nodes.Const) else object()
        if keyword.arg == "sep" and isinstance(constant, str):
            separator = constant
        elif keyword.arg == "sep" and constant is None:
            separator = " "
        elif keyword.arg == "end" and constant in ("\n", None):
            continue
        elif keyword.arg == "flush" and constant in (False, None):
            continue
        else:
            raise NotFlat(f"`print(..., {keyword.arg or '**'}=...)` has no equivalent in the print op")
    return separator


def _pieces(analysis: FileAnalysis, call: nodes.Call, separator: str) -> Iterator[_Piece]:
    values = analysis.values
    for index, argument in enumerate(call.args):
        if index:
            yield _Piece(_escape(separator))
        if isinstance(argument, nodes.Starred):
            raise NotFlat("`print(*args)`: the values are not known")
        if isinstance(argument, nodes.Const) and isinstance(argument.value, _FLAT_CONSTANTS):
            yield _Piece(_escape(str(argument.value)))
        elif isinstance(argument, nodes.JoinedStr):
            yield from _fstring_pieces(analysis, values, argument)
        else:
            placeholder, value = _placeholder(analysis, values, argument, conversion="s", spec="")
            yield _Piece(placeholder, value)


def _fstring_pieces(analysis: FileAnalysis, values: ValueOracle, fstring: nodes.JoinedStr) -> Iterator[_Piece]:
    for part in fstring.values:
        if isinstance(part, nodes.Const):
            yield _Piece(_escape(str(part.value)))
            continue
        if not isinstance(part, nodes.FormattedValue):
            raise NotFlat("an f-string part is not a plain value")
        spec = ""
        if part.format_spec is not None:
            if not all(isinstance(p, nodes.Const) for p in part.format_spec.values):
                raise NotFlat("an f-string format spec is itself formatted")
            spec = "".join(str(p.value) for p in part.format_spec.values)
        conversion = {-1: "", 115: "s", 114: "r", 97: "a"}.get(part.conversion)
        if conversion is None:
            raise NotFlat("an unknown f-string conversion")
        placeholder, value = _placeholder(analysis, values, part.value, conversion, spec)
        yield _Piece(placeholder, value)


def _placeholder(
    analysis: FileAnalysis, values: ValueOracle, node: nodes.NodeNG, conversion: str, spec: str
) -> tuple[str, str]:
    """``("{!s}", "y")``: the format field for *node* and the source text of the value passed."""
    text = _source(analysis, node)
    if conversion != "r" and _is_reduced_item(values, node):
        # format(0-d tensor, spec) == format(tensor.item(), spec); str(float) == format(float, "")
        return _field("", spec), _source(analysis, node.func.expr)
    if _is_int_size(node) or _is_flat_constant(node) or _is_computed_tensor(values, node, 0):
        return _field(conversion, spec), text
    if _is_metadata(node) and conversion in ("", "s") and not spec:
        return _field("", ""), f"str({text})"
    raise NotFlat(f"`{text}` may not be a tensor, number or string, which the print op needs")


def _field(conversion: str, spec: str) -> str:
    return "{" + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"


def _is_reduced_item(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``t.item()`` where ``t`` is 0-d by construction (``y.sum().item()``, ``loss.item()``)."""
    if not (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname == "item"):
        return False
    return not node.args and is_zero_dim(values, node.func.expr, 0)


def is_zero_dim(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """A full reduction (``y.sum()``, ``torch.mean(y)``), a loss function's default result, or a name bound to one."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Name):
        bindings = name_bindings(node)
        return len(bindings) == 1 and _assigned_value_is(bindings[0], lambda v: is_zero_dim(values, v, depth + 1))
    if not isinstance(node, nodes.Call) or any(k.arg in ("dim", "axis", "keepdim") for k in node.keywords or []):
        return False
    if isinstance(node.func, nodes.Attribute) and node.func.attrname in _REDUCTIONS and not node.args:
        return True
    name = values.qualified_name(node.func) or ""
    if name.startswith("torch.nn.functional.") and name.endswith("_loss"):
        reduction = next((k.value for k in node.keywords or [] if k.arg == "reduction"), None)
        return reduction is None or (isinstance(reduction, nodes.Const) and reduction.value in ("mean", "sum"))
    return name.rsplit(".", 1)[-1] in _REDUCTIONS and name.startswith("torch.") and len(node.args) == 1


def _is_int_size(node: nodes.NodeNG) -> bool:
    if isinstance(node, nodes.Subscript) and isinstance(node.value, nodes.Attribute):
        return node.value.attrname == "shape" and isinstance(node.slice, nodes.Const)
    if not isinstance(node, nodes.Call):
        return False
    func = node.func
    if isinstance(func, nodes.Attribute):
        if func.attrname == "size":
            return len(node.args) == 1 and not node.keywords
        return func.attrname in _INT_METHODS and not node.args and not node.keywords
    return isinstance(func, nodes.Name) and func.name == "len" and len(node.args) == 1


def _is_metadata(node: nodes.NodeNG) -> bool:
    if isinstance(node, nodes.Attribute):
        return node.attrname in _METADATA_ATTRIBUTES
    return (
        isinstance(node, nodes.Call)
        and isinstance(node.func, nodes.Attribute)
        and node.func.attrname == "size"
        and not node.args
        and not node.keywords
    )


def _is_flat_constant(node: nodes.NodeNG) -> bool:
    """A Python number, string, bool or ``None``: a constant, a name bound only to such, a parameter annotated so."""
    if isinstance(node, nodes.Const):
        return isinstance(node.value, _FLAT_CONSTANTS)
    if not isinstance(node, nodes.Name):
        return False
    bindings = name_bindings(node)
    if len(bindings) == 1 and isinstance(bindings[0].parent, nodes.Arguments):
        annotation = ValueOracle._annotation_of(bindings[0], bindings[0].parent)
        return annotation is not None and annotation.as_string() in _SCALAR_ANNOTATIONS
    if len(bindings) == 1 and _is_loop_counter(bindings[0]):
        return True
    try:
        inferred = list(node.infer())
    except Exception:  # inference failures mean "not known"
        return False
    return bool(inferred) and len(inferred) <= 8 and all(
        isinstance(value, nodes.Const) and isinstance(value.value, _FLAT_CONSTANTS) for value in inferred
    )


def _is_computed_tensor(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    """A tensor the value oracle is sure of *and* that comes from tensor work, not an assumption."""
    if depth > _MAX_DEPTH or values.kind(node) is not Kind.TENSOR:
        return False
    if isinstance(node, nodes.Name):
        return _name_is_computed_tensor(values, node, depth)
    if isinstance(node, nodes.Attribute):
        return False  # `self.x` may be a list the oracle calls a tensor; not worth the crash
    if isinstance(node, nodes.BinOp):
        return any(_is_computed_tensor(values, side, depth + 1) for side in (node.left, node.right))
    if isinstance(node, nodes.Compare):
        operands = [node.left, *(right for _, right in node.ops)]
        return any(_is_computed_tensor(values, side, depth + 1) for side in operands)
    if isinstance(node, nodes.UnaryOp):
        return _is_computed_tensor(values, node.operand, depth + 1)
    if isinstance(node, nodes.Subscript):
        return _is_computed_tensor(values, node.value, depth + 1)
    if isinstance(node, nodes.Call):
        # torch functions and tensor methods; a submodule or user function may return a tuple
        name = values.qualified_name(node.func)
        if name is not None and name.startswith("torch.") and not name.startswith("torch.nn."):
            return True
        return isinstance(node.func, nodes.Attribute) and _is_computed_tensor(values, node.func.expr, depth + 1)
    return False


def _name_is_computed_tensor(values: ValueOracle, node: nodes.Name, depth: int) -> bool:
    """Every binding is a parameter (the oracle's tensor evidence holds) or an assignment of a computed tensor."""
    bindings = name_bindings(node)
    return bool(bindings) and all(
        isinstance(binding.parent, nodes.Arguments)
        or _assigned_value_is(binding, lambda value: _is_computed_tensor(values, value, depth + 1))
        for binding in bindings
    )


def _assigned_value_is(binding: nodes.NodeNG, test: Callable[[nodes.NodeNG], bool]) -> bool:
    """*binding* is ``name = value`` (or ``name: T = value``) with a *value* that passes *test*."""
    parent = binding.parent
    if isinstance(parent, nodes.Assign) and len(parent.targets) == 1 and parent.targets[0] is binding:
        return test(parent.value)
    return isinstance(parent, nodes.AnnAssign) and parent.value is not None and test(parent.value)


def _is_loop_counter(binding: nodes.NodeNG) -> bool:
    """``i`` in ``for i in range(...)`` or ``for i, x in enumerate(...)``: an int."""
    parent = binding.parent
    loop = parent.parent if isinstance(parent, nodes.Tuple) else parent
    if not isinstance(loop, nodes.For):
        return False
    iterable = loop.iter
    if not (isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name)):
        return False
    if iterable.func.name == "range":
        return loop.target is binding
    return iterable.func.name == "enumerate" and isinstance(parent, nodes.Tuple) and parent.elts[0] is binding


# -- text -------------------------------------------------------------------------------


def _source(analysis: FileAnalysis, node: nodes.NodeNG) -> str:
    start, end = analysis.start_of(node), analysis.end_of(node)
    lines = analysis.source.lines[start.line - 1 : end.line]
    if len(lines) == 1:
        return lines[0][start.col : end.col]
    return node.as_string()  # a value spanning lines: astroid's rendering is one line


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _quote_of(analysis: FileAnalysis, call: nodes.Call) -> str:
    """The quote character the call's own string literals use (double by default)."""
    for node in call.nodes_of_class((nodes.Const, nodes.JoinedStr)):
        if isinstance(node, nodes.Const) and not isinstance(node.value, str):
            continue
        start = analysis.start_of(node)
        line = analysis.source.line(start.line)
        text = line[start.col :].lstrip("rRbBfFuU")
        if text[:1] in ("'", '"'):
            return text[0]
    return '"'


def _string_literal(text: str, quote: str) -> str:
    literal = repr(text)
    if quote == '"' and literal.startswith("'") and '"' not in text:
        literal = '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal
