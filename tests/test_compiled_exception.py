"""GM104 and GM106 fix a host check by moving it onto the device, where it raises ``RuntimeError``.

Both offer that rewrite only with ``compiled-exception = "runtime-error"`` and
never inside a ``try`` with handlers, which would stop catching the original
exception under compile (GM106 used to rewrite such asserts).
"""

from __future__ import annotations

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.config import Settings

GUARD = "    if torch.isnan(x).any():\n        raise ValueError('nan')\n"
ASSERT = "    assert (x > 0).all(), f'layer {n}: negative input'\n"
CHECKS = {"GM104": GUARD, "GM106": ASSERT}
HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, n: int):\n"


def _program(check: str, in_try: bool) -> str:
    if not in_try:
        return HEADER + check + "    return x\n"
    body = "".join("    " + line + "\n" for line in check.splitlines())
    return HEADER + "    try:\n" + body + "    except (ValueError, AssertionError):\n        x = x * 0\n    return x\n"


def _accepting(code: str) -> Settings:
    return Settings(rule_options=((code, (("compiled-exception", "runtime-error"),)),))


def _fix_message(source: str, code: str, settings: Settings) -> str:
    (finding,) = [d for d in lint_source(source, config=settings) if d.code == code]
    assert finding.fix is not None
    return finding.fix.message


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_the_rewrite_needs_the_opt_in(code: str) -> None:
    source = _program(CHECKS[code], in_try=False)
    assert fix_source(source, unsafe=True).source == source
    assert f'`compiled-exception = "runtime-error"` for {code}' in _fix_message(source, code, Settings())
    assert fix_source(source, config=_accepting(code), unsafe=True).source != source


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_a_check_inside_a_try_with_handlers_is_never_rewritten(code: str) -> None:
    source = _program(CHECKS[code], in_try=True)
    assert fix_source(source, config=_accepting(code), unsafe=True).source == source
    assert "a `try` around the check has handlers" in _fix_message(source, code, _accepting(code))
