"""GM202: logging and ``warnings.warn`` inside code that torch.compile traces."""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.side_effects import (
    DEFAULT_LOGGER_FACTORIES,
    DEFAULT_LOGGER_NAMES,
    Effect,
    SideEffect,
)
from graphmend_lint.diagnostics import Fix
from graphmend_lint.fixes.side_effect_fix import SideEffectFixes
from graphmend_lint.rules.base import Example, RuleOption
from graphmend_lint.rules.gb_types import gb_types
from graphmend_lint.rules.gm201_print import SideEffectRule

LOGGER_CONFIG = Fix.advice(
    "no automatic fix: configure the logger outside the compiled function (at import, or before calling it)"
)
_HF = "from transformers.utils import logging\n\nlogger = logging.get_logger(__name__)\n"


class LoggingInCompiledScope(SideEffectRule):
    """## What it does
    Flags logging calls in functions that `torch.compile` traces: methods of a
    `logging.Logger` (`debug`, `info`, `warning`, `warn`, `error`,
    `exception`, `critical`, `log`, and Hugging Face's `warning_once` /
    `info_once`), the `logging` module's functions (`logging.info(...)`) and
    `warnings.warn`; also a logger's configuration methods (`setLevel`,
    `addHandler`, `removeHandler`, `addFilter`, `removeFilter`), which
    Dynamo refuses like every logger method (GB0291, measured on torch 2.13).

    A receiver counts as a logger when it resolves to one: a name bound to a
    logger factory (`logging.getLogger`, transformers' `logging.get_logger`,
    ... set by the `logger-factories` option), a child of a logger
    (`logging.getLogger(__name__).getChild("io")`), a name listed in the
    `logger-names` option, a parameter annotated `logging.Logger`, or
    `self.<attr>` assigned from a factory. A method named `info` on any other
    object is not flagged.

    ## Why is this bad
    Dynamo does not trace into logging. Each call ends the graph, runs
    eagerly and starts a new graph (GB0291 for logger methods, GB4841 inside
    `logging` for the module functions, GB0007 for `warnings.warn`), even
    when the logger's level disables the message. The paper's Hugging Face
    models (BioGpt, Blenderbot, T5, Pegasus, Marian) lose 2-3 graph breaks
    each to a single `logger.warning_once`.

    ## Example
    ```python
    logger = logging.getLogger(__name__)

    @torch.compile
    def step(x):
        y = x * 2
        logger.info("norm %s", y.norm())
        return y.relu()
    ```

    ## Use instead
    Log only when running eagerly, as transformers does with its own warnings:
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        if not torch.compiler.is_compiling():
            logger.info("norm %s", y.norm())
        return y.relu()
    ```

    ## Fix safety
    The fix wraps the statement (and neighbouring log statements) in
    `if not torch.compiler.is_compiling():`, adding `import torch` where the
    name is not bound. Dynamo folds the test to `False` while tracing, so no
    break is logged and `fullgraph=True` passes (measured on torch 2.13). It
    is **safe**: eager behaviour, including the record and its line number,
    is unchanged. Under `torch.compile` the record is *not emitted*. Nothing
    at the call site can keep it and remove the break (measured): Dynamo's
    `reorderable_logging_functions` refuses logger methods, and
    `torch._dynamo.config.ignore_logger_methods` drops the call as well while
    needing a setting at the compile site. A statement holding a triple-quoted
    message is guarded on its own line so the string is not re-indented.
    A configuration call gets advice only: guarded, the level or handler
    would silently stay unchanged under `torch.compile`.
    """

    code = "GM202"
    name = "logging-in-compiled-scope"
    summary = "logging or `warnings.warn()` in compiled code splits the graph"
    dynamo_gb = gb_types("GB0291", "GB4841", "GB0007")
    effects = frozenset({Effect.LOG, Effect.WARN, Effect.LOGGER_CONFIG})
    options = {
        "logger-names": RuleOption(DEFAULT_LOGGER_NAMES, "names that always mean a logger"),
        "logger-factories": RuleOption(DEFAULT_LOGGER_FACTORIES, "dotted names of functions that return a logger"),
    }
    valid = (
        # `info` on an object that is not a logger
        "import torch\n\n@torch.compile\ndef f(x, tracker):\n    tracker.info('step')\n    return x * 2\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    info = torch.finfo(x.dtype)\n    return x * info.eps\n",
        # `setLevel` on an object that is not a logger
        "import torch\n\n@torch.compile\ndef f(x, meter):\n    meter.setLevel(2)\n    return x * 2\n",
        # `logger` is the file's own class, whose `log` Dynamo traces (pytorch_sac's training logger; a break in
        # its body is logged there, not at the call)
        (
            "import torch\n\n\nclass Logger:\n    def __init__(self):\n        self.meters = {}\n\n"
            "    def log(self, key, value, step):\n        self.meters[key] = value\n\n\n"
            "@torch.compile\ndef f(x, logger, step):\n    loss = (x * 2).mean()\n"
            "    logger.log('train/loss', loss, step)\n    return loss\n"
        ),
        # guarded: eager only
        (
            "import logging\nimport torch\n\nlog = logging.getLogger(__name__)\n\n@torch.compile\ndef f(x):\n"
            "    if not torch.compiler.is_compiling():\n        log.warning('eager')\n    return x * 2\n"
        ),
    )
    invalid = (
        # configuring a logger breaks like logging with it (GB0291); a guard would skip the change when compiled
        Example(
            "import logging\nimport torch\n\nlogger = logging.getLogger(__name__)\n\n@torch.compile\ndef f(x, verbose: bool):\n"
            "    logger.setLevel(logging.DEBUG if verbose else logging.INFO)\n    return x * 2\n"
        ),
        Example(
            "import torch\n" + _HF + "\n\n@torch.compile\ndef f(x, use_cache=True):\n    if use_cache and x.dim() > 1:\n"
            "        logger.warning_once('caching')\n    return x * 2\n",
            fixed="import torch\n" + _HF + "\n\n@torch.compile\ndef f(x, use_cache=True):\n"
            "    if use_cache and x.dim() > 1:\n        if not torch.compiler.is_compiling():\n"
            "            logger.warning_once('caching')\n    return x * 2\n",
        ),
        Example(
            "import logging\nimport torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.events = logging.getLogger('events')\n\n    def forward(self, x):\n"
            "        self.events.debug('x=%s', x.shape)\n        self.events.debug('done')  # trace\n        return x + 1\n"
            "\n\nm = torch.compile(M())\n",
            fixed="import logging\nimport torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.events = logging.getLogger('events')\n\n    def forward(self, x):\n"
            "        if not torch.compiler.is_compiling():\n            self.events.debug('x=%s', x.shape)\n"
            "            self.events.debug('done')  # trace\n        return x + 1\n\n\nm = torch.compile(M())\n",
        ),
        Example(
            "import warnings\n\nfrom torch import compile\n\n@compile\ndef f(x):\n    y = x.cos()\n"
            "    warnings.warn('cos')\n    return y\n",
            fixed="import warnings\n\nfrom torch import compile\nimport torch\n\n@compile\ndef f(x):\n    y = x.cos()\n"
            "    if not torch.compiler.is_compiling():\n        warnings.warn('cos')\n    return y\n",
        ),
    )

    def fix(self, call: nodes.Call, effect: SideEffect, fixes: SideEffectFixes) -> Fix | None:
        """The guard for records; advice for a configuration change, which must still happen when compiled."""
        return LOGGER_CONFIG if effect.effect is Effect.LOGGER_CONFIG else super().fix(call, effect, fixes)

    def message(self, effect: SideEffect) -> str:
        return f"`{effect.label}` in compiled code causes a graph break"
