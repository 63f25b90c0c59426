"""Shared pieces of the catalog tests: expected cases, program lists, lint findings, Dynamo measurement.

A catalog test module lists, for each program of its rules, the findings the
linter must report and the breaks Dynamo must log (a :class:`Case`), so that
both are checked against one table. Dynamo runs in a subprocess
(``catalog_dynamo_worker.py``): the measurements cannot be changed by what
other tests did to Dynamo's global state, and programs that switch Dynamo
settings on at import cannot change other tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmend_lint import lint_source

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "rules"
WORKER = Path(__file__).with_name("catalog_dynamo_worker.py")


@dataclass(frozen=True)
class Case:
    """What one catalog program must produce: lint findings and real Dynamo breaks, by line."""

    findings: frozenset[tuple[int, str]] = field(default_factory=frozenset)
    #: ``(line, GB id)``; the id is ``None`` for a failed guard, which Dynamo logs without one.
    breaks: frozenset[tuple[int, str | None]] = field(default_factory=frozenset)
    frame_skipped: bool = False
    #: The GB id of the error ``torch.compile`` raises instead of breaking (GM519's GB4315), with or without
    #: ``fullgraph``: Dynamo logs no break for it, so the findings sit where the fix goes.
    compile_error: str | None = None


def case(
    findings: Iterable[tuple[int, str]] = (),
    breaks: Iterable[tuple[int, str | None]] = (),
    *,
    frame_skipped: bool = False,
    compile_error: str | None = None,
) -> Case:
    return Case(frozenset(findings), frozenset(breaks), frame_skipped, compile_error)


def catalog_programs(codes: Iterable[str]) -> list[str]:
    """Every program in the catalog folders of *codes*, as ``CODE/name.py``."""
    return sorted(str(path.relative_to(CATALOG)) for code in codes for path in (CATALOG / code).glob("*.py"))


def fix_pairs(codes: Iterable[str]) -> list[tuple[str, str]]:
    """``(bad, fixed)`` for every bad program that has a fixed twin."""
    pairs = []
    for name in catalog_programs(codes):
        folder, _, base = name.partition("/")
        if base.startswith("bad_") and (CATALOG / folder / f"fixed_{base[4:]}").exists():
            pairs.append((name, f"{folder}/fixed_{base[4:]}"))
    return pairs


def findings(name: str, codes: Iterable[str]) -> set[tuple[int, str]]:
    """``(line, code)`` of the findings of *codes* in one catalog program."""
    wanted = set(codes)
    text = (CATALOG / name).read_text()
    return {(d.start.line, d.code) for d in lint_source(text, str(CATALOG / name)) if d.code in wanted}


def measure_in_subprocess(programs: Iterable[Path], pairs: Iterable[tuple[Path, Path]] = ()) -> dict[str, Any]:
    """Run the Dynamo worker on *programs* (and compare *pairs*); its JSON answer, keyed by path string."""
    request = {"programs": [str(p) for p in programs], "pairs": [[str(b), str(f)] for b, f in pairs]}
    completed = subprocess.run(
        [sys.executable, str(WORKER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(completed.stdout)


def measure_catalog(names: Iterable[str], pairs: Iterable[tuple[str, str]] = ()) -> dict[str, Any]:
    """:func:`measure_in_subprocess` for catalog names (``CODE/name.py``), answers keyed by those names."""
    names = list(names)
    pairs = list(pairs)
    raw = measure_in_subprocess([CATALOG / n for n in names], [(CATALOG / b, CATALOG / f) for b, f in pairs])
    return {
        "programs": {name: raw["programs"][str(CATALOG / name)] for name in names},
        "pairs": {(b, f): raw["pairs"][f"{CATALOG / b}|{CATALOG / f}"] for b, f in pairs},
    }


def check_cases_cover_the_catalog(codes: Iterable[str], cases: dict[str, Case]) -> None:
    """Every program of *codes* has a case and every case a program; every rule has a bad and a negative program."""
    codes = list(codes)
    assert set(catalog_programs(codes)) == set(cases)
    for code in codes:
        names = [name for name in cases if name.startswith(code)]
        assert any("/bad_" in name for name in names), code
        assert any("/neg_" in name for name in names), code
