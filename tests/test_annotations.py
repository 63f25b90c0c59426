"""Annotations are read through the file's imports, whatever spelling of a type they use."""

from __future__ import annotations

import ast

import astroid
import pytest
from astroid import nodes

from graphmend_lint.analysis.annotations import BOOL_TENSOR, TENSOR, UNREADABLE, annotated_types
from graphmend_lint.analysis.imports import ImportTable

IMPORTS = (
    "import torch as th\n"
    "import numpy as np\n"
    "import logging\n"
    "from torch import Tensor, nn\n"
    "from typing import List, Optional, Union\n"
    "from jaxtyping import Bool, Float, Int64, Shaped\n"
    "from torchtyping import TensorType\n"
)


def types_of(annotation: str) -> frozenset[str]:
    source = IMPORTS + f"def f(x: {annotation}): pass\n"
    table = ImportTable.from_tree(ast.parse(source), "case")
    function = astroid.parse(source).body[-1]
    assert isinstance(function, nodes.FunctionDef)
    return annotated_types(function.args.annotations[0], table.resolve)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("th.Tensor", {TENSOR}),  # guided-diffusion's ``import torch as th``
        ("Tensor", {TENSOR}),
        ("'th.Tensor'", {TENSOR}),
        ("Optional[th.Tensor]", {TENSOR}),
        ("Union[Tensor, None]", {TENSOR}),
        ("th.Tensor | None", {TENSOR}),
        ("None | th.BoolTensor", {BOOL_TENSOR}),
        ("nn.Parameter", {"torch.nn.Parameter"}),
        ('Bool[Tensor, "b n"]', {BOOL_TENSOR}),
        ('Float[th.Tensor, "b"]', {"torch.FloatTensor"}),
        ('Int64[Tensor, "b"]', {"torch.LongTensor"}),
        ('Shaped[Tensor, "b"]', {TENSOR}),
        ('Float[np.ndarray, "b"]', {UNREADABLE}),  # a NumPy array, not a tensor
        ('TensorType["batch", "dim"]', {TENSOR}),
        ("th.long", {"torch.LongTensor"}),  # diffusers' ``timestep: torch.long``: a dtype meant as a tensor
        ("Optional[th.bool]", {BOOL_TENSOR}),
        ("th.dtype", {"torch.dtype"}),
        ("List[Tensor]", {"typing.List"}),  # a list of tensors is a list
        ("Optional[int]", {"int"}),
        ("th.Tensor | int", {TENSOR, "int"}),
        ("logging.Logger", {"logging.Logger"}),
        ("'not an expression ('", {UNREADABLE}),
        ("x[0](1)", {UNREADABLE}),
    ],
)
def test_annotated_types(annotation: str, expected: set[str]) -> None:
    assert types_of(annotation) == expected
