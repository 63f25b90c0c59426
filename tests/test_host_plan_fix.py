"""GM204's NumPy-plan fix without Dynamo: when the custom op is written, and when the hint stays.

``tests/test_catalog_dynamo.py`` measures the catalog pair
(``rules/GM204/*_spec_augment_plan.py``) with Dynamo; these cases pin the
static conditions of :mod:`graphmend_lint.analysis.host_plans`.
"""

from __future__ import annotations

import pytest

from graphmend_lint import fix_source, lint_source

PLAN = (
    "import numpy as np\nimport torch\n\n\ndef plan(shape: {shape}, p: float, mask: {mask} = None) -> np.ndarray:\n"
    "    rows, cols = shape\n    out = np.zeros((rows, cols), dtype=bool)\n    if np.random.rand() < p:\n"
    "        out[:, 0] = True\n    return out\n\n\n@torch.compile\ndef f(x):\n{body}"
)
CALL = "    m = plan(x.shape, 0.5)\n    m = torch.tensor(m, device=x.device, dtype=torch.bool)\n    return x.masked_fill(m, 0)\n"


def source(shape: str = "tuple[int, int]", mask: str = "torch.Tensor | None", body: str = CALL) -> str:
    return PLAN.format(shape=shape, mask=mask, body=body)


def rewritten(text: str) -> bool:
    return "torch.library.custom_op" in fix_source(text, unsafe=True).source


def test_the_op_replaces_helper_call_and_conversion_and_a_second_fix_changes_nothing() -> None:
    fixed = fix_source(source(), unsafe=True).source
    assert "    m = _plan_on_host(x.shape, 0.5, device=x.device, dtype=torch.bool)\n    return" in fixed
    assert "    shape: list[int],\n    p: float,\n    mask: torch.Tensor | None = None,\n    *,\n" in fixed
    assert "    array = plan(tuple(shape), p, mask)\n" in fixed
    assert "    rows, cols = shape\n    return torch.empty((rows, cols), device=device, dtype=dtype)\n" in fixed
    assert fix_source(fixed, unsafe=True).source == fixed
    assert not [d for d in lint_source(fixed) if d.code == "GM204"], "the helper runs inside the op: not traced"
    assert fix_source(source()).source == source(), "unsafe: a plain --fix leaves it"


def test_optional_is_spelled_as_the_module_does() -> None:
    text = source(mask="Optional[torch.Tensor]").replace("import numpy", "from typing import Optional\n\nimport numpy")
    fixed = fix_source(text, unsafe=True).source
    assert "mask: Optional[torch.Tensor] = None" in fixed and "device: Optional[torch.device]" in fixed


@pytest.mark.parametrize(
    ("shape", "mask", "body"),
    [
        ("tuple", "torch.Tensor | None", CALL),  # an element type the schema cannot state
        ("tuple[int, int]", "dict", CALL),
        ("tuple[int, int]", "torch.Tensor | None", CALL.replace("    m = torch.tensor(", "    y = x + 1\n    m = torch.tensor(")),
        ("tuple[int, int]", "torch.Tensor | None", CALL.replace("dtype=torch.bool", "pin_memory=False")),
        ("tuple[int, int]", "torch.Tensor | None", "    m = plan(x.shape, 0.5)\n    return x * float(m.sum())\n"),
    ],
)
def test_the_hint_stays_when_the_op_cannot_be_stated(shape: str, mask: str, body: str) -> None:
    text = source(shape, mask, body)
    assert [d.code for d in lint_source(text)].count("GM204") == 1
    assert not rewritten(text)


def test_a_shape_read_through_a_call_is_not_known() -> None:
    text = source().replace("    rows, cols = shape\n", "    rows, cols = tuple(shape)\n")
    assert not rewritten(text)


def test_an_array_returned_from_two_factories_is_not_known() -> None:
    text = source().replace("    return out\n", "    if p > 1:\n        return np.ones((rows, 1), dtype=bool)\n    return out\n")
    assert not rewritten(text)


def test_an_array_resized_in_place_is_not_known() -> None:
    assert not rewritten(source().replace("    return out\n", "    out.resize((rows * cols,))\n    return out\n"))


def test_a_conversion_sharing_its_line_is_not_cut() -> None:
    body = CALL.replace("dtype=torch.bool)\n", "dtype=torch.bool); y = x + 1\n")
    assert not rewritten(source(body=body))


def test_only_numpy_draws_are_measured_plans() -> None:
    text = source().replace("np.random.rand() < p", "random.random() < p").replace("import numpy", "import random\nimport numpy")
    assert [d.code for d in lint_source(text)].count("GM204") == 1
    assert not rewritten(text)
