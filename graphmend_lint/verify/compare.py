"""Output equivalence: flatten nested outputs to named leaves, then compare leaf by leaf.

Flattening first means the original arm can save plain ``{name: tensor or
scalar}`` dicts (loadable with ``torch.load(weights_only=True)``) and the
fixed arm can compare without unpickling arbitrary objects. Tuples, lists,
dicts, ``ModelOutput`` (a dict), dataclasses and plain objects such as a
transformers ``Cache`` are walked; tensors, numbers, strings and ``None`` are
leaves.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: Defaults a little looser than torch.allclose's: a source fix may reorder
#: float math (e.g. predication computes both branches) without being wrong.
DEFAULT_ATOL = 1e-6
DEFAULT_RTOL = 1e-5
_MAX_DEPTH = 12
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


@dataclass(frozen=True)
class Equivalence:
    """Whether two runs produced the same outputs, and by how much they differ."""

    outputs_equal: bool
    max_abs_diff: float | None  # None when nothing numeric could be compared
    detail: str  # the first mismatch, or "" when equal


def flatten(value: Any, prefix: str = "out") -> dict[str, Any]:
    """Named leaves of a nested output, e.g. ``out.logits``, ``out[1].layers[0].keys``."""
    leaves: dict[str, Any] = {}
    _flatten(value, prefix, leaves, 0, set())
    return leaves


def _flatten(value: Any, name: str, leaves: dict[str, Any], depth: int, seen: set[int]) -> None:
    if isinstance(value, torch.Tensor):
        leaves[name] = value.detach().cpu().clone()
        return
    if isinstance(value, _SCALARS):
        leaves[name] = value
        return
    if depth >= _MAX_DEPTH or id(value) in seen:
        leaves[name] = f"<{type(value).__name__}>"
        return
    seen = seen | {id(value)}
    if isinstance(value, Mapping):
        items = [(f"{name}.{key}", item) for key, item in value.items()]
    elif isinstance(value, Sequence):
        items = [(f"{name}[{i}]", item) for i, item in enumerate(value)]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f"{name}.{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, torch.nn.Module) or callable(value) or not hasattr(value, "__dict__"):
        leaves[name] = f"<{type(value).__name__}>"
        return
    else:
        items = [(f"{name}.{key}", item) for key, item in vars(value).items() if not key.startswith("_")]
    leaves[f"{name}:type"] = type(value).__name__
    for child, item in items:
        _flatten(item, child, leaves, depth + 1, seen)


def compare(
    reference: Sequence[Mapping[str, Any]],
    candidate: Sequence[Mapping[str, Any]],
    atol: float = DEFAULT_ATOL,
    rtol: float = DEFAULT_RTOL,
) -> Equivalence:
    """Compare flattened outputs of every input set, in order."""
    if len(reference) != len(candidate):
        return Equivalence(False, None, f"{len(reference)} input sets ran originally, {len(candidate)} after the fix")
    worst: float | None = None
    first_mismatch = ""
    for index, (ref, got) in enumerate(zip(reference, candidate)):
        missing = sorted(set(ref) ^ set(got))
        if missing and not first_mismatch:
            first_mismatch = f"input set {index}: output structure differs at {missing[0]}"
        for name in sorted(set(ref) & set(got)):
            equal, diff, why = _compare_leaf(ref[name], got[name], atol, rtol)
            if diff is not None:
                worst = diff if worst is None else max(worst, diff)
            if not equal and not first_mismatch:
                first_mismatch = f"input set {index}: {name}: {why}"
    return Equivalence(not first_mismatch, worst, first_mismatch)


def _compare_leaf(ref: Any, got: Any, atol: float, rtol: float) -> tuple[bool, float | None, str]:
    """``(equal, max_abs_diff or None, reason)`` for one pair of leaves."""
    if isinstance(ref, torch.Tensor) and isinstance(got, torch.Tensor):
        if ref.shape != got.shape or ref.dtype != got.dtype:
            return False, None, f"{tuple(ref.shape)} {ref.dtype} became {tuple(got.shape)} {got.dtype}"
        if ref.numel() == 0:
            return True, 0.0, ""
        if not (ref.is_floating_point() or ref.is_complex()):
            diff = (ref.to(torch.float64) - got.to(torch.float64)).abs().max().item()
            return bool(torch.equal(ref, got)), diff, "integer values differ"
        both_nan = torch.isnan(ref) & torch.isnan(got)
        delta = torch.where(both_nan, torch.zeros_like(ref), ref - got).abs()
        diff = float(torch.nan_to_num(delta.to(torch.float64), nan=math.inf).max().item())
        equal = torch.allclose(ref, got, atol=atol, rtol=rtol, equal_nan=True)
        return equal, diff, f"max abs diff {diff:.3g} exceeds atol={atol:g}, rtol={rtol:g}"
    if isinstance(ref, (int, float)) and isinstance(got, (int, float)) and not isinstance(ref, bool):
        diff = abs(float(ref) - float(got))
        equal = math.isclose(ref, got, rel_tol=rtol, abs_tol=atol) or (math.isnan(ref) and math.isnan(got))
        return equal, diff, f"{ref!r} became {got!r}"
    return type(ref) is type(got) and ref == got, None, f"{ref!r} became {got!r}"
