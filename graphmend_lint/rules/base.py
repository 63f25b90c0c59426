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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from graphmend_lint.diagnostics import Applicability, Diagnostic

if TYPE_CHECKING:
    from graphmend_lint.context import RuleContext

CODE_PATTERN = re.compile(r"^[A-Z]{1,3}[0-9]{3}$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Example:
    """An INVALID example: source the rule must flag, and what its fixes do.

    The examples are the rule's specification of its fixes: the rules table and
    the rule page derive the rule's fix applicabilities from them, and
    ``tests/test_rule_examples.py`` checks each example against what the rule
    really offers. ``fixed`` is the text after ``--fix`` (``--unsafe-fixes``
    when ``unsafe``), ``None`` when the rule's findings here carry no
    applicable fix. ``advice`` says some finding carries a display-only fix,
    shown but never applied; left unset, it is what a finding without an
    applicable fix usually gets (``fixed is None``). ``options`` are this
    rule's options for the example, as ``[tool.graphmend-lint.rules.<code>]``
    would set them; ``settings`` the top-level settings it needs, by
    :class:`~graphmend_lint.config.Settings` field (``target_python``), so
    that an example whose break depends on them means the same wherever the
    tests run.
    """

    source: str
    fixed: str | None = None
    unsafe: bool = False
    advice: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def applicabilities(self) -> frozenset[Applicability]:
        """The kinds of fix this example says the rule's findings carry."""
        advice = self.fixed is None if self.advice is None else self.advice
        kinds = {Applicability.DISPLAY_ONLY} if advice else set()
        if self.fixed is not None:
            kinds.add(Applicability.UNSAFE if self.unsafe else Applicability.SAFE)
        return frozenset(kinds)


def with_switch(source: str, setting: str) -> str:
    """*source* with ``torch._dynamo.config.<setting> = True`` after its leading imports.

    That is where the switch fixes (``allow_rnn``, the capture settings) write
    the line, so examples state their fixed text without spelling it out.
    """
    lines = source.splitlines(keepends=True)
    end = max(i for i, line in enumerate(lines) if line.startswith(("import ", "from "))) + 1
    return "".join(lines[:end]) + f"\ntorch._dynamo.config.{setting} = True\n" + "".join(lines[end:])


def switch_example(source: str, setting: str, advice: bool | None = None) -> Example:
    """An example whose fix turns a Dynamo setting on (always unsafe: it changes the whole process)."""
    return Example(source, fixed=with_switch(source, setting), unsafe=True, advice=advice)


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
    #: Derived from the INVALID examples when the class is defined, never declared: tests
    #: check each example, and the catalog, against the fixes the rule really offers, so
    #: the rules table and the rule pages say what ``--fix`` really does.
    fix_applicabilities: ClassVar[tuple[Applicability, ...]] = ()
    #: Per-rule options, settable in ``[tool.graphmend-lint.rules.<code or name>]``.
    options: ClassVar[Mapping[str, RuleOption]] = {}
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        offered = frozenset().union(*(example.applicabilities() for example in cls.invalid))
        cls.fix_applicabilities = tuple(a for a in Applicability if a in offered)

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
