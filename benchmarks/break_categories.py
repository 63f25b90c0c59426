"""Issue 15's categories of real-model graph breaks, decided per logged site from its GB id, file and code.

A logged site is ``(file, line, GB id)``; its *code* is the source line
there and the statement that line belongs to (Dynamo blames each operand line
of a multi-line condition). Rules are tried in order, first match wins; each
says why, so a reader can check a site's category against the code:

=============================  =============================================================================
category                       matched by
=============================  =============================================================================
output-capturing wrapper       GB4347, or the site is in ``transformers/utils/output_capturing.py``
MoE expert dispatch            the code names an expert or a router (``expert_hit``, ``expert_mask[...]``...)
logging/print                  GB0291/GB0059/GB0007/GB0296, or a ``logger.``/``print(``/``warnings.warn`` call
training-only                  ``self.training``, ``layerdrop`` or ``torch.rand`` in the code
numpy plans                    a numpy call in the code, or a value known to come from one (:data:`NUMPY_VALUES`)
.item() choosing a code path   GB0124 (``Tensor.item()``), GB0109 (``tolist``), or ``.item()``/``.tolist()``
module attribute assignment    GB0119/GB0264/GB4841/GB0161/GB0467/GB0271, or ``self.x = ...`` in the code
tensor slice bounds            GB0033/GB0170 on a line that slices (``[a:b]``)
data-dependent shapes          GB0036/GB0037/GB0246 (dynamic shape operators), GB0033 (data dependent operator)
other                          anything else, e.g. a data-dependent branch (GB0170) not covered above
=============================  =============================================================================

A site that matched none of the construct rules but is logged only in train
mode is ``training-only`` (the public census's "breaks only when training").
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Iterable

CAPTURE = "output-capturing wrapper"
MOE = "MoE expert dispatch"
LOGGING = "logging/print"
TRAINING = "training-only"
NUMPY = "numpy plans"
ITEM = ".item() choosing a code path"
ATTRIBUTE = "module attribute assignment"
SLICE = "tensor slice bounds"
DYNAMIC = "data-dependent shapes"
OTHER = "other"
CATEGORIES = (MOE, ITEM, SLICE, NUMPY, ATTRIBUTE, CAPTURE, TRAINING, LOGGING, DYNAMIC, OTHER)

#: Values that transformers computes with numpy and that a logged line uses without naming numpy:
#: reformer's ``np.lcm`` of its chunk lengths (``_get_least_common_mult_chunk_len``).
NUMPY_VALUES = ("least_common_mult_chunk_length",)
LOGGING_GB = {"GB0291", "GB0059", "GB0007", "GB0296"}
ITEM_GB = {"GB0124", "GB0109"}
ATTRIBUTE_GB = {"GB0119", "GB0264", "GB4841", "GB0161", "GB0467", "GB0271"}
DYNAMIC_GB = {"GB0036", "GB0037", "GB0246", "GB0033"}
SLICE_GB = {"GB0033", "GB0170"}

_EXPERT = re.compile(r"expert|router|num_experts", re.IGNORECASE)
_LOGGING = re.compile(r"\blogger\.|\blogging\.|\bprint\(|\bwarnings\.warn")
_TRAINING = re.compile(r"\bself\.training\b|layerdrop|torch\.rand\(")
_NUMPY = re.compile(r"\bnp\.|\bnumpy\.")
_ITEM = re.compile(r"\.item\(\)|\.tolist\(\)")
_ATTRIBUTE = re.compile(r"^\s*self\.\w+\s*=[^=]")
_SLICE = re.compile(r"\[[^\]]*:[^\]]*\]")


def statement_at(filename: str, line: int, context: int = 3) -> str:
    """The logged line and up to ``context`` lines around it (a multi-line statement's other operands)."""
    lines = [linecache.getline(filename, n) for n in range(max(1, line - context), line + context + 1)]
    return "".join(lines)


def categorise(gb_id: str | None, filename: str, code: str, *, train_only: bool = False,
               context: str = "") -> tuple[str, str]:
    """``(category, why)`` for one logged site; ``code`` is the logged line, ``context`` the lines around it."""
    gb = (gb_id or "").upper()
    around = context or code
    if gb == "GB4347" or filename.replace("\\", "/").endswith("utils/output_capturing.py"):
        return CAPTURE, "GB4347 / utils/output_capturing.py"
    if _EXPERT.search(code):
        return MOE, "names an expert or router"
    if gb in LOGGING_GB or _LOGGING.search(code):
        return LOGGING, f"{gb or 'no GB id'} / logger or print call"
    if _TRAINING.search(code):
        return TRAINING, "self.training / layerdrop / torch.rand"
    if _NUMPY.search(code) or any(name in around for name in NUMPY_VALUES):
        return NUMPY, "numpy call or numpy-derived value"
    if gb in ITEM_GB or _ITEM.search(code):
        return ITEM, f"{gb or 'no GB id'} / .item() or .tolist()"
    if gb in ATTRIBUTE_GB or _ATTRIBUTE.search(code):
        return ATTRIBUTE, f"{gb or 'no GB id'} / self.attribute assignment or module built in forward"
    if gb in SLICE_GB and _SLICE.search(code):
        return SLICE, f"{gb} on a slicing line"
    if gb in DYNAMIC_GB:
        return DYNAMIC, f"{gb}: dynamic shape / data dependent operator"
    if train_only:
        return TRAINING, "logged only in train mode"
    return OTHER, gb or "no GB id"


def categorise_site(site: dict[str, object], train_only: bool = False) -> tuple[str, str]:
    """:func:`categorise` for a verify break dict (``filename``, ``line``, ``gb_id``), reading the code from disk."""
    filename, line = str(site["filename"]), int(site["line"])  # type: ignore[call-overload]
    code = linecache.getline(filename, line)
    gb_id = site.get("gb_id")
    return categorise(gb_id if isinstance(gb_id, str) else None, filename, code, train_only=train_only,
                      context=statement_at(filename, line))


def ordered(categories: Iterable[str]) -> list[str]:
    """Categories in the issue's order."""
    present = set(categories)
    return [c for c in CATEGORIES if c in present]
