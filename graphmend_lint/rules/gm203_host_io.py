"""GM203: host I/O (streams, files, stdin, debuggers) inside code that torch.compile traces."""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.side_effects import Effect, SideEffect
from graphmend_lint.diagnostics import Fix
from graphmend_lint.fixes.progress_bar import eager_progress_bar_fix
from graphmend_lint.fixes.side_effect_fix import SideEffectFixes
from graphmend_lint.rules.base import Example
from graphmend_lint.rules.gb_types import gb_types
from graphmend_lint.rules.gm201_print import SideEffectRule

#: Effects whose guard keeps eager behaviour and is worth applying.
_GUARDED = frozenset({Effect.STREAM, Effect.DEBUGGER})
_MOVE_OUT = (
    "no source fix: do the I/O outside the compiled function (before calling it, or with its "
    "results) and pass data in and out as arguments"
)

_PROGRESS = (
    "no automatic fix: keep the progress bar outside the compiled function (wrap the loop that calls it), "
    "or iterate `xs if torch.compiler.is_compiling() else tqdm(xs)`"
)


class HostIoInCompiledScope(SideEffectRule):
    """## What it does
    Flags host I/O in functions that `torch.compile` traces:
    `sys.stdout`/`sys.stderr` methods (`write`, `flush`, ...), `open(...)`
    and reads/writes on the handle it returns, `input()`, `breakpoint()`
    and `pdb.set_trace()`; and tqdm progress bars: `tqdm(...)` and
    `trange(...)` (from `tqdm`, `tqdm.auto`, `tqdm.notebook`, ...),
    `tqdm.write(...)`, and the methods of a bar the code built (`pbar.update(1)`,
    `pbar.set_postfix(...)`, `pbar.close()`).

    ## Why is this bad
    None of these can be part of an FX graph. Dynamo ends the graph, runs the
    call eagerly and starts a new graph after it: `sys.stdout.write` is an
    unsupported method call (GB0156), `open`, `input` and `breakpoint` are
    builtins it cannot trace (GB0059), `pdb.set_trace` is in a skipped file
    (GB0007). A progress bar is built in tqdm's skipped code (GB0007), and
    each step of its iterator and each method call breaks again (GB0008;
    measured on torch 2.13 for `for i in tqdm(range(n))`, `trange`, and
    `pbar = tqdm(total=n)` ... `pbar.update(1)`). Inside a loop, Dynamo
    gives up on the whole function.

    ## Example
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        sys.stdout.write(f"{y.shape}\\n")
        return y.relu()
    ```

    ## Use instead
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        if not torch.compiler.is_compiling():
            sys.stdout.write(f"{y.shape}\\n")
        return y.relu()
    ```
    File and console input belong outside the compiled function: read before
    the call and pass the data in, write the results it returns.

    ## Fix safety
    For stream writes and flushes, `breakpoint()` and `pdb.set_trace()` the
    fix wraps the statement (and neighbouring ones of the same kind) in
    `if not torch.compiler.is_compiling():`, which Dynamo folds away: no break
    is logged and `fullgraph=True` passes (measured on torch 2.13). It is
    **unsafe**: eager runs are unchanged, but under `torch.compile` the output
    or the debugger stop vanishes. `open(...)`, file handle calls and
    `input()` only get a display-only hint: skipping them under compile would
    silently drop data.

    A progress bar that a `for` loop (or a comprehension) iterates, directly
    or through `enumerate`/`zip`, `for t in tqdm(xs, desc="sampling")`,
    becomes `for t in (xs if torch.compiler.is_compiling() else tqdm(xs,
    desc="sampling"))`
    (`trange(a, b)` steps through `range(a, b)`): the same items in the same
    order, no logged break and `fullgraph=True` passes (measured on torch
    2.13). **Unsafe**: eager runs are unchanged, but under `torch.compile`
    the bar is not shown. A bar built apart and stepped by hand
    (`pbar.update(1)`) gets a display-only hint.
    """

    code = "GM203"
    name = "host-io-in-compiled-scope"
    summary = "host I/O (streams, files, stdin, debugger) in compiled code splits the graph"
    dynamo_gb = gb_types("GB0156", "GB0059", "GB0007", "GB0008")
    effects = frozenset({Effect.STREAM, Effect.OPEN, Effect.FILE_IO, Effect.INPUT, Effect.DEBUGGER, Effect.PROGRESS_BAR})
    valid = (
        "import sys\nimport torch\n\ndef f(x):\n    sys.stdout.write('eager only\\n')\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, stream):\n    stream.write('not sys.stdout')\n    return x * 2\n",
        "import torch\n\n@torch.compile\ndef f(x, open=None):\n    return x * 2\n",
        # a local `tqdm` is not the library's; a bar outside compiled code is fine
        "import torch\n\ndef tqdm(xs):\n    return xs\n\n@torch.compile\ndef f(x, ts):\n    for t in tqdm(ts):\n"
        "        x = x * t\n    return x\n",
        "import torch\nfrom tqdm import tqdm\n\ndef run(f, batches):\n    return [f(b) for b in tqdm(batches)]\n",
    )
    invalid = (
        Example(
            "import sys\nimport torch\n\n@torch.compile\ndef f(x):\n    y = x * 2\n    sys.stdout.flush()\n"
            "    return y + 1\n",
            fixed="import sys\nimport torch\n\n@torch.compile\ndef f(x):\n    y = x * 2\n"
            "    if not torch.compiler.is_compiling():\n        sys.stdout.flush()\n    return y + 1\n",
            unsafe=True,
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    breakpoint()\n    return x * 2\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n"
            "        breakpoint()\n    return x * 2\n",
            unsafe=True,
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    with open('log.txt', 'a') as handle:\n"
            "        handle.write('step')\n    return x * 2\n"
        ),
        Example("import torch\n\n@torch.compile\ndef f(x):\n    scale = float(input())\n    return x * scale\n"),
        Example(
            "import torch\nfrom tqdm.auto import tqdm, trange\n\n@torch.compile\ndef f(x, ts):\n"
            "    for t in tqdm(ts, desc='sampling'):\n        x = x * t\n"
            "    return [x * i for i in trange(1, 3)]\n",
            fixed="import torch\nfrom tqdm.auto import tqdm, trange\n\n@torch.compile\ndef f(x, ts):\n"
            "    for t in (ts if torch.compiler.is_compiling() else tqdm(ts, desc='sampling')):\n        x = x * t\n"
            "    return [x * i for i in (range(1, 3) if torch.compiler.is_compiling() else trange(1, 3))]\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom tqdm import tqdm\n\n@torch.compile\ndef f(x, ts):\n"
            "    for i, t in enumerate(tqdm(ts)):\n        x = x * t + i\n    return x\n",
            fixed="import torch\nfrom tqdm import tqdm\n\n@torch.compile\ndef f(x, ts):\n"
            "    for i, t in enumerate(ts if torch.compiler.is_compiling() else tqdm(ts)):\n        x = x * t + i\n"
            "    return x\n",
            unsafe=True,
        ),
        Example(
            "import torch\nimport tqdm\n\n@torch.compile\ndef f(x):\n    pbar = tqdm.tqdm(total=2)\n"
            "    for _ in range(2):\n        x = x * 2\n        pbar.update(1)\n    return x\n"
        ),
    )

    def message(self, effect: SideEffect) -> str:
        return f"`{effect.label}` (host I/O) in compiled code causes a graph break"

    def fix(self, call: nodes.Call, effect: SideEffect, fixes: SideEffectFixes) -> Fix | None:
        if effect.effect in _GUARDED:
            return fixes.fix_for(call, effect.effect)
        if effect.effect is Effect.PROGRESS_BAR:
            qualified = fixes.finder.values.qualified_name(call.func) or ""
            return eager_progress_bar_fix(fixes.analysis, call, qualified.rpartition(".")[2]) or Fix.advice(_PROGRESS)
        return Fix.advice(_MOVE_OUT)
