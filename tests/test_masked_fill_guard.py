"""GM101's fold of ``if c: x[mask] = v`` into the mask: offered only where ``&`` provably keeps the fill's meaning."""

from __future__ import annotations

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.diagnostics import Applicability

GUARD = "import torch\n\n@torch.compile\ndef f(x, d, idx):\n    if {test}:\n        d[{mask}] = {value}\n    return x * d\n"


def _fix(test: str = "d.sum() == 0", mask: str = "d.sum(dim=1).eq(0)", value: str = "1"):
    findings = [f for f in lint_source(GUARD.format(test=test, mask=mask, value=value)) if f.code == "GM101"]
    return findings[0].fix  # one finding per tensor operand of the condition, the fix on the first


def test_a_boolean_mask_a_zero_dim_condition_and_a_number_fold() -> None:
    fix = _fix(test="torch.any(d < 0) and d.sum() == 0", mask="~(d > 2)", value="-1.5")
    assert fix.applicability is Applicability.UNSAFE
    source = GUARD.format(test="torch.any(d < 0) and d.sum() == 0", mask="~(d > 2)", value="-1.5")
    fixed = fix_source(source, unsafe=True).source
    assert "        d[(~(d > 2)) & (torch.any(d < 0) & (d.sum() == 0))] = -1.5\n    elif torch.any(d < 0)" in fixed


@pytest.mark.parametrize(
    ("part", "text", "reason"),
    [
        ("mask", "idx", "not known to be a boolean tensor"),  # an integer index: `&` would change what it selects
        ("test", "d.sum(dim=0)[0] == 0", "not known to be 0-d"),  # could broadcast the mask
        ("value", "x.sum(dim=1)", "not a number"),  # its length would have to follow the selection
    ],
)
def test_declined_where_the_fold_could_change_the_fill(part: str, text: str, reason: str) -> None:
    fix = _fix(**{part: text})
    assert fix.applicability is Applicability.DISPLAY_ONLY and reason in fix.message
