"""GM501: calling ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` inside code that torch.compile traces."""

from __future__ import annotations

import re
from collections.abc import Iterator

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.ast_resolution import AstResolution, ast_resolution
from graphmend_lint.analysis.dynamo_settings import ALLOW_RNN, setting_on
from graphmend_lint.analysis.lookup import is_parameter, loops_binding, runs_before
from graphmend_lint.analysis.module_attributes import constructor_of
from graphmend_lint.analysis.recurrent_modules import (
    RECURRENT_MODULES,
    SUBMODULE_WALKERS,
    recurrent_layers,
    recurrent_layers_within,
    recurrent_self,
)
from graphmend_lint.analysis.values import enclosing_class
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.dynamo_setting import enable_setting_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption, switch_example, with_switch
from graphmend_lint.rules.gb_types import gb_types

#: A file that builds one spells its name somewhere (also as ``getattr(nn, "lstm".upper())``): a cheap
#: filter before every module read of the traced code is looked up.
_SPELLS_A_LAYER = re.compile("lstm|gru|rnn", re.IGNORECASE)
ALLOW_RNN_HINT = Fix.advice(
    "no source fix: `torch._dynamo.config.allow_rnn = True` lets Dynamo trace RNN modules (measured: "
    "no break on torch 2.13); it is process-wide and experimental",
)
ALLOW_RNN_FIX = (
    "Set `torch._dynamo.config.allow_rnn = True` after the imports: Dynamo then traces the RNN module "
    "(process-wide)"
)
_MODULE = (
    "import torch\nfrom torch import nn\n\n\nclass Encoder(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.rnn = {layer}\n\n"
    "    def forward(self, x: torch.Tensor):\n        out, _ = self.rnn(x)\n        return out\n\n\n"
    "model = torch.compile(Encoder())\n"
)


#: A layer built by name, ``getattr(nn, rnn_type)(...)``, with ``rnn_type`` passed down from ``{default}``.
_BY_NAME = (
    "import torch\nfrom torch import nn\n\n\nclass Encoder(nn.Module):\n"
    "    def __init__(self, rnn_type: str = {default}):\n        super().__init__()\n"
    "        self.rnn = getattr(nn, rnn_type)(4, 4)\n\n"
    "    def forward(self, x: torch.Tensor):\n        return self.rnn(x)[0]\n\n\n"
    "model = torch.compile(Encoder({argument}))\n"
)


def _may_name_a_module(node: nodes.NodeNG) -> bool:
    """A read of ``self.<attr>``, of a name, or of an item of one (``self.layers[0]``): how code reaches a
    module (a cheap filter before the lookup). An indexed one is the container of the module, not the
    module, and a name with an attribute read on it is ``self`` far more often than a layer."""
    parent = node.parent
    if isinstance(parent, nodes.Subscript) and parent.value is node:
        return False
    while isinstance(node, nodes.Subscript):  # ``self.rnns["fwd"]``, ``layers[0]``: the container's spelling
        if node.ctx is not Context.Load:
            return False
        node, parent = node.value, node
    if isinstance(node, nodes.Attribute):
        return isinstance(node.expr, nodes.Name) and node.expr.name == "self"
    return isinstance(node, nodes.Name) and not (isinstance(parent, nodes.Attribute) and parent.expr is node)


def _position(node: nodes.NodeNG) -> tuple[int, int]:
    return node.lineno or 0, node.col_offset or 0


def _packs_sequences(ctx: RuleContext) -> bool:
    """Traced code builds a ``PackedSequence`` (``pack_padded_sequence``, ``pack_sequence``...).

    With ``allow_rnn`` an LSTM on a packed sequence breaks inside torch's own
    ``nn/modules/rnn.py`` instead, and ``pad_packed_sequence`` breaks in the
    file (torchaudio's Tacotron2 encoder, measured): the break moves, so no fix.
    """
    return any(
        (ctx.values.qualified_name(call.func) or "").startswith("torch.nn.utils.rnn.pack")
        for call, _ in ctx.traced_nodes(nodes.Call)
    )


class RecurrentModuleCall(Rule):
    """## What it does
    Flags calls of `nn.LSTM`, `nn.GRU` and `nn.RNN` modules, and of their
    subclasses, in code that `torch.compile` traces: a `self.<attr>`, a name
    (a loop's or a comprehension's variable too: `[rnn(x)[0] for rnn in
    self.rnns]`) or an item of a `ModuleList` / `ModuleDict`
    (`self.rnns["fwd"](x)`, `self._modules["rnn"](x)`) that
    can only hold such layers, wherever the file builds them and however it
    stores them (`self.rnn = ...`, `self.add_module("rnn", ...)`,
    `setattr(self, "rnn", ...)`; in the class, in a factory function, from a class chosen
    at run time, `nn.LSTM if cell == "lstm" else nn.GRU`, or passed to the
    constructor). A layer built by name, `getattr(nn, rnn_type)(...)`
    (torchaudio's SQUIM, asteroid), counts when every value the file gives
    `rnn_type` (defaults, constructor arguments, a config class's attribute)
    names one. A module that may also be something else (`nn.Identity()` when
    a flag is off) is not flagged. The cells (`nn.LSTMCell`, ...) are traced and are
    not flagged. Only the first reference to such a module on each path
    through a function is reported (each branch's first, unless one before
    the branch ran), call or not (`self.rnn.flatten_parameters()`, `if self.rnn is
    not None`, `self.lstm.input_size`): Dynamo refuses the module where it
    first reads it (measured, torch 2.13: GB0014 at cleanrl-style
    `x.reshape((-1, b, self.lstm.input_size))`, lines before the call) and
    gives up on the function there, so it never reaches the others. A
    parameter given such a layer by one of its call sites counts (crnn's
    `data_parallel(model, input, ngpu)`, given the LSTM and then a Linear:
    Dynamo refuses the LSTM at `model(input)`), and so does a method that
    walks every submodule of a module holding one anywhere in its tree
    (`self.eval()`, `next(self.parameters())`, `self.modules()`,
    `self.named_children()`...: GB0014 at the call, measured on torch 2.13);
    after such a walk Dynamo resumes, so later reads are reported too.

    ## Why is this bad
    Dynamo refuses to trace the fused RNN modules unless
    `torch._dynamo.config.allow_rnn` is set (GB0014, "Attempted to wrap RNN,
    GRU, or LSTM"). The refusal is not a simple split: Dynamo gives up on the
    whole calling function and runs it eagerly (measured, torch 2.13: zero
    graphs for a `forward` that calls an `nn.GRU`).

    ## Example
    ```python
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(16, 16, batch_first=True)

        def forward(self, x):
            out, _ = self.rnn(x)
            return out
    ```

    ## Use instead
    Opt in, once, after the imports (or compile around the RNN: the layers
    before and after it):
    ```python
    torch._dynamo.config.allow_rnn = True
    ```

    ## Fix safety
    The fix writes that line after the module's imports (adding
    `import torch` when the module only has `from torch import ...`); every
    finding in the file shares the one line. **Unsafe**:

    * eagerly nothing changes: the setting is read by Dynamo only;
    * it is process-wide: every function compiled after the module is
      imported traces its RNN modules too, not only the flagged one (in a
      library module, e.g. under `--scope modules`, that means every program
      importing it: there, prefer setting it where the application compiles);
    * importing the module now imports `torch._dynamo` (about 2.4 s on the
      2-core dev VM, torch 2.13 CPU), which the first `torch.compile` call
      would otherwise pay;
    * under `torch.compile` the RNN runs as traced ops instead of the fused
      eager kernel (equal outputs within float rounding, measured on the
      corpus' LSTM/GRU/RNN programs, torch 2.13 CPU);
    * the calling function, which Dynamo used to run eagerly as a whole, is
      now traced, so whatever else in it Dynamo cannot handle surfaces
      there. Measured on one corpus program: a cache initialiser calling
      `torch._dynamo.mark_static_address` inside the compiled `forward` now
      raises `AssertionError` ("Attempt to trace forbidden callable") under
      compile, where it used to run eagerly.

    Where traced code packs its sequences (`nn.utils.rnn.pack_padded_sequence`
    and friends) there is no fix: Dynamo then breaks inside torch's own RNN
    code and at `pad_packed_sequence` instead (measured on torchaudio's
    Tacotron2 encoder), so the break would only move.

    A file that already sets `torch._dynamo.config.allow_rnn = True` at
    module level, or the rule option `allow-rnn = true`, is not flagged.
    """

    code = "GM501"
    name = "recurrent-module-call"
    summary = "calling `nn.LSTM` / `nn.GRU` / `nn.RNN` makes Dynamo run the caller eagerly"
    dynamo_gb = gb_types("GB0014")
    options = {"allow-rnn": RuleOption(False, "the program turns `allow_rnn` on somewhere the linter cannot see")}
    valid = (
        _MODULE.format(layer="nn.LSTMCell(4, 4)"),
        with_switch(_MODULE.format(layer="nn.GRU(4, 4)"), ALLOW_RNN),
        _MODULE.format(layer="nn.GRU(4, 4)").replace("torch.compile(Encoder())", "Encoder()"),
        _BY_NAME.format(default='"LSTMCell"', argument=""),
        # the caller may pass anything: which layer it is, the file does not say
        _BY_NAME.format(default='"LSTM"', argument="rnn_type=input()"),
        # a layer that may be something else: the file cannot say
        _MODULE.format(layer="nn.LSTM(4, 4) if input() else nn.Identity()"),
        # a constant position picks one module of a list spelled out: here the linear layer
        _MODULE.format(layer="nn.ModuleList([nn.Linear(4, 4), nn.GRU(4, 4)])").replace("self.rnn(x)", "self.rnn[0](x)"),
    )
    invalid = (
        switch_example(_MODULE.format(layer="nn.LSTM(4, 4, batch_first=True)"), ALLOW_RNN),
        switch_example(_MODULE.format(layer="torch.nn.GRU(4, 4)"), ALLOW_RNN),
        switch_example(_BY_NAME.format(default='"LSTM"', argument=""), ALLOW_RNN),
        switch_example(_BY_NAME.format(default='"GRU"', argument="'GRU'"), ALLOW_RNN),
        # the name upper-cased before use (asteroid's SingleRNN)
        switch_example(
            _BY_NAME.format(default='"lstm"', argument="").replace(
                "        super().__init__()\n", "        super().__init__()\n        rnn_type = rnn_type.upper()\n"
            ),
            ALLOW_RNN,
        ),
        # a shared base of the file's layers: `super()` there is the layer (pytorch-forecasting's zero-length RNN)
        switch_example(
            _MODULE.format(layer="LSTM(4, 4)").replace(
                "class Encoder",
                "class ZeroSafe(nn.RNNBase):\n    def forward(self, x, hx=None):\n        return super().forward(x, hx)\n"
                "\n\nclass LSTM(ZeroSafe, nn.LSTM):\n    pass\n\n\nclass Encoder",
            ),
            ALLOW_RNN,
        ),
        # ... and here the GRU, as in a `Sequential` spelled out
        switch_example(
            _MODULE.format(layer="nn.ModuleList([nn.Linear(4, 4), nn.GRU(4, 4)])").replace("self.rnn(x)", "self.rnn[1](x)"),
            ALLOW_RNN,
        ),
        switch_example(
            _MODULE.format(layer="nn.Sequential(nn.Linear(4, 4), nn.GRU(4, 4))").replace("self.rnn(x)", "self.rnn[1](x)"),
            ALLOW_RNN,
        ),
        # a loop over layers appended in turn with norms reaches the LSTM on some turn (StyleTTS2)
        switch_example(
            "import torch\nfrom torch import nn\n\n\nclass Encoder(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.blocks = nn.ModuleList()\n        for _ in range(2):\n"
            "            self.blocks.append(nn.LSTM(4, 4))\n            self.blocks.append(nn.LayerNorm(4))\n\n"
            "    def forward(self, x: torch.Tensor):\n        for block in self.blocks:\n"
            "            if isinstance(block, nn.LayerNorm):\n                x = block(x)\n            else:\n"
            "                x, _ = block(x)\n        return x\n\n\nmodel = torch.compile(Encoder())\n",
            ALLOW_RNN,
        ),
        # the name from a config class's attribute (pytorch-forecasting, ESPnet)
        switch_example(
            _BY_NAME.format(default="None", argument="Config()")
            .replace("class Encoder", 'class Config:\n    rnn_type = "GRU"\n\n\nclass Encoder')
            .replace("rnn_type: str = None", "config")
            .replace("getattr(nn, rnn_type)", "getattr(nn, config.rnn_type)"),
            ALLOW_RNN,
        ),
        Example(  # torch is imported only inside the function: no module-level line can name it
            "def build():\n    import torch\n    from torch import nn\n\n    class Encoder(nn.Module):\n"
            "        def __init__(self):\n            super().__init__()\n            self.rnn = nn.GRU(4, 4)\n\n"
            "        def forward(self, x):\n            return self.rnn(x)[0]\n\n    return torch.compile(Encoder())\n"
        ),
        switch_example(
            "import torch\nfrom torch import nn\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    rnn = nn.RNN(4, 4)\n    return rnn(x)[0]\n",
            ALLOW_RNN,
        ),
        # built by a base class's ``__init__``, called in the subclass's ``forward``
        switch_example(
            _MODULE.format(layer="nn.LSTM(4, 4)")
            .replace("    def forward", "\nclass Tagger(Encoder):\n    def forward")
            .replace("torch.compile(Encoder())", "torch.compile(Tagger())"),
            ALLOW_RNN,
        ),
        # the values of a ``ModuleDict`` built by a dict comprehension, walked with ``.items()``
        switch_example(
            _MODULE.format(layer='nn.ModuleDict({f"rnn{i}": nn.GRU(4, 4) for i in range(2)})').replace(
                "        out, _ = self.rnn(x)\n        return out",
                "        for _, layer in self.rnn.items():\n            x, _ = layer(x)\n        return x",
            ),
            ALLOW_RNN,
        ),
        # a walk over every submodule reaches the LSTM a submodule of the file holds (GB0014 at the call)
        switch_example(
            _MODULE.format(layer="nn.LSTM(4, 4)").replace(
                "        out, _ = self.rnn(x)\n        return out", "        return x.to(next(self.parameters()).dtype)"
            ),
            ALLOW_RNN,
        ),
        # reported where Dynamo refuses it: its first read, before the call (cleanrl's PPO-LSTM agent)
        switch_example(
            _MODULE.format(layer="nn.LSTM(4, 4)").replace(
                "        out, _ = self.rnn(x)", "        x = x.reshape(-1, 1, self.rnn.input_size)\n        out, _ = self.rnn(x)"
            ),
            ALLOW_RNN,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if setting_on(ctx.values, ctx.options, ALLOW_RNN) or not _SPELLS_A_LAYER.search(ctx.analysis.source.text):
            return
        resolution = ast_resolution(ctx.analysis)
        reads: dict[nodes.NodeNG, list[tuple[nodes.NodeNG, frozenset[str], TracedFunction]]] = {}
        for reference, traced in ctx.traced_nodes(nodes.Attribute, nodes.Name, nodes.Subscript):
            layers = _layers_read(ctx, resolution, reference)
            if layers:
                reads.setdefault(reference.frame(), []).append((reference, layers, traced))
        for found in reads.values():
            found.sort(key=lambda read: _position(read[0]))
            for index, (reference, layers, traced) in enumerate(found):
                skipping = [earlier for earlier, _, _ in found[:index] if _walked_module(earlier) is None]
                if any(runs_before(earlier, reference) for earlier in skipping):
                    continue  # Dynamo gave up on the function at that earlier read (after a walk it resumes)
                layer = " or ".join(f"`nn.{name.rsplit('.', 1)[-1]}`" for name in sorted(layers))
                called = isinstance(reference.parent, nodes.Call) and reference.parent.func is reference
                if _walked_module(reference) is not None:
                    message = (
                        f"`{reference.as_string()}()` walks the submodules, among them an {layer}, in compiled "
                        "code: Dynamo refuses RNN modules and breaks the graph at the call"
                    )
                else:
                    message = (
                        f"{'calling' if called else 'using'} an {layer} in compiled code: Dynamo refuses RNN "
                        "modules and runs the caller eagerly"
                    )
                fix = None if _packs_sequences(ctx) else enable_setting_fix(ctx.analysis, ALLOW_RNN, ALLOW_RNN_FIX)
                yield ctx.report(reference, message, traced, fix or ALLOW_RNN_HINT)


def _layers_read(ctx: RuleContext, resolution: AstResolution, reference: nodes.NodeNG) -> frozenset[str]:
    """The recurrent classes the module *reference* reads is an instance of (empty when it may be anything
    else): the class body's own constructor, or what the resolver says the object is. In a method of a
    recurrent layer's own class, ``self`` and ``super()`` are the layer (``super().forward(x)`` in ``class
    BLSTM(nn.LSTM)``): Dynamo refuses it there too when the method runs as a frame of its own."""
    walked = _walked_module(reference)
    if walked is not None:
        klass = enclosing_class(reference) if isinstance(walked, nodes.Name) and walked.name == "self" else None
        if klass is not None and klass.name in resolution.index.classes:
            return recurrent_layers_within(resolution, klass.name)
        return frozenset()
    if isinstance(reference, nodes.Name) and reference.name in {"self", "super"}:
        klass = enclosing_class(reference)
        if klass is None or klass.name not in resolution.index.classes:
            return frozenset()
        if reference.name == "super" and not (isinstance(reference.parent, nodes.Call) and reference.parent.func is reference):
            return frozenset()
        return recurrent_self(resolution, klass.name)
    if not _may_name_a_module(reference):
        return frozenset()
    constructor = constructor_of(ctx.values, reference)
    if constructor is not None and constructor.startswith("torch."):
        # the torch class the class body builds it with wins: a ``ModuleList`` a loop walks is no layer
        return frozenset({constructor}) if constructor in RECURRENT_MODULES else frozenset()
    return recurrent_layers(resolution, reference, some=_takes_turns(reference))


def _walked_module(reference: nodes.NodeNG) -> nodes.NodeNG | None:
    """The module ``self.parameters()``, ``self.eval()``... walks, when *reference* is such a method's callee."""
    parent = reference.parent
    if (
        isinstance(reference, nodes.Attribute)
        and reference.attrname in SUBMODULE_WALKERS
        and isinstance(parent, nodes.Call)
        and parent.func is reference
    ):
        return reference.expr
    return None


def _takes_turns(reference: nodes.NodeNG) -> bool:
    """*reference* holds one of several known modules at a time: a loop's target (one per turn), or a parameter
    (one per call site: crnn's ``data_parallel(model, input, ngpu)`` is given the LSTM and then a Linear, and
    Dynamo refuses the LSTM at ``model(input)`` on the turn it is given)."""
    return isinstance(reference, nodes.Name) and (bool(loops_binding(reference)) or is_parameter(reference))
