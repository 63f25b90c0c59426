"""The settings an INVALID example is linted with: its own settings and rule options, nothing else."""

from __future__ import annotations

from graphmend_lint.config import Settings
from graphmend_lint.rules.base import Example, Rule


def example_settings(rule: type[Rule], example: Example) -> Settings:
    return Settings(**example.settings, rule_options=((rule.code, tuple(example.options.items())),))
