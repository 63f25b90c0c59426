"""Rule families, and which family a finding or a logged Dynamo break belongs to.

Everything is read from the rule registry at run time, so a rule added later
(its code, its ``dynamo_gb`` ids, its fixability) counts without touching the
harness. A logged break belongs to the family of a rule that declares its GB
id; ids no rule declares are ``unmapped``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from graphmend_lint.diagnostics import Applicability
from graphmend_lint.rules import all_rules

UNMAPPED = "unmapped"
FAMILY_ORDER = ("GM0xx", "GM1xx", "GM2xx", "GM3xx", "GM4xx", "GM5xx+", UNMAPPED)
FAMILY_TITLES = {
    "GM0xx": "input problems",
    "GM1xx": "control flow",
    "GM2xx": "side effects",
    "GM3xx": "host syncs",
    "GM4xx": "shapes / numpy",
    "GM5xx+": "newer rules",
    UNMAPPED: "GB ids no rule declares",
}


def family_of_code(code: str) -> str:
    """``GM101`` -> ``GM1xx``; every code from GM500 on shares ``GM5xx+``."""
    digits = code[-3:]
    if not digits.isdigit():
        return UNMAPPED
    hundreds = int(digits[0])
    return "GM5xx+" if hundreds >= 5 else f"GM{hundreds}xx"


@dataclass(frozen=True)
class Claims:
    """For each GB id, the families and the fix applicabilities of the rules that declare it."""

    families: dict[str, tuple[str, ...]]
    applicabilities: dict[str, frozenset[Applicability]]

    def family_of_site(self, gb_id: str | None, finding_families: Iterable[str] = ()) -> str:
        """The family a logged break is attributed to.

        A finding on the same line whose family declares the id wins (it is
        the rule that claims this break); otherwise the lowest declaring
        family; ``unmapped`` when no rule declares the id.
        """
        declaring = self.families.get(gb_id or "", ())
        for family in finding_families:
            if family in declaring:
                return family
        return declaring[0] if declaring else UNMAPPED

    def fixable(self, gb_id: str | None, unsafe: bool) -> bool:
        """Whether some rule declaring this id offers a fix the given ``--fix`` mode applies."""
        wanted = {Applicability.SAFE, Applicability.UNSAFE} if unsafe else {Applicability.SAFE}
        return bool(self.applicabilities.get(gb_id or "", frozenset()) & wanted)


@cache
def claims() -> Claims:
    """Read every registered rule's ``dynamo_gb`` and ``fix_applicabilities`` once."""
    families: dict[str, set[str]] = {}
    applicabilities: dict[str, set[Applicability]] = {}
    for rule in all_rules():
        for gb_id in rule.dynamo_gb:
            families.setdefault(gb_id, set()).add(family_of_code(rule.code))
            applicabilities.setdefault(gb_id, set()).update(rule.fix_applicabilities)
    return Claims(
        families={gb: tuple(sorted(fams, key=FAMILY_ORDER.index)) for gb, fams in families.items()},
        applicabilities={gb: frozenset(apps) for gb, apps in applicabilities.items()},
    )
