"""GM514: optimizer, gradient-scaler and learning-rate-scheduler calls in code torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import ast_resolution
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.training_objects import breaking_call
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: compile the forward and the loss (return the loss), and run `backward`, the optimizer, "
    "scaler and scheduler calls eagerly after it; or compile `optimizer.step` on its own"
)
#: The file must name one of these for any of its objects to be provably an optimizer, scaler or scheduler.
_EVIDENCE_WORDS = ("optim", "GradScaler", "zero_grad")
_STEP = (
    "import torch\nfrom torch import nn\n\nmodel = nn.Linear(4, 2)\n{setup}\n\n\n@torch.compile\n"
    "def train_step(x: torch.Tensor, y: torch.Tensor):\n{body}    return loss.detach()\n"
)
_SGD = "opt = torch.optim.SGD(model.parameters(), lr=0.1)"
_FORWARD = "    loss = nn.functional.mse_loss(model(x), y)\n"


def _step(setup: str, before: str = "", after: str = "") -> str:
    """A compiled training step on a module-level model, *before* / *after* its loss."""
    return _STEP.format(setup=setup, body=before + _FORWARD + after)


class TrainingStepCall(Rule):
    """## What it does
    Flags calls of a torch optimizer, gradient scaler or learning-rate
    scheduler in code that `torch.compile` traces: `optimizer.zero_grad()`,
    `optimizer.step()` (SGD, Adam, AdamW and the other built-in optimizers,
    LBFGS), `optimizer.state_dict()`, every method of a
    `torch.amp.GradScaler` (`scaler.scale(loss)`, `scaler.unscale_(opt)`,
    `scaler.step(opt)`, `scaler.update()`) and of a
    `torch.optim.lr_scheduler` scheduler (`scheduler.step()`,
    `scheduler.get_last_lr()`). The object must provably be one: built from
    the torch class (at module level, in `__init__`, in a factory, passed at
    the compiled function's call sites), an instance of a subclass of the file
    that does not override the method, or a parameter annotated with the
    class (`optimizer: torch.optim.Optimizer`; its `step` is then unknown and
    not flagged); or, with nothing known of it, an object the function calls
    both `zero_grad()` and `step()` on (a compiled `train_iteration(model,
    optimizer, batch)` that takes the optimizer as an argument, PANNs): only
    an optimizer offers both, and torch's built-in ones break at each (measured
    with SGD and Adam). Any other `obj.step()` is not.

    ## Why is this bad
    A training step compiled whole breaks at each of these calls (measured,
    torch 2.13): `Optimizer.zero_grad` and `state_dict` are marked
    `torch._disable_dynamo` (GB0008, "Attempted to inline function marked as
    skipped"); the built-in optimizers' `step` calls
    `torch._dynamo.graph_break()` before and after the update (GB0025;
    `fused=True` adds GB0098, a scheduler built on the optimizer adds GB0007;
    `LBFGS.step` is disabled, GB0098 and GB0099); `GradScaler` and the
    schedulers live in code Dynamo skips (GB0008, and `scaler.step` adds the
    optimizer's GB0025). `loss.backward()` between them breaks too (GM507).
    Inside a loop over batches, the first break makes Dynamo give up on the
    whole function. `model.zero_grad()`, `clip_grad_norm_`, `clip_grad_value_`
    and reading or writing `p.grad` trace, and are not flagged.

    ## Example
    ```python
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile
    def train_step(x, y):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    ```

    ## Use instead
    Compile the model (or the forward and loss), and keep the optimizer,
    scaler and scheduler calls in eager code:
    ```python
    compiled_model = torch.compile(model)

    def train_step(x, y):
        optimizer.zero_grad()
        loss = criterion(compiled_model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    ```
    To compile the update itself, compile `optimizer.step` on its own
    (PyTorch's "Compiling the optimizer" recipe).

    ## Fix safety
    No automatic fix: where the step boundary goes is a design decision. The
    diagnostic carries a display-only hint.
    """

    code = "GM514"
    name = "training-step-call"
    summary = "an optimizer, gradient-scaler or scheduler call in compiled code splits the graph"
    dynamo_gb = gb_types("GB0008", "GB0025", "GB0098", "GB0099", "GB0007")
    valid = (
        # the module's own zero_grad, and gradient clipping, trace
        _step("", after="    model.zero_grad()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"),
        # an object that is not an optimizer
        _step("\n\nclass Counter:\n    def step(self):\n        pass\n\n\ncounter = Counter()", "", "    counter.step()\n"),
        # reading the learning rate traces
        _step(_SGD, after="    lr = opt.param_groups[0]['lr']\n"),
        # a subclass that defines its own step: traced like any other method
        _step(
            "\n\nclass Sign(torch.optim.Optimizer):\n    def step(self, closure=None):\n        pass\n\n\n"
            "opt = Sign(model.parameters(), {})",
            after="    opt.step()\n",
        ),
        # only annotated as an Optimizer: its step is unknown
        "import torch\n\n\n@torch.compile\ndef apply(opt: torch.optim.Optimizer, x: torch.Tensor):\n"
        "    opt.step()\n    return x * 2\n",
        # a subclass that defines its own `zero_grad`
        _step(
            "\n\nclass Plain(torch.optim.SGD):\n    def zero_grad(self, set_to_none=True):\n        pass\n\n\n"
            "opt = Plain(model.parameters(), lr=0.1)",
            "    opt.zero_grad()\n",
        ),
        # not compiled
        "import torch\n\nopt = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)\n\n\n"
        "def step():\n    opt.step()\n",
        # an object of unknown class that only steps: a scheduler, a counter, anything
        "import torch\n\n\n@torch.compile\ndef apply(stepper, x: torch.Tensor):\n    stepper.step()\n    return x * 2\n",
    )
    invalid = (
        Example(_step(_SGD, "    opt.zero_grad()\n", "    opt.step()\n")),
        Example(
            _step(
                "opt = torch.optim.AdamW(model.parameters(), fused=True)\nscaler = torch.amp.GradScaler('cuda')",
                after="    scaler.scale(loss)\n    scaler.unscale_(opt)\n    scaler.step(opt)\n    scaler.update()\n",
            )
        ),
        Example(
            _step(_SGD + "\nsched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)", after="    sched.step()\n")
        ),
        # built in a factory, held on `self`, annotated
        Example(
            "import torch\nfrom torch import nn\nfrom torch.optim import Optimizer\n\n\n"
            "def build_optimizer(model):\n    return torch.optim.Adam(model.parameters(), lr=1e-3)\n\n\n"
            "class Trainer:\n    def __init__(self, model: nn.Module):\n        self.model = model\n"
            "        self.optimizer = build_optimizer(model)\n\n    @torch.compile\n"
            "    def step(self, x: torch.Tensor, extra: Optimizer):\n        loss = self.model(x).sum()\n"
            "        self.optimizer.step()\n        extra.zero_grad()\n        return loss\n"
        ),
        # passed at the compiled function's call site in `main()`; a scaler only built with `--amp`
        Example(
            "import torch\nfrom torch import nn\n\n\ndef train_one_epoch(model, optimizer, batches, scaler=None):\n"
            "    for x in batches:\n        loss = model(x).sum()\n        if scaler is not None:\n"
            "            scaler.step(optimizer)\n        else:\n            optimizer.step()\n\n\n"
            "def main(amp: bool):\n    model = nn.Linear(4, 2)\n"
            "    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.01)\n"
            "    scaler = torch.cuda.amp.GradScaler() if amp else None\n"
            "    step = torch.compile(train_one_epoch)\n    step(model, optimizer, [torch.randn(2, 4)], scaler)\n"
        ),
        # an argument the function uses as an optimizer: `zero_grad()` and `step()`
        Example(
            "import torch\n\n\ndef train_iteration(model, optimizer, x: torch.Tensor):\n"
            "    loss = model(x).sum()\n    optimizer.step()\n    optimizer.zero_grad()\n    return loss\n\n\n"
            "step = torch.compile(train_iteration)\n"
        ),
        # assigned by a function that declares it `global`; a subclass inherits `zero_grad`
        Example(
            "import torch\nfrom torch import nn\n\nmodel = nn.Linear(4, 2)\noptimizer = None\n\n\n"
            "class Sign(torch.optim.Optimizer):\n    def step(self, closure=None):\n        pass\n\n\n"
            "@torch.compile\ndef train_step(x):\n    optimizer.zero_grad()\n    return model(x).sum()\n\n\n"
            "def setup():\n    global optimizer\n    optimizer = Sign(model.parameters(), {})\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        text = ctx.analysis.source.text
        if not any(word in text for word in _EVIDENCE_WORDS):
            return
        resolution = ast_resolution(ctx.analysis)
        for call, traced in ctx.traced_nodes(nodes.Call):
            found = breaking_call(resolution, call)
            if found is None:
                continue
            message = f"`{snippet(call)}` calls a torch {found.role} in compiled code: {found.reason}: graph break"
            yield ctx.report(call, message, traced, NO_FIX)
