"""GM105's builtins over tensor conditions against real Dynamo (torch 2.13, CPU): breaks at the finding lines.

``any``/``all`` over a generator or list of 0-d tensor conditions, and ``sorted`` with a tensor key, were
added to GM105 from a battery of one-function programs run through Dynamo. The catalog program is measured
in a subprocess (``catalog_dynamo_worker.py``); the lines Dynamo logs must be the lines GM105 reports.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

from catalog_cases import findings, measure_catalog  # noqa: E402

pytestmark = pytest.mark.dynamo

#: ``(line, GB id)`` Dynamo logs: the sort key (GB0207), then `any` over a generator (GB0170, and GB8335 for the
#: generator, after which Dynamo runs the rest of the frame eagerly).
BREAKS = {"GM105/bad_any_of_masks.py": {(20, "GB0207"), (21, "GB0170"), (21, "GB8335")}}


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    return measure_catalog(sorted(BREAKS))


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_breaks_are_where_gm105_reports(name: str, measured: dict[str, Any]) -> None:
    logged = {tuple(site) for site in measured["programs"][name]["attributed"]}
    assert logged == BREAKS[name]
    assert {line for line, _ in logged} == {line for line, _ in findings(name, ["GM105"])}
