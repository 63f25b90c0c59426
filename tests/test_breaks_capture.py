"""Real-Dynamo tests for graphmend_lint.verify.breaks.

Each test writes a tiny program to a tmp file, so Dynamo sees real filenames
and lines. Expected break lines are the lines tagged ``# BREAK`` in the
program; everything else asserted here was measured on torch 2.13.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import textwrap
import traceback
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from graphmend_lint.verify import breaks  # noqa: E402
from graphmend_lint.verify.breaks import (  # noqa: E402
    BreakReport,
    BreakSite,
    capture_breaks,
    capture_breaks_over,
)

pytestmark = pytest.mark.dynamo

X = torch.ones(8)


@pytest.fixture(scope="module")
def registry() -> dict:
    """Dynamo's own catalog of graph-break ids."""
    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    return json.loads(path.read_text())


def load(tmp_path: Path, source: str, name: str = "prog") -> tuple[ModuleType, str]:
    """Write ``source`` to a file and import it; returns the module and its path."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"{tmp_path.name}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


def marked(path: str, tag: str = "BREAK") -> set[int]:
    """Lines of ``path`` whose trailing comment is exactly ``# <tag>``."""
    lines = Path(path).read_text().splitlines()
    return {n for n, line in enumerate(lines, 1) if line.rstrip().endswith(f"# {tag}")}


def assert_registered(site: BreakSite, gb_id: str, registry: dict) -> None:
    """The site carries ``gb_id`` and the gb_type Dynamo's registry gives that id."""
    assert site.gb_id == gb_id
    assert site.reason in {entry["Gb_type"] for entry in registry[gb_id]}


def test_print_is_one_site(tmp_path, registry):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            print("y", y.shape)  # BREAK
            return y + 1
    """)
    report = capture_breaks(mod.f, X)
    assert report.lines_in(path) == marked(path)
    assert (report.graph_count, report.break_count, report.skipped_frames) == (2, 1, ())
    assert_registered(report.sites[0], "GB0059", registry)
    assert report.sites[0].filename == path


def test_item_site(tmp_path, registry):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            v = y.sum().item()  # BREAK
            return y + v
    """)
    report = capture_breaks(mod.f, X)
    assert report.lines_in(path) == marked(path)
    assert_registered(report.sites[0], "GB0124", registry)


def test_data_dependent_if(tmp_path, registry):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            if y.sum() > 0:  # BREAK
                return y + 1
            return y - 1
    """)
    report = capture_breaks(mod.f, X)
    assert report.lines_in(path) == marked(path)
    assert report.graph_count == 2
    assert_registered(report.sites[0], "GB0170", registry)


def test_multiline_condition_breaks_on_each_operand_line(tmp_path, registry):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            if ((y > 0).any()  # BREAK
                    and y.sum() > 1):  # BREAK
                return y + 1
            return y - 1
    """)
    report = capture_breaks(mod.f, X)
    assert len(marked(path)) == 2
    assert report.lines_in(path) == marked(path)
    assert report.graph_count == 3
    for site in report.sites:
        assert_registered(site, "GB0170", registry)


RESUMED_SELECTS = """
    import torch

    def f(x, m, factors=None):
        boxes = torch.masked_select(  # BREAK
            x, torch.stack((m, m), -1)
        ).view(-1, 2)
        if factors is not None:
            x = x * factors
        s = torch.masked_select(x[:, 0], m)  # BREAK
        i = m.nonzero(as_tuple=False)[:, 0]  # BREAK
        return boxes, s, i
"""


def test_breaks_of_a_resumed_frame_are_sited_at_their_own_lines(tmp_path, registry):
    """nanodet's multiclass_nms: the resumed frame's line table is repaired (``_resume_lines_repaired``)."""
    mod, path = load(tmp_path, RESUMED_SELECTS)
    x = torch.randn(6, 2)
    report = capture_breaks(mod.f, x, x[:, 0] > 0)
    assert report.lines_in(path) == marked(path)
    for site in report.sites:
        assert_registered(site, "GB0036", registry)


def test_dynamo_alone_sites_them_lines_too_far(tmp_path, monkeypatch):
    """Without the repair torch 2.13 logs the two later breaks one line down, the last at the ``return``.

    When this fails, Dynamo's writer is fixed and ``_resume_lines_repaired`` can go."""
    monkeypatch.setattr(breaks, "_resume_lines_repaired", contextlib.nullcontext)
    mod, path = load(tmp_path, RESUMED_SELECTS)
    x = torch.randn(6, 2)
    report = capture_breaks(mod.f, x, x[:, 0] > 0)
    first, *later = sorted(marked(path))
    assert report.lines_in(path) == {first, *(line + 1 for line in later)}


def test_break_in_loop_skips_frame_but_site_is_reported(tmp_path, registry):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            for i in range(3):
                print(i)  # BREAK
                y = y + 1
            return y
    """)
    report = capture_breaks(mod.f, X)
    assert report.graph_count == 0  # explain sees nothing: the frame ran eager
    assert report.lines_in(path) == marked(path)
    assert_registered(report.sites[0], "GB0059", registry)  # the cause, not GB7000
    assert report.skipped_frames == (f"{path}:{mod.f.__code__.co_firstlineno} f",)


def test_break_in_helper_counted_once_at_helper_line(tmp_path):
    mod, path = load(tmp_path, """
        def helper(y):
            print("in helper")  # BREAK
            return y + 1

        def f(x):
            y = x * 2
            y = helper(y)
            return y * 3
    """)
    report = capture_breaks(mod.f, X)
    assert report.lines_in(path) == marked(path)
    assert report.break_count == 1


def test_print_after_a_break_is_caught_although_explain_misses_it(tmp_path):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            print("first")  # BREAK
            print("second")  # BREAK
            return y + 1
    """)
    report = capture_breaks(mod.f, X)
    assert report.lines_in(path) == marked(path)
    assert report.break_count == 2
    assert report.explain_break_count == 1


def test_no_break(tmp_path):
    mod, _ = load(tmp_path, """
        def f(x):
            y = x * 2
            if y.shape[0] > 2:
                y = y + 1
            return y.relu()
    """)
    report = capture_breaks(mod.f, X)
    assert report == BreakReport(graph_count=1, explain_break_count=0, sites=(), skipped_frames=())


def test_module_forward_branch(tmp_path, registry):
    mod, path = load(tmp_path, """
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)

            def forward(self, x):
                y = self.lin(x)
                if y.sum() > 0:  # BREAK
                    return y + 1
                return y - 1
    """)
    report = capture_breaks(mod.M(), X)
    assert report.lines_in(path) == marked(path)
    assert report.break_count == 1
    assert_registered(report.sites[0], "GB0170", registry)


def test_break_inside_torch_code_is_attributed_to_user_call(tmp_path):
    # AdaptiveLogSoftmaxWithLoss.forward calls nonzero(); Dynamo's own log
    # points into torch/nn/modules/adaptive.py.
    mod, path = load(tmp_path, """
        import torch

        asm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])

        def f(x):
            y = x.reshape(1, 8).expand(6, 8) * 2
            out = asm(y, torch.arange(6))  # BREAK
            return out.loss + 1
    """)
    report = capture_breaks(mod.f, X)
    assert [s.filename for s in report.sites] == [path]
    assert report.lines_in(path) == marked(path)


def test_over_inputs_merges_both_branches(tmp_path):
    mod, path = load(tmp_path, """
        def f(x):
            y = x * 2
            if y.sum() > 0:  # BREAK
                print("positive")  # BREAK pos
                return y + 1
            return y + y.sum().item()  # BREAK neg
    """)
    positive_only = capture_breaks(mod.f, X)
    assert positive_only.lines_in(path) == marked(path) | marked(path, "BREAK pos")
    both = capture_breaks_over(mod.f, [((X,), {}), ((-X,), {})])
    expected = marked(path) | marked(path, "BREAK pos") | marked(path, "BREAK neg")
    assert both.lines_in(path) == expected
    assert both.break_count == 3


def _logger_state() -> list[tuple]:
    """Everything capture_breaks touches on the graph_breaks loggers."""
    loggers = breaks._graph_break_loggers()
    return [(lg.name, lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]


def test_exception_propagates_and_settings_are_restored(tmp_path):
    mod, _ = load(tmp_path, """
        def f(x):
            y = x * 2
            print("before")
            raise ValueError("boom")
    """)
    before = _logger_state()
    metrics_limit = torch._dynamo.utils._compilation_metrics.maxlen
    with pytest.raises(ValueError, match="boom"):
        capture_breaks(mod.f, X)
    assert _logger_state() == before
    assert torch._dynamo.utils._compilation_metrics.maxlen == metrics_limit


def test_main_prints_report(tmp_path, capsys):
    _, path = load(tmp_path, """
        import torch

        def f(x):
            y = x * 2
            print("y")  # BREAK
            return y + 1

        def factory():
            return f, [(torch.ones(4),)]
    """)
    assert breaks.main([f"{path}::factory"]) == 0
    out = capsys.readouterr().out
    (line,) = marked(path)
    assert f"{path}:{line}  GB0059" in out
    assert "distinct break sites: 1" in out


def test_explain_reasons_fill_lines_the_log_missed(tmp_path):
    """Dynamo-free: explain-only reasons become sites, attributed to user frames."""
    user = str(tmp_path / "user.py")
    torch_file = str(Path(torch.__file__).parent / "nn" / "modules" / "module.py")
    logged = BreakSite(user, 3, "Data-dependent branching", "GB0170")
    frame = traceback.FrameSummary
    reasons = [
        SimpleNamespace(reason="generic_jump TensorVariable()", user_stack=[frame(user, 3, "f")]),
        SimpleNamespace(
            reason="Dynamic shape operator\n .../gb/gb0036.html",
            user_stack=[frame(user, 7, "f"), frame(torch_file, 9, "g")],
        ),
    ]
    assert breaks._explain_only_sites(reasons, [logged]) == [
        BreakSite(user, 7, "Dynamic shape operator", "GB0036")
    ]
