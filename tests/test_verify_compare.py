"""Output flattening and comparison (torch, no Dynamo)."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")

from graphmend_lint.verify.compare import compare, flatten  # noqa: E402


@dataclass
class Pair:
    first: object
    second: object


class Cache:
    """Stands in for a transformers Cache: a plain object holding tensors."""

    def __init__(self, keys):
        self.layers = [{"keys": k} for k in keys]
        self._private = "ignored"


def test_flatten_names_every_leaf():
    value = OrderedDict(logits=torch.ones(2), extra=(1, [torch.zeros(1), None]), pair=Pair("a", 2.5),
                        cache=Cache([torch.ones(1)]))
    leaves = flatten(value)
    assert set(leaves) == {
        "out:type", "out.logits", "out.extra:type", "out.extra[0]", "out.extra[1]:type", "out.extra[1][0]",
        "out.extra[1][1]", "out.pair:type", "out.pair.first", "out.pair.second", "out.cache:type",
        "out.cache.layers:type", "out.cache.layers[0]:type", "out.cache.layers[0].keys",
    }
    assert torch.equal(leaves["out.cache.layers[0].keys"], torch.ones(1))


def test_equal_within_tolerance():
    a = [flatten((torch.tensor([1.0, 2.0]), 3))]
    b = [flatten((torch.tensor([1.0, 2.0 + 1e-9]), 3))]
    result = compare(a, b)
    assert result.outputs_equal and result.detail == ""
    assert result.max_abs_diff == pytest.approx(0.0, abs=1e-6)


def test_difference_is_reported_with_its_size():
    result = compare([flatten(torch.tensor([1.0, 2.0]))], [flatten(torch.tensor([1.0, 2.5]))])
    assert not result.outputs_equal
    assert result.max_abs_diff == pytest.approx(0.5)
    assert "out" in result.detail and "0.5" in result.detail


def test_tolerances_are_honoured():
    a, b = [flatten(torch.tensor([1.0]))], [flatten(torch.tensor([1.01]))]
    assert not compare(a, b).outputs_equal
    assert compare(a, b, atol=0.1).outputs_equal


def test_nan_in_both_is_equal_nan_in_one_is_not():
    nan = torch.tensor([math.nan, 1.0])
    assert compare([flatten(nan)], [flatten(nan.clone())]).outputs_equal
    result = compare([flatten(nan)], [flatten(torch.tensor([0.0, 1.0]))])
    assert not result.outputs_equal and result.max_abs_diff == math.inf


def test_shape_dtype_structure_and_count_mismatches():
    assert "became" in compare([flatten(torch.ones(2))], [flatten(torch.ones(3))]).detail
    assert not compare([flatten(torch.ones(2))], [flatten(torch.ones(2, dtype=torch.float64))]).outputs_equal
    assert "structure" in compare([flatten((torch.ones(1),))], [flatten((torch.ones(1), 1))]).detail
    assert "input sets" in compare([flatten(1)], []).detail


def test_integer_tensors_compare_exactly():
    ids = torch.tensor([1, 2, 3])
    assert compare([flatten(ids)], [flatten(ids.clone())]).outputs_equal
    result = compare([flatten(ids)], [flatten(torch.tensor([1, 2, 4]))])
    assert not result.outputs_equal and result.max_abs_diff == 1.0


def test_scalars_and_strings():
    assert compare([flatten({"n": 1.0, "s": "a"})], [flatten({"n": 1.0 + 1e-12, "s": "a"})]).outputs_equal
    assert not compare([flatten({"s": "a"})], [flatten({"s": "b"})]).outputs_equal
    assert not compare([flatten(True)], [flatten(1)]).outputs_equal
