"""GM509 on ``functools.cached_property`` reads: only before Python 3.12, only when the getter really runs."""

from __future__ import annotations

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.config import ConfigError, Settings, settings_from_table
from graphmend_lint.diagnostics import Applicability
from graphmend_lint.rules.gm509_host_lock import _CONV

PY311 = Settings(target_python="3.11")


def _findings(source: str, settings: Settings = PY311) -> list:
    return [d for d in lint_source(source, config=settings) if d.code == "GM509"]


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_no_lock_from_python_312(version: str) -> None:
    assert _findings(_CONV, Settings(target_python=version)) == []


def test_target_python_is_read_from_the_config(tmp_path) -> None:
    assert settings_from_table({"target-python": "3.10"}, tmp_path / "x.toml").target_python_version == (3, 10)
    with pytest.raises(ConfigError):
        settings_from_table({"target-python": 3.10}, tmp_path / "x.toml")


def test_any_import_spelling_of_cached_property() -> None:
    source = _CONV.replace("from functools import cached_property as cached", "import functools as ft")
    source = source.replace("@cached\n", "@ft.cached_property\n")
    [finding] = _findings(source)
    fixed = fix_source(source, config=PY311, unsafe=True).source
    assert "    @property\n    def left_pad" in fixed


def test_an_assigned_attribute_never_runs_the_getter() -> None:
    source = _CONV.replace("    def forward", "    def reset(self):\n        self.left_pad = 0\n\n    def forward")
    assert _findings(source) == []


def test_a_getter_in_a_base_class_of_the_file() -> None:
    source = _CONV.replace("    def forward", "\nclass Padded(CausalConv1d):\n    def forward", 1)
    source = source.replace("torch.compile(CausalConv1d(", "torch.compile(Padded(")
    assert len(_findings(source)) == 1


def test_two_reads_in_one_function_are_one_finding() -> None:
    source = _CONV.replace("(self.left_pad, 0)", "(self.left_pad, self.left_pad - self.left_pad)")
    assert len(_findings(source)) == 1


@pytest.mark.parametrize(
    "body",
    [
        "        return self.weight.sum()\n",  # a tensor: cached, it keeps its autograd graph and goes stale
        "        print(self)\n        return 1\n",  # a side effect
        "        return SIZE + 1\n",  # a global may be rebound between reads
        "        return self.compute()\n",  # a call off the allow-list
    ],
)
def test_no_property_fix_unless_cheap_and_pure(body: str) -> None:
    source = _CONV.replace(
        "        size = (self.kernel_size[0] - 1) * self.dilation[0] + 1\n        return size - self.stride[0]\n", body
    )
    [finding] = _findings("SIZE = 3\n" + source)
    assert finding.fix is not None and finding.fix.applicability is Applicability.DISPLAY_ONLY
