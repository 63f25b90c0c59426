"""What a parameter's annotation says it holds, read through the file's imports.

Real code spells one type many ways: ``torch.Tensor``, ``th.Tensor`` (``import
torch as th``: OpenAI's guided-diffusion), ``Tensor``, ``Optional[Tensor]``,
``Union[Tensor, None]``, ``Tensor | None``, a quoted forward reference, and
jaxtyping's ``Float[Tensor, "b n"]`` / ``Bool[torch.Tensor, "b"]``. Matching the
annotation's text missed every alias, so each alternative is resolved to its
qualified name here, once, for every analysis that reads annotations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import astroid
from astroid import nodes

from graphmend_lint.analysis.walk import dotted

#: What an alternative resolves to when it names no type this module can read.
UNREADABLE = "?"
TENSOR = "torch.Tensor"
BOOL_TENSOR = "torch.BoolTensor"
#: Qualified names of tensor types (a ``Parameter`` is a tensor too).
TENSOR_TYPES = frozenset(
    {TENSOR, BOOL_TENSOR, "torch.FloatTensor", "torch.DoubleTensor", "torch.HalfTensor", "torch.BFloat16Tensor",
     "torch.LongTensor", "torch.IntTensor", "torch.ShortTensor", "torch.CharTensor", "torch.ByteTensor",
     "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
)  # fmt: skip
#: Types whose values Dynamo treats as Python constants.
STATIC_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "torch.dtype", "torch.device"})
#: Names code uses without importing them (under ``TYPE_CHECKING``, or in strings), read as torch's.
_UNIMPORTED_NAMES = {
    "Tensor": TENSOR,
    "FloatTensor": "torch.FloatTensor",
    "LongTensor": "torch.LongTensor",
    "BoolTensor": BOOL_TENSOR,
    "Parameter": "torch.nn.Parameter",
    "nn.Parameter": "torch.nn.Parameter",
    "dtype": "torch.dtype",
    "device": "torch.device",
}
#: A dtype written as an annotation (diffusers' ``AmusedScheduler.step(..., timestep: torch.long, ...)``) is no
#: type, but says what its writer means: a tensor of that dtype.
_DTYPE_ANNOTATIONS = {
    **dict.fromkeys(("torch.long", "torch.int64", "torch.int", "torch.int32"), "torch.LongTensor"),
    **dict.fromkeys(("torch.float", "torch.float32", "torch.float16", "torch.half", "torch.bfloat16"), "torch.FloatTensor"),
    "torch.bool": BOOL_TENSOR,
}
_OPTIONAL = frozenset({"typing.Optional", "typing_extensions.Optional", "Optional"})
_UNION = frozenset({"typing.Union", "typing_extensions.Union", "Union"})
_ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated", "Annotated"})
#: torchtyping's ``TensorType["batch", "dim"]`` annotates a tensor.
_TENSOR_GENERICS = frozenset({"torchtyping.TensorType"})


def annotated_types(annotation: nodes.NodeNG, resolve: Callable[[str], str]) -> frozenset[str]:
    """The qualified names of the types *annotation* allows, ``None`` left out.

    *resolve* expands a dotted name through the file's imports
    (:meth:`ImportTable.resolve`). An alternative this module cannot read is
    :data:`UNREADABLE`, so a caller asking "only tensors?" gets no.
    """
    return frozenset(_alternatives(annotation, resolve)) - {"None"}


def _alternatives(node: nodes.NodeNG, resolve: Callable[[str], str]) -> Iterator[str]:
    if isinstance(node, nodes.Const):
        if node.value is None:
            yield "None"
        elif isinstance(node.value, str):
            yield from _forward_reference(node.value, resolve)
        else:
            yield UNREADABLE
    elif isinstance(node, nodes.BinOp) and node.op == "|":
        yield from _alternatives(node.left, resolve)
        yield from _alternatives(node.right, resolve)
    elif isinstance(node, nodes.Subscript):
        yield from _generic(node, resolve)
    else:
        yield _type_name(node, resolve)


def _forward_reference(text: str, resolve: Callable[[str], str]) -> Iterator[str]:
    """``"torch.Tensor"``: the annotation inside the string."""
    try:
        parsed = astroid.extract_node(text)
    except Exception:  # not an expression; astroid raises several error types
        yield UNREADABLE
        return
    if isinstance(parsed, nodes.Const) and isinstance(parsed.value, str):
        yield UNREADABLE  # a string inside a string
        return
    yield from _alternatives(parsed, resolve)


def _generic(node: nodes.Subscript, resolve: Callable[[str], str]) -> Iterator[str]:
    """``Optional[X]``, ``Union[X, Y]``, ``Annotated[X, ...]``, jaxtyping's ``Float[Tensor, "b n"]``."""
    outer = _type_name(node.value, resolve)
    items = node.slice.elts if isinstance(node.slice, nodes.Tuple) else [node.slice]
    if outer in _OPTIONAL:
        yield from _alternatives(items[0], resolve)
        yield "None"
    elif outer in _UNION:
        for item in items:
            yield from _alternatives(item, resolve)
    elif outer in _ANNOTATED:
        yield from _alternatives(items[0], resolve)
    elif outer in _TENSOR_GENERICS:
        yield TENSOR
    elif outer.startswith("jaxtyping."):
        yield _jaxtyping_array(outer.removeprefix("jaxtyping."), frozenset(_alternatives(items[0], resolve)))
    else:
        yield outer  # ``List[Tensor]`` is a list: its own name, not a tensor


def _jaxtyping_array(dtype: str, arrays: frozenset[str]) -> str:
    """``Bool[Tensor, "b"]`` is a bool tensor, ``Int64[...]`` an integer one; over NumPy arrays, no tensor."""
    if not arrays or not arrays <= TENSOR_TYPES:
        return UNREADABLE
    if dtype == "Bool":
        return BOOL_TENSOR
    if dtype.startswith(("Int", "UInt")):
        return "torch.LongTensor"
    if dtype.startswith(("Float", "BFloat")):
        return "torch.FloatTensor"
    return TENSOR


def _type_name(node: nodes.NodeNG, resolve: Callable[[str], str]) -> str:
    written = dotted(node)
    if written is None:
        return UNREADABLE
    resolved = resolve(written)
    named = _UNIMPORTED_NAMES.get(written, resolved) if resolved == written else resolved
    return _DTYPE_ANNOTATIONS.get(named, named)
