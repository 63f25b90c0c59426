"""What the corpus counts as a program's warnings (tests/corpus/behaviour.py).

A fix must not change the warnings a program emits in eager mode, but torch's
own warnings are not the program's: C++ ones are often once per process, so
the copy measured second would look as if the fix had silenced them.
"""

from __future__ import annotations

import warnings

import torch

from tests.corpus.behaviour import _torch_warning, observe

CPP_MESSAGE = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first. (Triggered internally at /src/python_variable_methods.cpp:822.)"
)


def _caught(message: str, filename: str) -> warnings.WarningMessage:
    return warnings.WarningMessage(UserWarning(message), UserWarning, filename, 3)


def test_a_torch_core_warning_blamed_on_the_program_is_torchs() -> None:
    assert _torch_warning(_caught(CPP_MESSAGE, "/work/project/model.py"))


def test_a_warning_of_a_torch_file_is_torchs() -> None:
    assert _torch_warning(_caught("deprecated", "/venv/lib/python3.11/site-packages/torch/nn/functional.py"))


def test_the_programs_own_warning_is_kept() -> None:
    assert not _torch_warning(_caught("loss is not finite", "/work/project/model.py"))


def test_observing_twice_sees_the_same_warnings() -> None:
    def program(x: torch.Tensor) -> float:
        warnings.warn("the program's own")
        return x.sum().item()

    x = torch.ones(2, requires_grad=True)
    first, second = observe(program, (x,)), observe(program, (x,))
    assert first.warned == second.warned == [("UserWarning", "the program's own")]
