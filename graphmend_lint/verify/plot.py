"""``--plot FILE.png``: before/after bars of graph breaks and, with ``--bench``, latency.

matplotlib is an optional dependency (``pip install graphmend-lint[plot]``);
:func:`require_matplotlib` is called before any target runs, so a missing
install fails in a second rather than after minutes of compiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphmend_lint.verify.results import TargetResult


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def require_matplotlib() -> Any:
    """Import matplotlib with a non-interactive backend, or raise :class:`PlotUnavailable`."""
    try:
        import matplotlib
    except ImportError as error:
        raise PlotUnavailable(
            "--plot needs matplotlib, which is not installed; run `pip install 'graphmend-lint[plot]'`"
        ) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(results: Sequence[TargetResult], path: Path) -> None:
    """Grouped bars per target: logged break sites, and steady-state latency when benchmarked."""
    plt = require_matplotlib()
    measured = [r for r in results if r.original and r.fixed]
    benched = [r for r in measured if r.bench_json()]
    panels = 2 if benched else 1
    figure, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    names = [r.target for r in measured]
    _bars(
        axes[0][0],
        names,
        [r.original.logged_sites for r in measured],  # type: ignore[union-attr]
        [r.fixed.logged_sites for r in measured],  # type: ignore[union-attr]
        "graph breaks (logged sites)",
        integer=True,
    )
    if benched:
        _bars(
            axes[0][1],
            [r.target for r in benched],
            [r.bench_json()["original"]["steady_ms"] for r in benched],  # type: ignore[index]
            [r.bench_json()["fixed"]["steady_ms"] for r in benched],  # type: ignore[index]
            f"steady-state latency, ms ({benched[0].bench_json()['device']})",  # type: ignore[index]
        )
    env = next((r.environment for r in results if r.environment), {})
    figure.suptitle(f"graphmend-lint verify: torch {env.get('torch', '?')}, {env.get('device_name', '?')}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _bars(
    axis: Any, names: list[str], before: list[float], after: list[float], title: str, integer: bool = False
) -> None:
    from matplotlib.ticker import MaxNLocator

    positions = range(len(names))
    width = 0.38
    axis.bar([p - width / 2 for p in positions], before, width, label="original")
    axis.bar([p + width / 2 for p in positions], after, width, label="fixed")
    axis.set_xticks(list(positions))
    axis.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    axis.set_title(title, fontsize=10)
    axis.legend(fontsize=8)
    if integer:
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
