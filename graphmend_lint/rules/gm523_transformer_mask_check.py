"""GM523: ``nn.Transformer`` / ``TransformerEncoder`` / ``TransformerDecoder`` asked to find out whether a mask is causal."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.module_attributes import constructor_of
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic, Edit, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types


@dataclass(frozen=True)
class CheckedMask:
    """A mask parameter of a transformer module's ``forward`` that torch tests for causality, and the flag
    that spares the test."""

    name: str
    position: int  # in the call, not counting ``self``
    flag: str
    flag_position: int


#: ``torch.nn`` transformer modules whose ``forward`` compares a mask with a causal one on the host when its
#: causal flag is left ``None`` (``_detect_is_causal_mask``), measured on torch 2.13. Their layers
#: (``TransformerEncoderLayer``...) take the flag as given and trace.
_CHECKED: dict[str, tuple[CheckedMask, ...]] = {
    "TransformerEncoder": (CheckedMask("mask", 1, "is_causal", 3),),
    "TransformerDecoder": (CheckedMask("tgt_mask", 2, "tgt_is_causal", 6),),
    "Transformer": (CheckedMask("src_mask", 2, "src_is_causal", 8), CheckedMask("tgt_mask", 3, "tgt_is_causal", 9)),
}
_CAUSAL_MASK_BUILDER = "generate_square_subsequent_mask"
HINT = Fix.advice(
    "no automatic fix: pass the causal flag (`is_causal=True` for a causal mask, `False` otherwise) so torch "
    "need not compare the mask on the host"
)
_HEADER = (
    "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1)\n\n"
    "    def forward(self, x):\n        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[0])\n"
)
_FOOTER = "\n\nmodel = torch.compile(Model())\n"


class TransformerMaskCheck(Rule):
    """## What it does
    Flags a call of a `torch.nn.TransformerEncoder`, `TransformerDecoder`
    or `Transformer` module with a mask (`mask`, `tgt_mask`, `src_mask`)
    and no causal flag (`is_causal`, `tgt_is_causal`, `src_is_causal`), in
    code that `torch.compile` traces. Sequence models built on these
    modules pass a `generate_square_subsequent_mask` mask this way
    (Music Transformer, PyTorch's own language-model tutorial).

    ## Why is this bad
    With the flag left `None`, the module finds out whether the mask is
    causal by comparing it with a causal one and reading the answer on the
    host (`bool((mask == causal).all())`): Dynamo logs "Unsupported
    Tensor.item() call" (GB0124) at the call (measured, torch 2.13, for all
    three modules, in eval and training mode). Inside a loop (a decoding
    loop), Dynamo then runs the whole function eagerly. Any flag given
    (`True` or `False`) skips the comparison and traces; so does a call with
    no mask or only padding masks, and a call of a layer
    (`TransformerEncoderLayer`), which takes the flag as given.

    ## Example
    ```python
    mask = nn.Transformer.generate_square_subsequent_mask(x.shape[0])
    return self.encoder(x, mask=mask)
    ```

    ## Use instead
    ```python
    mask = nn.Transformer.generate_square_subsequent_mask(x.shape[0])
    return self.encoder(x, mask=mask, is_causal=True)
    ```

    ## Fix safety
    Safe, and offered only when every value the mask can hold is a
    `generate_square_subsequent_mask(...)` result: torch's own test would
    then find it causal and set the same flag, so the output is unchanged.
    A mask of any other origin (or one that may be `None`: `is_causal=True`
    without a mask raises) gets a hint instead: the flag is the caller's
    promise, and a wrong `True` computes a different attention.
    """

    code = "GM523"
    name = "transformer-mask-check"
    summary = "a transformer module asked to test its mask for causality reads the answer on the host"
    dynamo_gb = gb_types("GB0124")
    valid = (
        _HEADER + "        return self.encoder(x, mask=mask, is_causal=True)\n" + _FOOTER,
        _HEADER + "        return self.encoder(x, mask, None, False)\n" + _FOOTER,
        # padding masks only: nothing to test
        _HEADER + "        return self.encoder(x, src_key_padding_mask=x[..., 0] > 0)\n" + _FOOTER,
        # a layer takes the flag as given
        _HEADER.replace("nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1)", "nn.TransformerEncoderLayer(8, 2)")
        + "        return self.encoder(x, src_mask=mask)\n" + _FOOTER,
    )
    invalid = (
        Example(
            _HEADER + "        return self.encoder(x, mask=mask)\n" + _FOOTER,
            fixed=_HEADER + "        return self.encoder(x, mask=mask, is_causal=True)\n" + _FOOTER,
        ),
        Example(
            _HEADER + "        return self.encoder(x, mask)\n" + _FOOTER,
            fixed=_HEADER + "        return self.encoder(x, mask, is_causal=True)\n" + _FOOTER,
        ),
        # a mask that may be None: hint only
        Example(
            _HEADER + "        mask = mask if x.shape[0] > 1 else None\n        return self.encoder(x, mask=mask)\n" + _FOOTER,
            advice=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        values = ctx.values
        for call, traced in ctx.traced_nodes(nodes.Call):
            module, _, layer = (constructor_of(values, call.func) or "").rpartition(".")
            if not module.startswith("torch.nn") or layer not in _CHECKED:
                continue
            tested = [(checked, mask) for checked in _CHECKED[layer] if (mask := _tested_mask(call, checked)) is not None]
            if not tested:
                continue
            names = ", ".join(f"`{checked.name}`" for checked, _ in tested)
            flags = " / ".join(f"`{checked.flag}`" for checked, _ in tested)
            message = (
                f"`{snippet(call.func)}(...)` gets {names} without {flags}: the `nn.{layer}` compares the mask "
                "with a causal one on the host (`.item()`), a graph break"
            )
            yield ctx.report(call, message, traced, _flag_fix(ctx, call, tested))


def _argument(call: nodes.Call, name: str, position: int) -> nodes.NodeNG | None:
    """What *call* passes for the parameter *name* at *position* (``None`` when it passes nothing)."""
    for keyword in call.keywords or ():
        if keyword.arg == name:
            return keyword.value
    positional = call.args or []
    if any(isinstance(argument, nodes.Starred) for argument in positional[: position + 1]):
        return None
    return positional[position] if position < len(positional) else None


def _tested_mask(call: nodes.Call, checked: CheckedMask) -> nodes.NodeNG | None:
    """The mask *call* passes for *checked* when it leaves the flag unset (``**kwargs`` may set it: not flagged)."""
    if any(keyword.arg is None for keyword in call.keywords or ()):
        return None
    mask = _argument(call, checked.name, checked.position)
    if mask is None or _is_none(mask):
        return None
    flag = _argument(call, checked.flag, checked.flag_position)
    return mask if flag is None or _is_none(flag) else None


def _is_none(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Const) and node.value is None


def _flag_fix(ctx: RuleContext, call: nodes.Call, tested: list[tuple[CheckedMask, nodes.NodeNG]]) -> Fix:
    """``is_causal=True`` after the last argument, when every tested mask is provably a causal one."""
    if not all(_causal_mask(mask) for _, mask in tested):
        return HINT
    if any(_argument(call, checked.flag, checked.flag_position) is not None for checked, _ in tested):
        return HINT  # an explicit ``is_causal=None``: rewriting it is not worth a second edit shape
    last = max([*(call.args or []), *(keyword.value for keyword in call.keywords or [])], key=lambda n: (n.end_lineno, n.end_col_offset))
    flags = "".join(f", {checked.flag}=True" for checked, _ in tested)
    end = ctx.analysis.end_of(last)
    return Fix(
        edits=(Edit(end, end, flags),),
        applicability=Applicability.SAFE,
        message=f"Pass {' and '.join(f'`{checked.flag}=True`' for checked, _ in tested)}: the mask is causal",
    )


def _causal_mask(node: nodes.NodeNG) -> bool:
    """*node* is a ``generate_square_subsequent_mask(...)`` result, directly or through every binding of a name."""
    if isinstance(node, nodes.Call):
        func = node.func
        return isinstance(func, nodes.Attribute) and func.attrname == _CAUSAL_MASK_BUILDER
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(_causal_mask(value) for value in bound)
    return False
