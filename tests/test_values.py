"""The value-kind oracle on a table of expressions (TENSOR / STATIC / UNKNOWN)."""

from __future__ import annotations

import ast

import pytest
from astroid import nodes

from graphmend_lint.analysis.imports import ImportTable
from graphmend_lint.analysis.scope import analyze_scope
from graphmend_lint.analysis.values import Kind
from graphmend_lint.config import Settings
from graphmend_lint.pipeline import _file_analysis
from graphmend_lint.source import SourceFile

T, S, U = Kind.TENSOR, Kind.STATIC, Kind.UNKNOWN

PRELUDE = """
import math
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def helper_tensor(x):
    return x * 2


def helper_static(n):
    return n + 1


class Block(nn.Module):
    def forward(self, x):
        return x


class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.block = Block()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.weight = nn.Parameter(torch.ones(4))
        self.register_buffer("scale", torch.ones(1))
        self.config = config
        self.threshold = 0.5
        self.name = "net"

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, n: int = 3, flag: bool = False,
                mode: str = "mean", use_cache=True, hidden=None, *, eps: float = 1e-5):
        h = self.proj(x)
        s = x.sum()
        a, b = x.chunk(2)
        k = x.shape[0]
        flag_t = s > 0
        y = x
        y += 1
        q = helper_tensor(x)
        r = helper_static(3)
        for row in x:
            pass
        for i in range(n):
            pass
        for j, layer in enumerate(self.layers):
            pass
"""

CASES: list[tuple[str, Kind]] = [
    # torch calls and functional
    ("torch.randn(3)", T), ("torch.zeros_like(x)", T), ("torch.where(x > 0, x, 0)", T), ("torch.cat([x, x])", T),
    ("F.relu(x)", T), ("F.softmax(x, dim=-1)", T), ("torch.nn.functional.gelu(x)", T), ("torch.tensor([1.0])", T),
    ("torch.any(x > 0)", T), ("torch.isnan(x)", T), ("torch.max(x)", T), ("torch.arange(4)", T),
    # tensor methods
    ("x.sum()", T), ("x.any()", T), ("x.max()", T), ("x.mean(-1)", T), ("x.relu()", T), ("x.float()", T),
    ("x.to(torch.float16)", T), ("x.view(-1)", T), ("x.abs().max()", T), ("x.clone()", T), ("x.norm()", T),
    # arithmetic and comparisons with a tensor
    ("x + 1", T), ("1 - x", T), ("x * s", T), ("-x", T), ("x > 0", T), ("x.sum() > 0", T), ("s > 0.5", T),
    ("x @ x", T), ("(x > 0) & (x < 1)", T), ("x ** 2", T), ("s > self.threshold", T),
    # indexing
    ("x[0]", T), ("x[:, 0]", T), ("x[0] > 0", T),
    # modules, parameters, buffers
    ("self.proj(x)", T), ("self.block(x)", T), ("self.layers[0](x)", T), ("self.weight", T), ("self.scale", T),
    ("layer(x)", T), ("h", T), ("h.mean()", T),
    # parameters and locals
    ("x", T), ("s", T), ("a", T), ("b", T), ("flag_t", T), ("y", T), ("row", T), ("q", T), ("mask", T),
    # metadata Dynamo specialises on
    ("x.shape", S), ("x.shape[0]", S), ("x.size()", S), ("x.size(-1)", S), ("x.dim()", S), ("x.ndim", S),
    ("x.numel()", S), ("x.dtype", S), ("x.device", S), ("x.requires_grad", S), ("x.is_cuda", S), ("len(x)", S),
    ("isinstance(x, torch.Tensor)", S), ("mask is None", S), ("mask is not None", S), ("self.training", S),
    ("self.config.use_cache", S), ("self.config.hidden_size * 2", S), ("k", S), ("k > 2", S), ("x.shape[0] > 1", S),
    ("x.size(-1) % 2", S), ("x.dim() == 3", S), ("x.dtype == torch.float16", S), ("x.numel() == 0", S),
    ("len(x) > 3", S), ("hasattr(self, 'cache')", S),
    # Python values
    ("3", S), ("'mean'", S), ("n", S), ("flag", S), ("mode", S), ("mode == 'mean'", S), ("n + 1", S), ("i", S),
    ("j", S), ("eps", S), ("use_cache", S), ("r", S), ("math.pi", S), ("torch.float32", S), ("self.threshold", S),
    ("[1, 2]", S), ("(x, x)", S), ("n > 2 and flag", S), ("self.name", S),
    # unknown: host conversions and things the linter can't know
    ("x.item()", U), ("int(x.sum())", U), ("x.tolist()", U), ("hidden", U), ("np.sum([1, 2])", U),
    ("unknown_function(x)", U), ("self.config", S),
]


@pytest.fixture(scope="module")
def classified() -> dict[str, Kind]:
    body = "".join(f"        _v{index} = {expression}\n" for index, (expression, _) in enumerate(CASES))
    source = PRELUDE + body + "        return h\n\n\nmodel = torch.compile(Net(None))\n"
    tree = ast.parse(source)
    imports = ImportTable.from_tree(tree, "values_table")
    scope = analyze_scope(tree, imports, "values_table.py")
    analysis = _file_analysis(tree, SourceFile(source), "values_table.py", "values_table", False, imports, scope, Settings())
    kinds: dict[str, Kind] = {}
    for assign in analysis.module.nodes_of_class(nodes.Assign):
        target = assign.targets[0]
        if isinstance(target, nodes.AssignName) and target.name.startswith("_v"):
            kinds[CASES[int(target.name[2:])][0]] = analysis.values.kind(assign.value)
    return kinds


def test_table_is_large() -> None:
    assert len(CASES) >= 80


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_expression_kind(classified: dict[str, Kind], expression: str, expected: Kind) -> None:
    assert classified[expression] is expected
