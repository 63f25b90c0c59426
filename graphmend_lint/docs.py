"""Rule documentation, rendered from the rule class itself.

``graphmend-lint rule CODE`` prints this, and ``docs/rules/CODE.md`` is the
same text, so the terminal and the website never disagree.
"""

from __future__ import annotations

import inspect

from graphmend_lint.rules.base import Rule


def rule_markdown(rule: type[Rule]) -> str:
    """The Markdown page of one rule."""
    fix = rule.default_applicability.value if rule.default_applicability else "none"
    lines = [
        f"# {rule.code} {rule.name}",
        "",
        rule.summary + ".",
        "",
        f"- Fix: {fix}",
        "- Dynamo graph-break ids: "
        + (", ".join(f"{gb} ({gb_type})" for gb, gb_type in rule.dynamo_gb.items()) or "none"),
        "",
        inspect.cleandoc(rule.__doc__ or ""),
        "",
    ]
    if rule.options:
        lines += ["## Options", ""]
        lines += [f"- `{key}` (default `{value!r}`)" for key, value in rule.options.items()]
        lines.append("")
    return "\n".join(lines)
