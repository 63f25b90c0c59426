"""Count Dynamo's recompilations of a callable over its input sets, as one compiled program would see them.

Break measurement (:mod:`.breaks`) resets Dynamo before every input set so
that each set's breaks are seen; that same reset hides recompilations, which
only happen when a later call fails the guards of an earlier compilation. So
recompiles are measured apart: one ``torch.compile`` (the ``eager`` backend:
guards are Dynamo's, no kernel needs compiling) is called on every input set
in order, as a training or serving loop would.

Dynamo's ``recompiles`` log is only emitted when that artifact is switched on
through ``torch._logging.set_logs``, which replaces the user's logging
settings; the compilation metrics hold the same fact without that side
effect: a frame compilation with a ``recompile_reason`` is a recompilation
(torch 2.13, ``convert_frame._compile``), and its first failed guard is that
reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo
from torch._dynamo import utils as dynamo_utils

from graphmend_lint.verify.breaks import InputSet, _fresh_compilation_metrics


@dataclass(frozen=True)
class Recompile:
    """One recompilation: the function Dynamo compiled again, and the guard that failed."""

    filename: str
    function: str
    line: int  # the function's first line
    reason: str


def count_recompiles(
    fn: Callable[..., Any], input_sets: Sequence[InputSet], before_each: Callable[[], object] | None = None
) -> list[Recompile]:
    """Every recompilation of ``fn`` compiled once and called on each input set in turn."""
    torch._dynamo.reset()
    with _fresh_compilation_metrics():
        compiled = torch.compile(fn, backend="eager")
        for args, kwargs in input_sets:
            if before_each is not None:
                before_each()
            compiled(*args, **kwargs)
        metrics = dynamo_utils.get_compilation_metrics()
    return [
        Recompile(m.co_filename or "?", m.co_name or "?", m.co_firstlineno or 0, m.recompile_reason)
        for m in metrics
        if m.recompile_reason
    ]
