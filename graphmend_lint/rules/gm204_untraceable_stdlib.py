"""GM204: clock, Python RNG, ``datetime.now`` and ``uuid`` calls inside code that torch.compile traces."""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.side_effects import Effect, SideEffect
from graphmend_lint.diagnostics import Applicability, Fix
from graphmend_lint.fixes.side_effect_fix import SideEffectFixes
from graphmend_lint.rules.base import Example
from graphmend_lint.rules.gb_types import gb_types
from graphmend_lint.rules.gm201_print import SideEffectRule

_WHY = {
    Effect.CLOCK: "Dynamo does not trace the clock",
    Effect.RANDOM: "Dynamo does not trace Python's `random` here",
    Effect.DATETIME: "Dynamo does not trace the clock",
    Effect.UUID: "`uuid` reads host entropy Dynamo cannot trace",
}
_INSTEAD = {
    Effect.CLOCK: "time outside the compiled function (around the call), or pass the time in as an argument; "
    "on GPU use `torch.cuda.Event(enable_timing=True)`",
    Effect.RANDOM: "use torch's RNG inside compiled code (`torch.rand`, `torch.randint`, `torch.randperm`, "
    "with a `torch.Generator` for reproducibility), or draw the number outside and pass it in",
    Effect.DATETIME: "pass the time in as an argument",
    Effect.UUID: "create ids outside the compiled function and pass them in",
}


class UntraceableStdlibCall(SideEffectRule):
    """## What it does
    Flags calls to standard-library functions Dynamo cannot trace, in
    functions that `torch.compile` traces: the clock (`time.time`,
    `time.perf_counter`, `time.monotonic`, ...), Python's `random` module,
    `datetime.now()`/`utcnow()`/`today()` and `uuid.uuid1()`...`uuid5()`.

    ## Why is this bad
    Each call ends the graph, runs eagerly and starts a new graph after it:
    the clock, `random.random()`, `random.choice()` and the like are in
    skipped files (GB0007), `datetime.now` is an unsupported method call
    (GB0156). Measured exceptions: Dynamo traces `random.randint`,
    `random.randrange` and `random.uniform` itself (no break), so they are
    not flagged.

    ## Example
    ```python
    @torch.compile
    def step(x):
        start = time.perf_counter()
        y = x.relu()
        return y, time.perf_counter() - start
    ```

    ## Use instead
    ```python
    @torch.compile
    def step(x):
        return x.relu()

    start = time.perf_counter()
    y = step(x)
    elapsed = time.perf_counter() - start
    ```
    For randomness use torch's RNG (`torch.rand`, `torch.randint`, a
    `torch.Generator`), which Dynamo puts in the graph.

    ## Fix safety
    No automatic fix: the value is used by the computation, and where it
    should come from (an argument, torch's RNG, timing around the call) is a
    design decision. The diagnostic carries a display-only hint.
    """

    code = "GM204"
    name = "untraceable-stdlib-call"
    summary = "clock, `random`, `datetime.now` or `uuid` call in compiled code splits the graph"
    dynamo_gb = gb_types("GB0007", "GB0156")
    fix_applicabilities = (Applicability.DISPLAY_ONLY,)
    effects = frozenset(_WHY)
    valid = (
        "import random\nimport torch\n\n@torch.compile\ndef f(x):\n    return x * random.randint(1, 3)\n",
        "import time\nimport torch\n\ndef f(x):\n    return x * time.time()\n",
        "import torch\n\n@torch.compile\ndef f(x, time):\n    return x * time.time()\n",
    )
    invalid = (
        Example("import time\nimport torch\n\n@torch.compile\ndef f(x):\n    t = time.perf_counter()\n    return x * 2, t\n"),
        Example("from random import random\nimport torch\n\n@torch.compile\ndef f(x):\n    return x * random()\n"),
        Example("from datetime import datetime\nimport torch\n\n@torch.compile\ndef f(x):\n    return x, datetime.now()\n"),
        Example("import uuid\nimport torch\n\n@torch.compile\ndef f(x):\n    return x, uuid.uuid4()\n"),
    )

    def message(self, effect: SideEffect) -> str:
        return f"`{effect.label}` in compiled code causes a graph break: {_WHY[effect.effect]}"

    def fix(self, call: nodes.Call, effect: SideEffect, fixes: SideEffectFixes) -> Fix | None:
        return Fix(edits=(), applicability=Applicability.DISPLAY_ONLY, message=f"no source fix: {_INSTEAD[effect.effect]}")
