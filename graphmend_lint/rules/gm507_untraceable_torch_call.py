"""GM507: torch calls Dynamo refuses to trace (``graph_break()``, ``pack_padded_sequence``, ``.backward()``...)."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.dynamo_settings import setting_on
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.side_effects import SideEffectFinder
from graphmend_lint.analysis.untraceable_torch import TRACE_AUTOGRAD_OPS, allow_in_graph_callee, refused_call
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.builtin_isinstance import builtin_isinstance_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption
from graphmend_lint.rules.break_sites import BreakFinder
from graphmend_lint.rules.gb_types import gb_types

_HEADER = "import torch\nfrom torch import nn\n\n\n@torch.compile\ndef f(x: torch.Tensor, lengths: torch.Tensor):\n"

#: A method decorated through a module-level alias of ``torch.compiler.disable`` (``{alias}``), called from forward.
_ALIASED_DISABLE = (
    "import torch\nfrom torch import nn\n\n\ndef nullwrap(fn):\n    return fn\n\n\ndisable_compiler = {alias}\n\n\n"
    "class Embed(nn.Module):\n    @disable_compiler\n    def add_pos(self, x):\n        return x + x.sum().item()\n\n"
    "    def forward(self, x):\n        return self.add_pos(x * 2)\n\n\nmodel = torch.compile(Embed())\n"
)

JIT_ISINSTANCE = "torch.jit.isinstance"
#: ``torch.jit.isinstance(reference, {kind})`` choosing how a beamformer picks its channel (torchaudio's MVDR).
_JIT_ISINSTANCE = (
    "import torch\nfrom torch import Tensor\n\n\n@torch.compile\ndef pick(ws: Tensor, reference):\n"
    "    if {check}(reference, {kind}):\n        return ws[..., reference]\n    return ws @ reference\n"
)

#: A function marked ``allow_in_graph`` with body ``{body}`` (parameter ``x``), called from compiled code.
_ALLOWED = (
    "import torch\n\n\n@torch.compiler.allow_in_graph\ndef op(x: torch.Tensor):\n{body}\n\n"
    "@torch.compile\ndef f(x: torch.Tensor):\n    return op(x * 2) + 1\n"
)


class UntraceableTorchCall(Rule):
    """## What it does
    Flags torch calls that Dynamo refuses to trace whatever their arguments,
    in code that `torch.compile` traces: `torch._dynamo.graph_break()`,
    functions of torch modules Dynamo skips (`pack_padded_sequence`,
    `pad_packed_sequence`, `torch.jit.isinstance`, `torch.jit.fork`/`wait`,
    `torch.get_rng_state`/`set_rng_state`, `torch.typename`,
    `torch.utils.data.get_worker_info`, `torch.autograd.Variable`, flair's
    locked-dropout mask), `torch.autograd.grad`,
    `torch.distributions.kl_divergence`, `nn.init.trunc_normal_`,
    `loss.backward()` on a tensor (or on a value of unknown kind, when no
    class of the file defines its own `backward` method: a loss from a loss
    function the trainer was built with), `torch.autograd.backward`, a tensor's
    per-element Python callbacks (`t.apply_(fn)`, `t.map_(other, fn)`,
    `t.map2_(a, b, fn)`), `t.retain_grad()`, `t.is_pinned()`,
    `t.untyped_storage()`, `t.to_sparse()`, `t.resize_(...)`,
    `t.resize_as_(other)` (fast-reid's `dist_an.new().resize_as_(dist_an)`,
    DINO's k-NN buffer), process settings and host
    queries (`torch.set_num_threads`, `torch.get_num_threads()`,
    `torch.cuda.device_count()`, `torch.cuda.memory_allocated()`, the backend
    checks `torch.backends.mps.is_available()`, `torch.backends.cudnn.is_available()`,
    `torch.backends.cuda.flash_sdp_enabled()` and their kin, `torch.cuda.is_bf16_supported()`,
    `torch.get_float32_matmul_precision()`, `torch.is_inference_mode_enabled()`,
    `torch.autograd.set_detect_anomaly`, `torch.get_default_device()`,
    `torch.result_type`, `torch.hub.get_dir()`, `torch.save`),
    `torch.testing.assert_close`, `torch._assert` of a tensor condition,
    `with torch.backends.cudnn.flags(...)`, `with torch.backends.cuda.sdp_kernel(...)`
    (gpt-fast's decode loop), `with torch.device(...)`,
    `with torch.autograd.detect_anomaly():`, `with torch.random.fork_rng():`, calls of a function of the
    same file decorated `@torch.compiler.disable` / `@torch._dynamo.disable`
    (also `(recursive=False)` or `(reason=...)`, and through an alias such as
    timm's `disable_compiler =
    getattr(getattr(torch, "compiler", None), "disable", None) or nullwrap`),
    calls of the wrapper `torch.compiler.disable(fn)` returns (bound to a
    name, to a `self` attribute, or called on the spot),
    and `nn.Module` hook registrations (`m.register_forward_hook(...)` and
    the pre/backward variants).

    ## Why is this bad
    Dynamo ends the graph, runs the call eagerly and starts a new graph after
    it (measured, torch 2.13): `graph_break()` asks for exactly that
    (GB0025); the skipped-module functions live in `torch.jit`,
    `torch.random`, `torch.nn.utils.rnn`... which Dynamo's trace rules skip,
    and it has no handler for them (GB0007; `torch.jit.annotate`,
    `torch.jit.is_scripting` and `torch.utils.checkpoint` have one and trace);
    `torch.autograd.grad` is not traced while
    `torch._dynamo.config.trace_autograd_ops` is off, the default (GB9186),
    nor is `Tensor.backward()` (GB0123); `torch.autograd.backward` lives in a
    file Dynamo skips, whatever the settings (GB0007); `apply_`/`map_`/`map2_`
    would hand the op a Python function, which Dynamo cannot pass to it
    ("Failed to convert args/kwargs to proxy", GB0055); `retain_grad()` does
    not work with the compiled graph's autograd (GB0108), `is_pinned()`
    returns a Python bool from a torch op (GB0208), a storage has no handler
    (GB0156), sparse tensors are not supported (GB0015, GB0277), nor is
    resizing in place (GB0126, GB0127); `kl_divergence` picks its formula
    with `min()` over the registered pairs that match, on the first call
    for a pair of distribution types: with several matches (Normal,
    Independent, Bernoulli, Beta, Gamma, Dirichlet, which also match the
    exponential-family formula) that `min()` breaks (GB0059; Binomial's
    formula also branches on tensor data, GB0170), while a Categorical,
    OneHotCategorical or Laplace argument has one match and traces (not
    flagged); `trunc_normal_` reads its bounds with `.item()`
    (GB0124); the
    host queries return Python values a graph cannot hold (GB0208; GB0046
    for `is_inference_mode_enabled`, GB0008 for `set_detect_anomaly`) or
    live in skipped code (GB0007: `set_num_threads`, `save`, `hub.get_dir`,
    `backends.mkldnn.is_available`, `get_default_device` and `result_type`,
    with GB0208 for the last two; `torch.set_default_dtype`,
    `torch.set_float32_matmul_precision`, `torch.finfo`, `torch.promote_types`,
    `torch.cuda.is_available()`, `torch.is_grad_enabled()` and the flag
    `torch.backends.cudnn.enabled` trace); `assert_close` compares
    on the host (GB0170) and `torch._assert` reads its tensor condition
    (GB0033);
    `cudnn.flags`, `cuda.sdp_kernel`, `torch.device`,
    `autograd.detect_anomaly` and `random.fork_rng` are unsupported context
    managers (GB0142, with GB0208 on the same line for the two backend switches
    and `fork_rng`, and GB0008 for anomaly detection;
    `torch.nn.attention.sdpa_kernel` traces); a disabled function is skipped (GB0098, or GB0099 when
    the call is inlined from another frame or the function was disabled with
    `recursive=False`; `torch.compiler.disable(fn)(x)` adds GB0007); a hook registration's
    `RemovableHandle` sets an attribute on a type (GB0467, and GB0013 at the
    handle's `.remove()`). An `allow_in_graph` function is run on fake
    tensors, which have shapes and no data, so a body that needs data
    breaks at the call (GB0033, GB0036 for a data-dependent output size),
    and again inside when Dynamo later traces the body as a frame of its
    own; the mark hides no break. Inside a loop the break makes
    Dynamo give up on the whole function.

    ## Example
    ```python
    @torch.compile
    def encode(x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
        return packed.data.sum()
    ```

    ## Use instead
    Keep the call outside the compiled function, or replace it with code
    Dynamo traces (pad and mask instead of packing, `torch.func.grad`
    instead of `torch.autograd.grad`). A training step compiled whole can
    return the loss and call `.backward()` on it outside.

    ## Fix safety
    `torch.jit.isinstance(x, T)` becomes `isinstance(x, T)` when `T` is a
    builtin scalar type, `torch.Tensor` or a class of the file (alone or in
    a tuple). **Safe**: `torch.jit.isinstance` checks such a type with the
    builtin itself, and TorchScript refines through the builtin too; a
    container type (`List[int]`) has no such twin and gets no fix.
    Otherwise no automatic fix: where the call should go is a design
    decision, and the diagnostic carries a display-only hint. For an `allow_in_graph`
    function, fixing the break inside its body (the finding there) removes
    the one at the call too.
    """

    code = "GM507"
    name = "untraceable-torch-call"
    summary = "a torch call Dynamo refuses to trace splits the graph"
    dynamo_gb = gb_types(
        "GB0025", "GB0007", "GB9186", "GB0123", "GB0142", "GB0208", "GB0098", "GB0099", "GB0467", "GB0033", "GB0036",
        "GB0055", "GB0108", "GB0156", "GB0015", "GB0277", "GB0008", "GB0046", "GB0170",
        "GB0126", "GB0127", "GB0059", "GB0124",
    )
    options = {
        "trace-autograd-ops": RuleOption(
            False,
            "the program turns `torch._dynamo.config.trace_autograd_ops` on somewhere the linter cannot see; "
            "`torch.autograd.grad` and `.backward()` are then not reported",
        )
    }
    valid = (
        "import torch\nfrom torch.distributions import Categorical, kl_divergence\n\n\n@torch.compile\n"
        "def f(a: torch.Tensor, b: torch.Tensor):\n    p = Categorical(logits=a)\n"
        "    return kl_divergence(p, Categorical(logits=b))\n",
        "import torch\n\n\ndef f(x):\n    torch._dynamo.graph_break()\n    return x\n",
        # the supported kernel switch (measured: no break)
        _HEADER + "    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):\n        y = x * 2\n    return y\n",
        _JIT_ISINSTANCE.format(check="isinstance", kind="int"),
        # torch.jit's annotate and is_scripting have Dynamo handlers (measured: no break)
        _HEADER + "    sizes = torch.jit.annotate(list[int], [])\n    if not torch.jit.is_scripting():\n"
        "        sizes.append(x.shape[0])\n    return x * len(sizes)\n",
        _HEADER + "    with torch.no_grad():\n        y = x * 2\n    return y, torch.cuda.is_available()\n",
        "import torch\n\ntorch._dynamo.config.trace_autograd_ops = True\n\n\n@torch.compile\ndef f(x, w):\n"
        "    return torch.autograd.grad((x * w).sum(), [w])\n",
        "import torch\n\ntorch._dynamo.config.trace_autograd_ops = True\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    loss = (x * 2).sum()\n    loss.backward()\n    return loss.detach()\n",
        # an object's own `backward` method is not a tensor's
        "import torch\n\n\nclass Scaler:\n    def backward(self, t):\n        return t\n\n\n@torch.compile\n"
        "def f(x: torch.Tensor, s: Scaler):\n    return s.backward(x * 2)\n",
        "import torch\n\n\ndef helper(x):\n    return x.sum()\n\n\n@torch.compile\ndef f(x):\n    return helper(x)\n",
        # the alias is the no-op wrapper: ``or`` only falls back to torch's disable when it is falsy
        _ALIASED_DISABLE.format(alias="nullwrap or getattr(torch.compiler, 'disable', None)"),
        # an allow_in_graph body that needs no data (a print runs on the fake tensors): no break (measured)
        _ALLOWED.format(body="    print('hi', x.shape)\n    return x.relu()\n"),
    )
    invalid = (
        Example(_HEADER + "    y = x + 1\n    torch._dynamo.graph_break()\n    return y + 1\n"),
        # nomic's rotary cache: `None` until filled in, so of unknown kind; only a tensor has `is_inference` (GB0045)
        Example(
            "import torch\nfrom torch import nn\n\n\nclass Rotary(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self._cos = None\n\n    def forward(self, x):\n"
            "        if self._cos is None or self._cos.is_inference():\n            self._cos = torch.cos(x)\n"
            "        return x * self._cos\n\n\nmodel = torch.compile(Rotary())\n"
        ),
        Example(_HEADER + "    p = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)\n    return p.data\n"),
        Example(_HEADER + "    return torch.autograd.grad((x * lengths).sum(), [lengths])\n"),
        Example(_HEADER + "    dtype = torch.float32 if torch.backends.mps.is_available() else torch.float64\n    return x.to(dtype)\n"),
        Example(_HEADER + "    loss = (x * lengths).sum()\n    loss.backward()\n    return loss.detach()\n"),
        Example(_HEADER + "    loss = (x * lengths).sum()\n    torch.autograd.backward(loss)\n    return loss.detach()\n"),
        # a loss of unknown kind, in a file with no `backward` of its own (decision-transformer's trainer)
        Example(
            "import torch\n\n\nclass Trainer:\n    def __init__(self, model, loss_fn):\n        self.model = model\n"
            "        self.loss_fn = loss_fn\n\n    def train_step(self, x):\n        loss = self.loss_fn(self.model(x))\n"
            "        loss.backward()\n        return loss.detach()\n\n\n"
            "trainer = Trainer(torch.nn.Linear(2, 2), lambda y: y.pow(2).mean())\nstep = torch.compile(trainer.train_step)\n"
        ),
        Example(_HEADER + "    return (x * 2).apply_(lambda v: min(v, 1.0))\n"),
        Example(_HEADER + "    y = x * 2\n    y.retain_grad()\n    return y.to_sparse()\n"),
        Example(_HEADER + "    ones = x.new().resize_as_(x).fill_(1)\n    return x + ones\n"),
        Example(_HEADER + "    with torch.autograd.detect_anomaly():\n        return x * 2\n"),
        Example(_HEADER + "    torch._assert((x > -9).all(), 'overflow')\n    return x * torch.get_num_threads()\n"),
        Example(_HEADER + "    mask = torch.autograd.Variable(x.new_ones(x.shape), requires_grad=False)\n    return mask * x\n"),
        Example(
            _JIT_ISINSTANCE.format(check="torch.jit.isinstance", kind="int"),
            fixed=_JIT_ISINSTANCE.format(check="isinstance", kind="int"),
        ),
        Example(
            _JIT_ISINSTANCE.format(check="torch.jit.isinstance", kind="(int, Tensor)"),
            fixed=_JIT_ISINSTANCE.format(check="isinstance", kind="(int, Tensor)"),
        ),
        # a container type has no builtin twin: advice only
        Example(_JIT_ISINSTANCE.format(check="torch.jit.isinstance", kind="list[int]")),
        Example(_HEADER + "    state = torch.get_rng_state()\n    y = x + torch.rand_like(x)\n    torch.set_rng_state(state)\n"
                "    return y\n"),
        Example(
            "import torch\nfrom torch import nn\n\nlayer = nn.Linear(2, 2)\n\n\n@torch.compile\ndef f(x, hook):\n"
            "    handle = layer.register_forward_hook(hook)\n    y = layer(x)\n    handle.remove()\n    return y\n"
        ),
        Example(_HEADER + "    with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):\n        y = x * 2\n    return y\n"),
        Example(_HEADER + "    with torch.backends.cuda.sdp_kernel(enable_math=True), torch.device('cpu'):\n        y = x * 2\n    return y\n"),
        Example(
            "import torch\n\n\n@torch.compiler.disable\ndef helper(x):\n    return x.sum().item()\n\n\n"
            "@torch.compile\ndef f(x):\n    y = x * 2\n    return y + helper(y)\n"
        ),
        Example(_ALIASED_DISABLE.format(alias="getattr(getattr(torch, 'compiler', None), 'disable', None) or nullwrap")),
        # ``recursive=False`` skips only the function's own frame: the call still breaks (GB0099)
        Example(
            "import torch\n\n\n@torch.compiler.disable(recursive=False)\ndef helper(x):\n    return x + 1\n\n\n"
            "@torch.compile\ndef f(x):\n    return helper(x * 2)\n"
        ),
        # the wrapper ``disable(fn)`` returns, through a name, a ``self`` attribute and on the spot (GB0098)
        Example(
            "import torch\nfrom torch import nn\n\n\ndef helper(x):\n    return x + 1\n\n\n"
            "eager_helper = torch.compiler.disable(helper)\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.post = torch.compiler.disable(helper)\n\n"
            "    def forward(self, x):\n        y = eager_helper(x * 2)\n        y = self.post(y)\n"
            "        return torch.compiler.disable(helper)(y)\n\n\nmodel = torch.compile(M())\n"
        ),
        # the call breaks (GB0033); the branch inside is GM101's finding
        Example(_ALLOWED.format(body="    return torch.sigmoid(x) if x.sum() > 0 else x\n")),
        Example(
            "import torch\n\n\ndef scale(x):\n    return x * x.sum().item()\n\n\nop = torch._dynamo.allow_in_graph(scale)\n\n\n"
            "@torch.compile\ndef f(x):\n    return op(x * 2) + scale(x)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        autograd_traced = setting_on(ctx.values, ctx.options, TRACE_AUTOGRAD_OPS)
        for call, traced, refused in ctx.recognised(refused_call, nodes.Call):
            if refused.autograd and autograd_traced:
                continue
            fix = (refused.callee == JIT_ISINSTANCE and builtin_isinstance_fix(ctx.analysis, ctx.values, call)) or (
                Fix.advice(f"no source fix: {refused.advice}")
            )
            message = f"{refused.label} in compiled code causes a graph break: {refused.reason}"
            yield ctx.report(call, message, traced, fix, breaks_itself=True)
        yield from self._allowed_in_graph(ctx)

    def _allowed_in_graph(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """Calls of ``allow_in_graph`` functions whose body needs a tensor's data (fake tensors carry none)."""
        if "allow_in_graph" not in ctx.analysis.source.text:
            return  # the mark is spelled out in the file (decorator or wrapper): no lookup per call without it
        breaks = BreakFinder(ctx.values, SideEffectFinder(ctx.values))
        for call, traced, function in ctx.recognised(allow_in_graph_callee, nodes.Call):
            needs_data = breaks.data_dependent_node(function)
            if needs_data is None:
                continue
            message = (
                f"`{function.name}` is `allow_in_graph`: Dynamo runs it on fake tensors, which have no data, "
                f"and `{snippet(needs_data)}` (line {needs_data.lineno}) needs it: graph break at the call"
            )
            fix = Fix.advice(f"no source fix here: fix the break at line {needs_data.lineno}, and the call traces")
            yield ctx.report(call, message, traced, fix)
