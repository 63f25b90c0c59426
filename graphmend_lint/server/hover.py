"""Hover text for a finding: its message and why Dynamo breaks there.

The "Why" is the rule docstring's ``## Why is this bad`` section, the same
text ``graphmend-lint rule CODE`` and ``docs/rules/CODE.md`` print under
"Why Dynamo breaks", so the editor and the docs never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.docs import SECTION_TITLES, docstring_sections, rule_page_url
from graphmend_lint.rules import rule_by_code
from graphmend_lint.server.findings import fix_label

WHY_SECTION = "Why is this bad"


def finding_markdown(diagnostic: Diagnostic) -> str:
    """One finding as Markdown: code, rule name, message, fix, the rule's Why, a link to its page."""
    rule = rule_by_code(diagnostic.code)
    if rule is None:
        return f"**{diagnostic.code}** {diagnostic.message}"
    parts = [f"**{rule.code}** `{rule.name}`: {diagnostic.message}"]
    label = fix_label(diagnostic)
    if label is not None and diagnostic.fix is not None:
        parts.append(f"Fix ({label}): {diagnostic.fix.message}")
    why = docstring_sections(rule).get(WHY_SECTION)
    if why:
        parts.append(f"### {SECTION_TITLES[WHY_SECTION]}\n\n{why}")
    url = rule_page_url(rule)
    if url:
        parts.append(f"[{rule.code} documentation]({url})")
    return "\n\n".join(parts)


def hover_markdown(diagnostics: Sequence[Diagnostic]) -> str | None:
    """Every finding under the cursor, separated by rules; None when there is none."""
    if not diagnostics:
        return None
    return "\n\n---\n\n".join(finding_markdown(d) for d in diagnostics)
