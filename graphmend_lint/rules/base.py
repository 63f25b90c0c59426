"""The contract every rule, built-in or third-party, fulfils.

A rule is a small class. It decides *whether* something in traced code will
break the graph and, if it can, attaches a :class:`~graphmend_lint.diagnostics.Fix`
built by a shared rewrite in :mod:`graphmend_lint.fixes`. It never reads files,
never prints and knows nothing about the command line.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from graphmend_lint.diagnostics import Applicability, Diagnostic

if TYPE_CHECKING:
    from graphmend_lint.context import RuleContext

CODE_PATTERN = re.compile(r"^[A-Z]{1,3}[0-9]{3}$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Example:
    """An INVALID example: source the rule must flag, and what the fix yields.

    ``fixed`` is ``None`` when the rule offers no applicable fix for it.
    ``unsafe`` says the expected fix needs ``--unsafe-fixes``.
    """

    source: str
    fixed: str | None = None
    unsafe: bool = False


@dataclass(frozen=True)
class RuleOption:
    """One per-rule setting: its default (which also fixes the type a config value must have) and what it means.

    The meaning is written once, here, and shown on the rule page and in
    ``docs/configuration.md``, so two rules sharing an option share its text.
    """

    default: Any
    meaning: str


class Rule(abc.ABC):
    """Base class of all rules.

    Subclasses set the class attributes and implement :meth:`check`. The
    docstring of a rule is its documentation and uses ruff's sections:
    *What it does*, *Why is this bad*, *Example*, *Use instead*, *Fix safety*.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    #: Ids from ``torch/_dynamo/graph_break_registry.json`` this rule prevents,
    #: each with the ``Gb_type`` it is expected to carry there.
    dynamo_gb: ClassVar[Mapping[str, str]] = {}
    #: Every applicability this rule's fixes can have, surest first (empty: no fix at all).
    #: A test checks the rule's examples and catalog produce each of them and nothing else,
    #: so the rules table and the rule pages say what ``--fix`` really does.
    fix_applicabilities: ClassVar[tuple[Applicability, ...]] = ()
    #: Per-rule options, settable in ``[tool.graphmend-lint.rules.<code or name>]``.
    options: ClassVar[Mapping[str, RuleOption]] = {}
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()

    @abc.abstractmethod
    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """Yield the diagnostics of this rule for one file."""

    @classmethod
    def fixable(cls) -> bool:
        """Some finding of this rule can be fixed (with ``--fix`` or ``--unsafe-fixes``)."""
        return any(a is not Applicability.DISPLAY_ONLY for a in cls.fix_applicabilities)

    @classmethod
    def fix_label(cls) -> str:
        """``safe``, ``safe/unsafe``, ``display-only`` or ``-``: the rules table's fix column."""
        return "/".join(a.value for a in cls.fix_applicabilities) or "-"

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """Each option's default: what a rule sees for the options the user did not set."""
        return {key: option.default for key, option in cls.options.items()}

    @classmethod
    def validate_definition(cls) -> None:
        """Reject a malformed rule class early, with a message naming it."""
        for attribute in ("code", "name", "summary"):
            if not isinstance(getattr(cls, attribute, None), str):
                raise TypeError(f"rule {cls.__qualname__} must define a string `{attribute}`")
        if not CODE_PATTERN.match(cls.code):
            raise TypeError(f"rule {cls.__qualname__}: code {cls.code!r} must look like GM101")
        if not NAME_PATTERN.match(cls.name):
            raise TypeError(f"rule {cls.code}: name {cls.name!r} must be kebab-case")
        for key, option in cls.options.items():
            if not isinstance(option, RuleOption):
                raise TypeError(f"rule {cls.code}: option `{key}` must be a RuleOption(default, meaning)")
