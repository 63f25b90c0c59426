"""GM001: the file could not be parsed."""

from __future__ import annotations

from collections.abc import Iterator

from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.rules.base import Rule


class SyntaxErrorRule(Rule):
    """## What it does
    Reports a file that Python cannot parse, at the position of the error.

    ## Why is this bad
    Nothing else can be checked in a file that does not parse, and
    torch.compile never gets to see it either. The run goes on with the other
    files and exits with status 1.

    It is reported whatever rules `select` names (`--select GM401` on a broken
    file must not say "All checks passed!"); only an `ignore` or
    `per-file-ignores` entry that names it (or a prefix of it) silences it.

    ## Example
    ```python
    def forward(self, x)
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x
    ```

    ## Fix safety
    There is no fix.
    """

    code = "GM001"
    name = "syntax-error"
    summary = "The file could not be parsed"

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """Syntax errors are reported by the pipeline before rules run."""
        return iter(())
