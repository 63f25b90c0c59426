"""Which ``torch._dynamo.config`` switches a file turns on, and the rule options that stand for them."""

from __future__ import annotations

import pytest

from graphmend_lint import lint_source
from graphmend_lint.config import Settings

BODY = (
    "\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
    "    s = x.sum().item()\n"
    "    if s > 0:\n"
    "        x = x * 2\n"
    "    return x\n"
)


def _gm301_lines(source: str, settings: Settings | None = None) -> set[int]:
    return {d.start.line for d in lint_source(source, config=settings) if d.code == "GM301"}


def _at(prelude: str) -> tuple[int, int]:
    """Lines of the conversion and of the branch once *prelude* is prepended."""
    offset = prelude.count("\n")
    return offset + 5, offset + 6


@pytest.mark.parametrize(
    "prelude",
    [
        "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n",
        "import torch\nimport torch._dynamo.config as dynamo_config\n\ndynamo_config.capture_scalar_outputs = True\n",
        "import torch\nfrom torch._dynamo import config\n\nif True:\n    config.capture_scalar_outputs = True\n",
    ],
)
def test_module_level_setting_moves_the_finding_to_the_branch(prelude: str) -> None:
    conversion, branch = _at(prelude)
    assert _gm301_lines(prelude + BODY) == {branch}
    assert _gm301_lines(prelude.replace("= True", "= False") + BODY) == {conversion}


def test_setting_inside_a_function_is_not_read() -> None:
    prelude = "import torch\n\n\ndef setup():\n    torch._dynamo.config.capture_scalar_outputs = True\n"
    conversion, _ = _at(prelude)
    assert _gm301_lines(prelude + BODY) == {conversion}


def test_rule_option_stands_for_the_setting() -> None:
    prelude = "import torch\n"
    _, branch = _at(prelude)
    settings = Settings(rule_options=(("GM301", (("capture-scalar-outputs", True),)),))
    assert _gm301_lines(prelude + BODY, settings) == {branch}
