"""GM401 over every spelling of torch 2.13's data-dependent-output-shape operators, checked against Dynamo.

The operators come from torch itself: the aten overloads tagged
``dynamic_output_shape`` (``nonzero``, ``masked_select``, ``_unique``/``_unique2``/
``unique_dim``, ``unique_consecutive``, ``bincount``, ``repeat_interleave.Tensor``,
``index.Tensor`` with a boolean index, ``one_hot``) and the fake-tensor kernels in
``torch/_subclasses/fake_impls.py`` that raise ``DynamicOutputShapeException``.
Each row of :data:`SPELLINGS` is one Python spelling that reaches them (or a
near miss with a static size), whether GM401 flags it, and the GB id Dynamo
logs at that line with the default configuration and with
``capture_dynamic_output_shape_ops=True`` (``None``: no break; ``"fails"``:
Dynamo raises instead of breaking). The lint half runs without torch; the
``dynamo`` half re-measures every row, so the table cannot drift from torch.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import NamedTuple

import pytest

from graphmend_lint import lint_source


class Spelling(NamedTuple):
    body: str  # binds ``o``; one line
    flagged: bool
    breaks: str | None  # GB id Dynamo logs at the line, default configuration
    captured: str | None  # ... with capture_dynamic_output_shape_ops=True; "fails": Dynamo raises


SOURCE = (
    "import numpy as np\nimport torch\nimport torch.nn.functional as F\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor, i: torch.Tensor, r: torch.Tensor, x2: torch.Tensor):\n"
    "    m = x > 0\n    y = x * 2\n{body}\n    return o, y + 1\n"
)
LINE = 10  # the body's line in SOURCE

SPELLINGS = [
    # the operators as torch functions and tensor methods
    Spelling("o = torch.nonzero(y > 0)", True, "GB0036", None),
    Spelling("o = (y > 0).nonzero(as_tuple=True)[0]", True, "GB0036", None),
    Spelling("o = torch.argwhere(y > 0)", True, "GB0036", None),
    Spelling("o = y.masked_select(m)", True, "GB0036", None),
    Spelling("o = torch.unique(i, return_counts=True)[1]", True, "GB0036", None),
    Spelling("o = x2.unique(dim=0)", True, "GB0036", None),
    Spelling("o = torch.unique_consecutive(i)", True, "GB0036", None),
    Spelling("o = torch.repeat_interleave(r)", True, "GB0036", None),
    Spelling("o = y.repeat_interleave(r, dim=0)", True, "GB0036", None),
    Spelling("o = torch.bincount(i, weights=y, minlength=4)", True, "GB0036", None),
    Spelling("o = torch.where(y > 0)[0]", True, "GB0036", None),
    Spelling("o = torch.where(condition=y > 0)[0]", True, "GB0036", None),
    # the unbound ``torch.Tensor`` methods
    Spelling("o = torch.Tensor.nonzero(y > 0)", True, "GB0036", None),
    Spelling("o = torch.Tensor.unique(i)", True, "GB0036", None),
    Spelling("o = torch.Tensor.repeat_interleave(y, r)", True, "GB0036", None),
    # torch.ops.aten, packets and overloads
    Spelling("o = torch.ops.aten.nonzero.default(y > 0)", True, "GB0036", None),
    Spelling("o = torch.ops.aten._unique2(i)[0]", True, "GB0036", None),
    Spelling("o = torch.ops.aten.unique_dim(x2, 0)[0]", True, "GB0036", None),
    Spelling("o = torch.ops.aten.bincount(i)", True, "GB0036", None),
    Spelling("o = torch.ops.aten.repeat_interleave.Tensor(r)", True, "GB0036", None),
    Spelling("o = torch.ops.aten.repeat_interleave.self_Tensor(y, r)", True, "GB0036", None),
    Spelling("o = torch.ops.aten.index.Tensor(y, [m])", True, "GB0036", None),
    # boolean-mask reads
    Spelling("o = y[y > 0]", True, "GB0036", None),
    Spelling("o = x2[m[:4], 0]", True, "GB0036", None),
    Spelling("o = y[[True, False, True, False, True, False, True, False]]", True, "GB0036", None),
    Spelling("keep = [True] * 3 + [False] * 5; o = y[keep]", True, "GB0036", None),
    Spelling("y[m] += 1; o = y", True, "GB0036", None),
    # masks built with Python's ``bool`` as the dtype, or through an in-place method (SimCLR's NT-Xent mask)
    Spelling("o = y[torch.ones(8, dtype=bool)]", True, "GB0036", None),
    Spelling("o = x2[torch.ones(4, 3, dtype=torch.bool).fill_diagonal_(0)]", True, "GB0036", None),
    # NumPy spellings Dynamo traces as the torch operators
    Spelling("o = np.bincount(i.numpy())", True, "GB0036", None),
    Spelling("o = np.repeat(y.numpy(), np.array([1, 2, 0, 3, 1, 1, 2, 1]))", True, "GB0036", None),
    Spelling("o = np.repeat(y.numpy(), 2)", False, None, None),
    # not captured by the switch
    Spelling("o = F.one_hot(i)", True, "GB0246", "GB0246"),
    Spelling("o = F.one_hot(i, -1)", True, "GB0246", "GB0246"),
    Spelling("o = F.one_hot(i, num_classes=-1)", True, "GB0033", "GB0033"),
    Spelling("o = torch.combinations(y[:3], r=2)", True, "GB0036", "fails"),
    # near misses: static sizes
    Spelling("o = torch.repeat_interleave(y, 2)", False, None, None),
    Spelling("o = torch.ops.aten.repeat_interleave.self_int(y, 2)", False, None, None),
    Spelling("o = torch.ops.aten.index.Tensor(y, [i])", False, None, None),
    Spelling("o = y[torch.ones(8, dtype=int)]", False, None, None),
    Spelling("o = y[[0, 2]]", False, None, None),
    Spelling("o = F.one_hot(i, num_classes=4)", False, None, None),
    Spelling("o = F.one_hot(i, x2.shape[1] + 1)", False, None, None),
    Spelling("a, b = torch.triu_indices(3, 3, 1); o = torch.stack((y[a], y[b]), -1)", False, None, None),
    Spelling("o = torch.nonzero_static(y > 0, size=4)", False, None, None),
    Spelling("o = torch.histc(y, bins=4)", False, None, None),
    Spelling("o = torch.count_nonzero(y)", False, None, None),
    Spelling("o = y.masked_fill(m, 0)", False, None, None),
    Spelling("o = y.masked_scatter(m, x)", False, None, None),
    Spelling("y[m] = 0; o = y", False, None, None),
    Spelling("o = torch.where(y > 0, y, 0)", False, None, None),
]
IDS = [s.body for s in SPELLINGS]


def source_of(spelling: Spelling) -> str:
    return SOURCE.format(body="    " + spelling.body)


@pytest.mark.parametrize("spelling", SPELLINGS, ids=IDS)
def test_gm401_flags_exactly_the_breaking_spellings(spelling: Spelling) -> None:
    lines = {d.start.line for d in lint_source(source_of(spelling)) if d.code == "GM401"}
    assert lines == ({LINE} if spelling.flagged else set())


def test_the_table_flags_what_breaks() -> None:
    """A spelling is flagged exactly when Dynamo logs a break for it (the table's two halves agree)."""
    assert [s.body for s in SPELLINGS if s.flagged != (s.breaks is not None)] == []


def test_one_hot_and_combinations_get_their_own_advice() -> None:
    for body, words in (("o = F.one_hot(i)", "num_classes="), ("o = torch.combinations(y)", "torch.triu_indices")):
        (finding,) = [d for d in lint_source(SOURCE.format(body="    " + body)) if d.code == "GM401"]
        assert finding.fix is not None and words in finding.fix.message


def test_combinations_in_the_file_declines_the_capture_switch() -> None:
    """With the switch on, Dynamo raises on ``torch.combinations``: no finding may offer it."""
    source = SOURCE.format(body="    o = torch.nonzero(y), torch.combinations(y)")
    fixes = [d.fix for d in lint_source(source) if d.code == "GM401"]
    assert len(fixes) == 2 and all(f is not None and not f.edits for f in fixes)
    assert "would make Dynamo fail on `torch.combinations`" in fixes[0].message


def test_under_the_switch_only_the_uncaptured_operators_are_reported() -> None:
    switch = "\ntorch._dynamo.config.capture_dynamic_output_shape_ops = True\n\n\n@torch.compile"
    body = "    o = torch.nonzero(y), F.one_hot(i), y[m], torch.combinations(y)"
    source = SOURCE.format(body=body).replace("\n\n\n@torch.compile", switch)
    messages = [d.message for d in lint_source(source) if d.code == "GM401"]
    assert messages == [
        "`one_hot` has a data-dependent output size: graph break",
        "`combinations` fails to compile with `capture_dynamic_output_shape_ops` on",
    ]


def _measure(path: Path, captured: bool) -> str | None:
    torch = pytest.importorskip("torch")
    from graphmend_lint.verify.breaks import capture_breaks

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = module.f._torchdynamo_orig_callable
    torch.manual_seed(0)
    args = (
        torch.randn(8),
        torch.tensor([0, 1, 1, 3, 2, 2, 0, 1]),
        torch.tensor([1, 2, 0, 3, 1, 1, 2, 1]),
        torch.tensor([[1.0, 2, 3], [1, 2, 3], [0, 0, 1], [1, 2, 3]]),
    )
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=captured):
        try:
            report = capture_breaks(fn, *args)
        except torch._dynamo.exc.InternalTorchDynamoError:
            return "fails"
    ids = {site.gb_id for site in report.sites if site.line == LINE and Path(site.filename).resolve() == path.resolve()}
    assert len(ids) <= 1, ids
    assert {site.line for site in report.sites} <= {LINE}, "a break away from the spelling's line"
    return next(iter(ids), None)


@pytest.mark.dynamo
@pytest.mark.parametrize("spelling", SPELLINGS, ids=IDS)
def test_dynamo_logs_what_the_table_says(spelling: Spelling, tmp_path: Path) -> None:
    path = tmp_path / "spelling.py"
    path.write_text(source_of(spelling))
    assert (_measure(path, False), _measure(path, True)) == (spelling.breaks, spelling.captured)
