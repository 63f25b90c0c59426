"""GM506 stays quiet unless the construction provably creates a parameter, and reports each class once."""

from __future__ import annotations

import pytest

from graphmend_lint import lint_source
from graphmend_lint.config import Settings

_HEADER = "import torch\nfrom torch import nn\nfrom helpers import make_block\n\n\n"
_INNER = (
    "class Inner(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
    "        self.proj = nn.Linear(d, d)\n\n\n"
)
_PLAIN = "class Config:\n    def __init__(self, d):\n        self.weight = nn.Parameter(torch.ones(d))\n\n\n"


def _outer(statement: str, init_statement: str = "pass") -> str:
    return (
        f"{_HEADER}{_INNER}{_PLAIN}class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        {init_statement}\n\n    def forward(self, x: torch.Tensor):\n        {statement}\n"
        "        return x * 2\n\n\nmodel = torch.compile(Outer())\n"
    )


def _gm506(source: str) -> list[tuple[int, str]]:
    return [(d.start.line, d.message) for d in lint_source(source, "m.py", Settings(select=("GM506",)))]


@pytest.mark.parametrize(
    ("statement", "init_statement"),
    [
        ("c = Config(4)", "pass"),  # not an nn.Module (its __init__ creates a Parameter all the same)
        ("y = self.inner(x)", "self.inner = Inner(4)"),  # built in __init__, only called in forward
        ("block = make_block(4)", "pass"),  # imported callee: what it builds is unknown
        ("block = Unknown(4)", "pass"),  # unresolvable name
    ],
)
def test_not_flagged(statement: str, init_statement: str) -> None:
    assert _gm506(_outer(statement, init_statement)) == []


def test_module_built_in_forward_is_flagged_at_its_init_lines_once() -> None:
    source = _outer("a = Inner(4)\n        b = Inner(8)")
    found = _gm506(source)
    assert [line for line, _ in found] == [8, 9]
    assert all("`Inner` is constructed in compiled code (`forward`, line 23)" in message for _, message in found)


def test_classes_sharing_an_init_are_reported_once() -> None:
    source = _outer("a = Child(4)\n        b = Inner(8)").replace(
        "class Config:", "class Child(Inner):\n    pass\n\n\nclass Config:"
    )
    found = _gm506(source)
    assert [line for line, _ in found] == [8, 9]
    assert all(message.startswith("`Child` is constructed") for _, message in found)


_SWITCH = (
    f"{_HEADER}{_INNER}class Other(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.norm = nn.LayerNorm(4)\n\n\nclass Outer(nn.Module):\n    def switch(self, value):\n"
    "        if value == 'full':\n            self.inner = Inner(4)\n        else:\n            self.inner = Other()\n\n"
    "    def forward(self, x: torch.Tensor):\n        self.switch({argument})\n        return x * 2\n\n\n"
    "model = torch.compile(Outer())\n"
)


@pytest.mark.parametrize(
    ("argument", "flagged"),
    [
        ("'full'", {"Inner"}),  # forward only asks for 'full': Other is built in a branch it never takes
        ("'sparse'", {"Other"}),
        ("self.mode", {"Inner", "Other"}),  # a computed argument: both branches may run
    ],
)
def test_a_branch_no_caller_takes_is_not_flagged(argument: str, flagged: set[str]) -> None:
    found = _gm506(_SWITCH.format(argument=argument))
    assert {message.split("`")[1] for _, message in found} == flagged
