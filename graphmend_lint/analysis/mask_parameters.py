"""Parameters whose name calls them a mask, checked against what this file passes for them.

``audio_features[input_features_mask]`` (Granite Speech) indexes with a
parameter nothing in the function types: its dtype comes from the caller.
Indexing with a bool tensor selects (data-dependent size, GB0036); with an
integer tensor it gathers (static size, no break). Code that names an index
``*_mask`` means the first: a 0/1 integer tensor as an index would gather rows
0 and 1, which no code means. The name is weak evidence, so it is only
accepted when nothing in this file contradicts it:

* the parameter is rebound only to a bool tensor or to itself moved or reshaped (:func:`mask_behind`),
  has no default but ``None`` and no annotation but ``torch.Tensor`` / ``torch.BoolTensor`` (``| None``),
  or the ``torch.LongTensor`` / ``torch.IntTensor`` code writes on masks by habit (:func:`open_parameter`);
* its name ends in ``mask`` / ``masks`` and does not say attention (transformers'
  ``attention_mask`` is a 0/1 integer tensor by convention, and ``x[attention_mask]`` would gather);
* every call of its function in this file that passes it passes a tensor not
  proven integer or floating, or another such mask parameter. detectron2 passes
  ``...`` as ``fg_mask`` to ``_dense_box_regression_loss``, which makes
  ``x[fg_mask]`` a plain view: one such call keeps the parameter quiet, as do
  ``None``, slices, numbers, lists and integer tensors.

Detection only: the dtype is not proven, so no rewrite may rely on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from astroid import nodes
from astroid.bases import Instance
from astroid.util import Uninferable

from graphmend_lint.analysis.host_values import (
    bool_keeping_receiver,
    is_bool_tensor,
    is_float_tensor,
    is_integer_tensor,
    open_parameter,
)
from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import Kind, ValueOracle

#: Last words (after the last underscore) that make a parameter name a mask: ``fg_mask``, ``visual_pos_masks``;
#: a name that goes on (``mask_token_index``, ``mask_indices``, ``mask_value``) names something else.
_MASK_WORDS = frozenset({"mask", "masks"})
#: Words that make a mask an attention mask, by convention 0/1 integers: no evidence of a bool dtype.
_ATTENTION_WORDS = frozenset({"attention", "attn"})
#: How many parameters deep a mask may be passed on (``forward(mask)`` -> ``self.merge(h, mask)``).
_MAX_DEPTH = 4


def mask_behind(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> nodes.NodeNG:
    """What *node* keeps a mask's dtype from: ``mask`` behind ``~mask``, ``mask.to(h.device)``,
    ``mask[:, None]``, ``seq_mask[ind]`` (a row per loop step, vector-quantize-pytorch's code expiry) or a name
    bound once to one of those (``visual_pos_masks = visual_pos_masks.to(h.device)`` then
    ``h[visual_pos_masks, :]``, Qwen3-VL's deepstack); *node* itself when nothing is behind it."""
    if depth > _MAX_DEPTH:
        return node
    if isinstance(node, nodes.UnaryOp) and node.op == "~":
        return mask_behind(values, node.operand, depth + 1)
    if isinstance(node, nodes.Subscript) and _plain_slice(values, node):
        return mask_behind(values, node.value, depth + 1)
    if isinstance(node, nodes.Call) and (receiver := bool_keeping_receiver(node)) is not None:
        return mask_behind(values, receiver, depth + 1)
    if isinstance(node, nodes.Name):
        try:
            bindings = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code; then nothing is behind it
            return node
        assigned = bindings[0].parent if len(bindings) == 1 else None
        if isinstance(assigned, nodes.Assign) and assigned.targets == [bindings[0]]:
            behind = mask_behind(values, assigned.value, depth + 1)
            return node if behind is assigned.value else behind
    return node


def _plain_slice(values: ValueOracle, node: nodes.Subscript) -> bool:
    """``m[:, None]``, ``m[..., 0]``, ``m[ind]``: an index of slices, ``None``, ``...``, integer constants and
    names or attributes of Python values (an ``enumerate`` counter), which keeps the dtype (Qwen3-VL's
    ``image_mask[..., 0]``)."""
    parts = node.slice.elts if isinstance(node.slice, nodes.Tuple) else [node.slice]
    return all(
        isinstance(part, nodes.Slice)
        or _keeping_constant(part)
        or isinstance(part, (nodes.Name, nodes.Attribute)) and values.kind(part) is Kind.STATIC
        for part in parts
    )


def _keeping_constant(part: nodes.NodeNG) -> bool:
    return isinstance(part, nodes.Const) and (part.value is None or part.value is ... or type(part.value) is int)


def mask_parameter_index(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """*node* reads a parameter named as a (non-attention) mask that every call in this file passes a possible
    bool tensor for (see the module docstring), or a mask assigned in its place (``if keep_mask is None:
    keep_mask = torch.ones(n, dtype=torch.bool)``); quiet on anything else."""
    if depth > _MAX_DEPTH or not isinstance(node, nodes.Name) or values.kind(node) is Kind.STATIC:
        return False
    try:
        bindings = reaching_bindings(node)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    parameters = [binding for binding in bindings if isinstance(binding.parent, nodes.Arguments)]
    if len(parameters) != 1 or not open_parameter(values, parameters[0], indexes=True):
        return False
    parameter = parameters[0]
    if not _names_a_mask(parameter.name):
        return False
    others = (binding for binding in bindings if binding is not parameter)
    if not all(_assigns_a_mask(values, binding, parameter.name) for binding in others):
        return False
    passed = values.call_site_arguments(parameter.parent.parent, parameter.name)
    return all(_may_pass_a_mask(values, argument, depth) for argument in passed)


def _names_a_mask(name: str, numbered: bool = False) -> bool:
    """*name*'s last word is ``mask`` / ``masks`` (``mask0`` too when *numbered*), or that word and a one-letter
    tag (OSTrack's ``box_mask_z``, the template's), and no word says attention."""
    words = name.lower().strip("_").split("_")
    if len(words) > 1 and len(words[-1]) == 1 and words[-1].isalpha():
        words = words[:-1]
    last = words[-1].rstrip("0123456789") if numbered else words[-1]
    return last in _MASK_WORDS and not _ATTENTION_WORDS.intersection(words)


def mask_keyed_item(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``batch["valid_mask"]``, ``data["mask0"]``: an item of a mapping under a key that names a (non-attention)
    mask. Whoever filled the mapping chose its dtype, as a caller chooses a parameter's, and a mapping carries
    no annotation to say otherwise: as an index (the only use this is asked about) the key's name means a
    selection, since a 0/1 integer tensor would gather rows 0 and 1 (DUSt3R's ``gt1["valid_mask"]``).
    Detection only, like :func:`mask_parameter_index`."""
    if not (isinstance(node, nodes.Subscript) and isinstance(node.slice, nodes.Const) and isinstance(node.slice.value, str)):
        return False
    if not _names_a_mask(node.slice.value, numbered=True):
        return False
    return isinstance(node.value, (nodes.Name, nodes.Attribute)) and values.kind(node.value) is not Kind.STATIC


def mask_named_attribute(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``data.train_mask``, ``batch.edge_mask``: an attribute of an object the file does not type (not
    ``self``'s, whose assignments say what it holds), named as a (non-attention) mask. Graph batches carry
    their selections this way (PyTorch Geometric's ``out[data.train_mask]``, DiffDock's
    ``edge_index[0][data["ligand"].edge_mask]``); as an index the name means a selection, as a key's does
    (:func:`mask_keyed_item`). Detection only, like :func:`mask_parameter_index`."""
    if not (isinstance(node, nodes.Attribute) and _names_a_mask(node.attrname, numbered=True)):
        return False
    owner = node.expr
    if isinstance(owner, nodes.Name) and owner.name in {"self", "cls"}:
        return False
    return values.kind(node) is not Kind.STATIC and not is_integer_tensor(values, node) and not is_float_tensor(values, node)


def _assigns_a_mask(values: ValueOracle, binding: nodes.NodeNG, name: str) -> bool:
    """*binding* assigns a bool tensor, or the parameter *name* itself moved or reshaped
    (``valid_mask = valid_mask.to(device)``; ``valid_mask = valid_mask > 0.5`` is a comparison, bool too)."""
    assigned = binding.parent
    if not (isinstance(assigned, nodes.Assign) and assigned.targets == [binding]):
        return False
    behind = mask_behind(values, assigned.value)
    return is_bool_tensor(values, assigned.value) or (
        behind is not assigned.value and isinstance(behind, nodes.Name) and behind.name == name
    )


def _may_pass_a_mask(values: ValueOracle, argument: nodes.NodeNG, depth: int) -> bool:
    """A call passes a mask, or a tensor that may be one: not ``...``, ``None``, a number, a list or an
    integer or floating tensor."""
    if is_bool_tensor(values, argument) or mask_parameter_index(values, mask_behind(values, argument), depth + 1):
        return True
    return (
        values.is_tensor(argument)
        and not is_integer_tensor(values, argument)
        and not is_float_tensor(values, argument)
    )


def item_mask_index(values: ValueOracle, node: nodes.NodeNG, reads: Iterable[nodes.Subscript]) -> bool:
    """*node* is the ``item`` parameter of a ``__getitem__`` of a class in this file, never rebound nor
    tested by an enclosing branch, and one of *reads* (the traced subscripts) on an instance of that class
    passes a proven bool tensor for it.

    detectron2's ``Boxes.__getitem__`` reads ``self.tensor[item]``; ``boxes[valid_mask]`` in compiled code
    runs it with the mask, and Dynamo logs GB0036 there (measured). Other reads of the same class may pass
    integers or index tensors (``boxes[keep]`` after ``argsort``): they do not undo the one that selects.
    """
    if not isinstance(node, nodes.Name):
        return False
    try:
        bindings = reaching_bindings(node)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    if len(bindings) != 1 or not isinstance(bindings[0].parent, nodes.Arguments):
        return False
    method = bindings[0].parent.parent
    positional = method.args.args or []
    if not (
        isinstance(method, nodes.FunctionDef)
        and method.name == "__getitem__"
        and isinstance(method.parent, nodes.ClassDef)
        and len(positional) == 2
        and positional[1] is bindings[0]
    ):
        return False
    if _under_test_of(node, method):
        return False
    return any(_instance_of(read.value, method.parent) and is_bool_tensor(values, read.slice) for read in reads)


def _under_test_of(node: nodes.Name, method: nodes.FunctionDef) -> bool:
    """*node* sits in a branch whose test reads its name: ``if isinstance(item, int): self.tensor[item]``
    reads an integer, whatever the mask reads elsewhere pass."""
    child, parent = node, node.parent
    while parent is not None and parent is not method:
        if isinstance(parent, (nodes.If, nodes.IfExp)) and child is not parent.test:
            if any(name.name == node.name for name in parent.test.nodes_of_class(nodes.Name)):
                return True
        child, parent = parent, parent.parent
    return False


def _instance_of(node: nodes.NodeNG, klass: nodes.ClassDef) -> bool:
    """*node* infers to instances of *klass* only."""
    try:
        inferred = [value for value in node.infer() if value is not Uninferable]
    except Exception:  # astroid inference can fail on odd code; then nothing is proven
        return False
    return bool(inferred) and all(isinstance(value, Instance) and value._proxied is klass for value in inferred)
