"""GM101's ``torch.cond`` fix for call-bearing branches (``graphmend_lint/fixes/predicate_cond.py``).

Without torch: which branches get ``torch.cond`` rather than ``torch.where``,
the exact text written, and every decline carrying its reason. With torch
(``dynamo`` marker): the catalog's cond programs compile with
``fullgraph=True``, give the original's outputs and gradients, and the torch
2.13 facts the rewrite is built on (no aliased outputs, the inductor backward
bug) still hold.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.diagnostics import Applicability, Fix

CATALOG = Path(__file__).resolve().parents[1] / "rules" / "GM101"
COND_PROGRAMS = ["call_bearing", "cond_tuple", "cond_return", "cond_passthrough"]

HEADER = """import torch
from torch import nn


def noisy(h):
    print(h)
    return h * 2


def double(h):
    return h * 2


def checked(h):
    if h.dim() != 2:  # static: traces
        return h
    if not (h > -100).all():
        raise ValueError("out of range")
    return h * 2


def routed(h):
    while h.sum() > 0:
        h = h - 1
    return h


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.act = nn.ReLU(inplace=True)
        self.cache = []

    def _bump(self, h):
        self.calls = 1
        return h + 1

    def forward(self, x):
"""
FOOTER = "\n\ncompiled = torch.compile(Block())\n"
#: The line of a body's first statement: the branch functions are named after the `if`'s line.
LINE = HEADER.count("\n") + 1


def program(body: str) -> str:
    """A module whose compiled ``forward`` is *body*, starting on line :data:`LINE`."""
    return HEADER + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8) + "\n" + FOOTER


def gm101_fix(source: str) -> Fix:
    """The fix of the one GM101 finding in *source*."""
    found = [d.fix for d in lint_source(source, "block.py") if d.code == "GM101" and d.fix is not None]
    assert len(found) == 1, found
    return found[0]


def fixed_forward(source: str) -> str:
    fixed = fix_source(source, "block.py", unsafe=True).source
    return fixed[fixed.index("    def forward") : fixed.index(FOOTER)]


# -- which rewrite ----------------------------------------------------------------------


def test_a_call_given_the_branched_on_value_is_declined() -> None:
    """VQ-Diffusion's ``if timestep == 0: ... else: self.q_posterior(..., timestep)``: the helpers index with
    the timestep, which ``torch.cond`` traces as a symbol and fails on, in eager mode too (measured)."""
    source = program(
        """
        t = x.sum()
        if t == 0:
            h = x
        else:
            h = double(x * t)
        return h
        """
    )
    fix = gm101_fix(source)
    assert fix.applicability is Applicability.DISPLAY_ONLY
    assert "`t`, which the test branches on" in fix.message


def test_call_bearing_branches_get_cond_with_operands_and_a_message() -> None:
    source = program(
        """
        if x.sum() > 0:  # positive
            h = double(self.a(x))
        else:
            h = torch.relu(self.b(x))
        return h
        """
    )
    fix = gm101_fix(source)
    assert fix.applicability is Applicability.UNSAFE
    assert "torch.cond" in fix.message
    assert fixed_forward(source) == (
        "    def forward(self, x):\n"
        "        # positive\n"
        f"        def _gm_cond_true_{LINE}(x):\n"
        "            return double(self.a(x))\n"
        "\n"
        f"        def _gm_cond_false_{LINE}(x):\n"
        "            return torch.relu(self.b(x))\n"
        "\n"
        f"        h = torch.cond(x.sum() > 0, _gm_cond_true_{LINE}, _gm_cond_false_{LINE}, (x,))\n"
        "        return h\n"
    )


def test_cheap_and_torch_only_branches_keep_where() -> None:
    source = program(
        """
        if x.sum() > 0:
            h = torch.sigmoid(x) * 2
        else:
            h = x.relu()
        return h
        """
    )
    assert "torch.where" in gm101_fix(source).message
    assert "h = torch.where(x.sum() > 0, torch.sigmoid(x) * 2, x.relu())" in fixed_forward(source)


def test_cond_is_hidden_without_unsafe_fixes() -> None:
    source = program("if x.sum() > 0:\n    h = self.a(x)\nelse:\n    h = self.b(x)\nreturn h")
    assert fix_source(source, "block.py").source == source


def test_several_names_return_a_tuple_and_temporaries_stay_inside() -> None:
    source = program(
        """
        if x.sum() > 0:
            t = self.a(x)
            h = t * 2
            g = torch.sigmoid(t)
        else:
            h = self.b(x)
            g = torch.tanh(h)
        return h * g
        """
    )
    forward = fixed_forward(source)
    assert (
        "            t = self.a(x)\n            h = t * 2\n            g = torch.sigmoid(t)\n            return h, g\n"
        in forward
    )
    assert f"        h, g = torch.cond(x.sum() > 0, _gm_cond_true_{LINE}, _gm_cond_false_{LINE}, (x,))\n" in forward


def test_kept_value_and_returned_input_are_cloned() -> None:
    update = fixed_forward(program("h = x * 2\nif x.sum() > 0:\n    h = h + self.a(x)\nreturn h"))
    assert f"def _gm_cond_false_{LINE + 1}(h, x):\n            return h.clone()" in update
    returned = fixed_forward(program("if x.sum() > 0:\n    return x\nreturn self.a(x)"))
    assert "return x.clone()" in returned and "return self.a(x)\n" in returned
    assert f"        return torch.cond(x.sum() > 0, _gm_cond_true_{LINE}, _gm_cond_false_{LINE}, (x,))" in returned


def test_branch_function_names_never_clash() -> None:
    taken = f"_gm_cond_true_{LINE}"
    source = program(f"if x.sum() > 0:\n    h = self.a(x)\nelse:\n    h = self.b(x)\n{taken} = h\nreturn {taken}")
    expected = f"h = torch.cond(x.sum() > 0, {taken}_2, _gm_cond_false_{LINE}_2, (x,))"
    assert expected in fixed_forward(source)


# -- declines ---------------------------------------------------------------------------

DECLINES = {
    "statement for its effect": (
        "if x.sum() > 0:\n    h = self.a(x)\n    self.cache.append(h)\nelse:\n    h = self.b(x)\nreturn h",
        "runs for its effect",
    ),
    "in-place op": (
        "if x.sum() > 0:\n    h = self.a(x).add_(1)\nelse:\n    h = self.b(x)\nreturn h",
        "has side effects",
    ),
    "augmented assignment": (
        "h = self.b(x)\nif x.sum() > 0:\n    h += self.a(x)\nreturn h",
        "updates a value in place",
    ),
    "one-sided return": (
        "if x.sum() > 0:\n    return self.a(x)\nh = self.b(x)\nreturn h",
        "control leaves the `if` on one side",
    ),
    "one side returns": (
        "if x.sum() > 0:\n    return self.a(x)\nelse:\n    h = self.b(x)\nreturn h",
        "control leaves the `if` on one side",
    ),
    "returns None": ("if x.sum() > 0:\n    return self.a(x)\nelse:\n    return None", "returns None"),
    "tuple against single value": (
        "if x.sum() > 0:\n    return self.a(x), x\nelse:\n    return self.b(x)",
        "one branch returns a tuple and the other a single value",
    ),
    "non-tensor output": (
        "if x.sum() > 0:\n    h = self.a(x)\n    n = 1\nelse:\n    h = self.b(x)\n    n = 2\nreturn h * n",
        "`n` is assigned `1`, which is not known to be a tensor",
    ),
    "different shapes": (
        "if x.sum() > 0:\n    h = self.a(x).sum(-1)\nelse:\n    h = self.b(x)\nreturn h",
        "may have different shapes",
    ),
    "different dtypes": (
        "if x.sum() > 0:\n    h = self.a(x).double()\nelse:\n    h = self.b(x).float()\nreturn h",
        "`h` is float64 on one side and float32 on the other",
    ),
    "one side, no earlier value": (
        "if x.sum() > 0:\n    h = self.a(x)\nreturn h",
        "assigned on one side only and has no value before the `if`",
    ),
    "helper prints": (
        "if x.sum() > 0:\n    h = noisy(self.a(x))\nelse:\n    h = self.b(x)\nreturn h",
        "`noisy(self.a(x))` calls `print()`",
    ),
    "helper raises": (
        "if x.sum() > 0:\n    h = checked(self.a(x))\nelse:\n    h = self.b(x)\nreturn h",
        "`checked(self.a(x))` may raise (line 18)",
    ),
    "helper branches on a tensor": (
        "if x.sum() > 0:\n    h = routed(self.a(x))\nelse:\n    h = self.b(x)\nreturn h",
        "`routed(self.a(x))` branches on a tensor value (line 23)",
    ),
    "method mutates self": (
        "if x.sum() > 0:\n    h = self._bump(self.a(x))\nelse:\n    h = self.b(x)\nreturn h",
        "mutates `self.calls` in place",
    ),
    "in-place layer": (
        "if x.sum() > 0:\n    h = self.act(self.a(x))\nelse:\n    h = self.b(x)\nreturn h",
        "built with `inplace=True`",
    ),
    "elif chain": (
        "if x.sum() > 0:\n    h = self.a(x)\nelif x.mean() < -1:\n    h = self.b(x)\nelse:\n    h = x * 2\nreturn h",
        "would need nested `torch.cond`",
    ),
    "nested control flow": (
        (
            "if x.sum() > 0:\n    h = self.a(x)\n    if self.training:\n        h = h * 2\n"
            "else:\n    h = self.b(x)\nreturn h"
        ),
        "nested control flow inside a branch",
    ),
    "closure over mutated state": (
        (
            "scale = [1.0]\nscale.append(2.0)\n"
            "if x.sum() > 0:\n    h = self.a(x) * scale[0]\nelse:\n    h = self.b(x) * scale[0]\nreturn h"
        ),
        "closes over `scale`, which the function mutates in place",
    ),
    "non-tensor read then rebound": (
        "k = 2\nif x.sum() > 0:\n    h = self.a(x) * k\n    k = 3\nelse:\n    h = self.b(x)\nreturn h",
        "`k` is read and then rebound in a branch",
    ),
    "clone would cut a mutated alias": (
        "if x.sum() > 0:\n    h = self.a(x)\nelse:\n    h = x\nh.mul_(2)\nreturn h",
        f"`h` is mutated in place at line {LINE + 4}",
    ),
}


@pytest.mark.parametrize("body", DECLINES, ids=list(DECLINES))
def test_declines_say_why(body: str) -> None:
    source, reason = DECLINES[body]
    fix = gm101_fix(program(source))
    assert fix.applicability is Applicability.DISPLAY_ONLY and not fix.edits
    assert fix.message.startswith("No automatic fix: ") and reason in fix.message, fix.message
    assert "if x.sum() > 0:" in fix_source(program(source), "block.py", unsafe=True).source


# -- against torch ------------------------------------------------------------------------


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"cond_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Dynamo resolves the program's globals through sys.modules
    spec.loader.exec_module(module)
    return module


def _made(name: str, kind: str) -> tuple[Any, list[tuple[Any, ...]]]:
    import torch

    torch.manual_seed(0)
    return _load(CATALOG / f"{kind}_{name}.py").make()


def _gradients(fn: Any, args: tuple[Any, ...]) -> list[Any]:
    """Gradients of ``fn(*args).sum()`` for the inputs and the module's parameters (unused: zeros)."""
    import torch

    leaves = [a.detach().clone().requires_grad_() for a in args]
    wrt = [*leaves, *(getattr(fn, "_orig_mod", fn).parameters())]
    grads = torch.autograd.grad(fn(*leaves).sum(), wrt, allow_unused=True)
    return [torch.zeros_like(t) if g is None else g for g, t in zip(grads, wrt)]


def _close(first: list[Any], second: list[Any]) -> bool:
    import torch

    return all(torch.allclose(a, b, atol=1e-5) for a, b in zip(first, second, strict=True))


@pytest.mark.dynamo
@pytest.mark.parametrize("name", COND_PROGRAMS)
def test_cond_programs_compile_whole_and_match_the_original(name: str) -> None:
    torch = pytest.importorskip("torch")
    original, inputs = _made(name, "bad")
    fixed, _ = _made(name, "fixed")
    torch._dynamo.reset()
    whole = torch.compile(fixed, fullgraph=True, backend="aot_eager")  # fullgraph: a graph break is an error
    for args in inputs:
        expected = _gradients(original, args)
        assert torch.allclose(whole(*args), original(*args), atol=1e-6)
        assert _close(_gradients(fixed, args), expected)
        assert _close(_gradients(whole, args), expected)


@pytest.mark.dynamo
def test_inductor_gradients_need_inplace_buffers_off() -> None:
    """torch 2.13's inductor reuses cond's incoming gradient in place; with that off, gradients match."""
    torch = pytest.importorskip("torch")
    import torch._inductor.config as inductor_config

    original, inputs = _made("call_bearing", "bad")
    fixed, _ = _made("call_bearing", "fixed")
    torch._dynamo.reset()
    with inductor_config.patch(inplace_buffers=False):
        compiled = torch.compile(fixed, fullgraph=True)
        for args in inputs:
            assert _close(_gradients(compiled, args), _gradients(original, args))


@pytest.mark.dynamo
@pytest.mark.xfail(strict=True, reason="torch 2.13 inductor: cond's backward overwrites a gradient it shares")
def test_inductor_cond_gradient_with_a_second_path() -> None:
    """The minimal case the docstrings cite: d/dx of ``x + cond(p, 2t, 3t)`` is 3, inductor says 4."""
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x + torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t * 3, (x,)))
    x = torch.ones(2, requires_grad=True)
    assert torch.autograd.grad(compiled(x).sum(), x)[0].tolist() == [3.0, 3.0]


@pytest.mark.dynamo
def test_cond_outputs_may_not_alias_inputs_so_the_fix_clones() -> None:
    """Why a kept value is returned as ``.clone()``: in grad mode cond refuses an output aliasing an operand."""
    torch = pytest.importorskip("torch")
    x = torch.ones(4, 8)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="aliasing"):
        torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t, (x,))
    torch._dynamo.reset()
    assert torch.equal(torch.cond(x.sum() > 0, lambda t: t.clone(), lambda t: t + 1, (x,)), x)
