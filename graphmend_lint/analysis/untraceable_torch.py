"""Calls into torch that Dynamo refuses to trace, whatever their arguments.

Each entry was measured on torch 2.13 (CPU) with the id Dynamo logs:

* ``torch._dynamo.graph_break()``: an explicit break (GB0025);
* functions of torch modules Dynamo skips (``MOD_SKIPLIST`` in
  ``torch/_dynamo/trace_rules.py``: ``torch.jit``, ``torch.random``,
  ``torch.nn.utils.rnn``, ``torch.utils.data``...) that it has no handler
  for: ``pack_padded_sequence`` / ``pad_packed_sequence``,
  ``torch.jit.isinstance`` (torchaudio's MVDR), ``torch.jit.fork`` /
  ``wait``, ``torch.get_rng_state`` / ``set_rng_state`` (also through
  ``torch.random``), ``torch.typename`` and
  ``torch.utils.data.get_worker_info`` (each measured GB0007; the same
  modules' ``torch.jit.annotate``, ``is_scripting``, ``torch.seed`` and
  ``torch.utils.checkpoint.checkpoint`` have handlers and do not break);
* ``torch.autograd.grad``: not traced while ``trace_autograd_ops`` is off, the
  default (GB9186);
* ``t.backward()`` on a tensor: not traced while ``trace_autograd_ops`` is off
  (GB0123; traced once it is on);
* ``t.apply_(fn)``, ``t.map_(other, fn)``, ``t.map2_(a, b, fn)`` on a tensor: the op
  would call a Python function per element, and Dynamo cannot pass the function
  to it ("Failed to convert args/kwargs to proxy", GB0055);
* process settings and host queries: ``torch.set_num_threads``, ``torch.save``,
  ``torch.hub.get_dir``, ``torch.get_default_device``, ``torch.result_type``
  (GB0007, with GB0208 for the last two), ``torch.cuda.device_count``,
  ``torch.cuda.memory_allocated``, ``torch.get_num_threads``,
  ``torch.get_float32_matmul_precision``, the backend checks (``torch.backends.mps.is_available``,
  ``torch.backends.cudnn.is_available``, ``torch.backends.cuda.flash_sdp_enabled``...) (GB0208;
  ``torch.backends.mkldnn.is_available``: GB0007), ``torch.is_inference_mode_enabled``
  (GB0046), ``torch.autograd.set_detect_anomaly`` (GB0008), and
  ``torch.testing.assert_close``, which compares on the host (GB0170), and
  ``torch._assert`` of a tensor condition (GB0033; of a Python bool it traces);
* ``t.retain_grad()`` (GB0108), ``t.is_pinned()`` (a bool out of a torch op, GB0208),
  ``t.untyped_storage()`` (GB0156), ``t.to_sparse()`` (GB0015, GB0277), ``t.resize_(...)`` (GB0126)
  and ``t.resize_as_(other)`` (GB0127) on a tensor;
* ``torch.autograd.backward``: in a file Dynamo skips, whatever the settings
  (GB0007);
* ``with torch.backends.cudnn.flags(...)``, ``with torch.backends.cuda.sdp_kernel(...)`` (gpt-fast's decode
  loop), ``with torch.device(...)``, ``with torch.autograd.detect_anomaly():`` and ``with
  torch.random.fork_rng():``: unsupported context managers (GB0142, and GB0208 on the same line for
  the two backend switches and ``fork_rng``, GB0008 for anomaly detection);
* a call of a function of this file decorated ``@torch.compiler.disable`` or
  ``@torch._dynamo.disable`` (or an alias of them, e.g. timm's
  ``disable_compiler = getattr(getattr(torch, "compiler", None), "disable", None) or nullwrap``,
  measured GB0098), also with ``recursive=`` or ``reason=`` (``recursive=False``:
  GB0099), and a call of what ``torch.compiler.disable(fn)`` returned: bound once
  to a name, assigned to a ``self`` attribute, or called on the spot
  (``torch.compiler.disable(fn)(x)``, which adds GB0007): Dynamo runs it eagerly
  between two graphs (GB0098; GB0099 when the call is inlined from another frame);
* ``module.register_forward_hook(...)`` (and the other ``nn.Module`` hook
  registrations): torch's ``RemovableHandle`` sets an attribute on a type,
  which Dynamo does not support (GB0467, measured; transformers' output
  capturing registers its hooks this way).

:func:`allow_in_graph_callee` finds calls of functions marked
``allow_in_graph``: Dynamo runs them on fake tensors, so a body that needs a
tensor's data breaks at the call (GB0033, GB0036 for a data-dependent output
size; measured, torch 2.13), and again inside when the body later runs
eagerly as a frame of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.astroid_tree import def_position
from graphmend_lint.analysis.resolve import SPARSE_CONVERSIONS
from graphmend_lint.analysis.module_attributes import constructor_of
from graphmend_lint.analysis.values import Kind, ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.analysis.walk import descendants

TRACE_AUTOGRAD_OPS = "trace_autograd_ops"
KL_DIVERGENCE = ("torch.distributions.kl_divergence", "torch.distributions.kl.kl_divergence")
#: Distributions for which ``kl_divergence`` finds a single registered pair, so Dynamo traces its ``min()``
#: (measured on torch 2.13: Categorical, OneHotCategorical, Laplace and Normal-Laplace trace; Normal,
#: Independent, Bernoulli, Beta, Gamma and Dirichlet pairs, which also match the exponential-family
#: formula, log GB0059).
_SINGLE_KL_MATCH = frozenset(
    f"torch.distributions.{name}" for name in ("Categorical", "OneHotCategorical", "Laplace")
)
#: torch function -> (what the message calls it, why Dynamo stops, what to do instead).
_REFUSED_CALLS: dict[str, tuple[str, str, str]] = {
    "torch._dynamo.graph_break": (
        "`torch._dynamo.graph_break()`",
        "it asks for a graph break",
        "remove it once the break it was placed for is fixed",
    ),
    "torch.autograd.grad": (
        "`torch.autograd.grad`",
        "Dynamo does not trace it while `torch._dynamo.config.trace_autograd_ops` is off (the default)",
        "compute the gradient outside the compiled function, or use `torch.func.grad`",
    ),
    "torch.autograd.backward": (
        "`torch.autograd.backward`",
        "Dynamo skips the file it lives in",
        "call `.backward()` on the result outside the compiled function",
    ),
    "torch.nn.init.trunc_normal_": (
        "`nn.init.trunc_normal_`",
        "it reads its bounds with `.item()` and resamples until no value falls outside them",
        "initialise the weights outside the compiled function (in `__init__`, or before compiling)",
    ),
    **dict.fromkeys(
        KL_DIVERGENCE,
        (
            "`kl_divergence`",
            "its registry picks the formula with `min()` over the registered pairs that match, the first time "
            "a pair of types is seen, and some formulas (Binomial's) branch on tensor data",
            "write the pair's closed form (two Normals: `torch.log(q.scale / p.scale) + (p.scale ** 2 + "
            "(p.loc - q.loc) ** 2) / (2 * q.scale ** 2) - 0.5`), or call `kl_divergence` once eagerly on the "
            "same types before the first compiled call",
        ),
    ),
}
#: ``t.backward()`` on a tensor, refused like ``torch.autograd.grad`` while ``trace_autograd_ops`` is off.
_BACKWARD = (
    "`.backward()`",
    "Dynamo does not trace it while `torch._dynamo.config.trace_autograd_ops` is off (the default)",
    "return the loss and call `.backward()` on it outside the compiled function",
)
_PYTHON_CALLBACK = (
    "Dynamo cannot pass the Python function to the op",
    "write the function with tensor operations (`torch.where`, `clamp`...) on the whole tensor",
)
_RESIZE = (
    "Dynamo does not support resizing a tensor in place",
    "allocate a tensor of the size needed (`x.new_ones(other.shape)`, `torch.zeros(n, k)`)",
)
#: Tensor methods Dynamo refuses, measured on torch 2.13 -> (why, what to do instead): the per-element Python
#: callbacks (GB0055), ``retain_grad`` (GB0108), ``is_pinned`` (GB0208), ``is_inference`` (GB0045, also on a frame
#: input: nomic's rotary cache check), ``untyped_storage`` (GB0156),
#: ``to_sparse`` and the other sparse conversions (GB0277 at the call, measured for ``to_sparse_csr`` too), ``resize_`` (GB0126) and ``resize_as_`` (GB0127).
_REFUSED_TENSOR_METHODS: dict[str, tuple[str, str]] = {
    "apply_": _PYTHON_CALLBACK,
    "map_": _PYTHON_CALLBACK,
    "map2_": _PYTHON_CALLBACK,
    "retain_grad": (
        "`retain_grad()` does not work with the compiled graph's autograd",
        "return the intermediate and read its gradient outside, or register a hook outside the compiled function",
    ),
    "is_pinned": (
        "the op returns a Python bool, which cannot be a graph output",
        "check pinning where the tensor is made, outside the compiled function",
    ),
    "is_inference": (
        "Dynamo refuses to trace `is_inference()` (GB0045)",
        "decide outside the compiled function (rotary caches: rebuild the cache there), or track the mode in a flag",
    ),
    "untyped_storage": (
        "Dynamo has no handler for a tensor's storage",
        "use `x.numel() * x.element_size()` for a size, or inspect storage outside the compiled function",
    ),
    **dict.fromkeys(
        SPARSE_CONVERSIONS,
        (
            "torch.compile does not support sparse tensors",
            "keep the tensor dense inside the compiled function, or convert outside it",
        ),
    ),
    "resize_": _RESIZE,
    "resize_as_": _RESIZE,
}
#: Refused methods no other object code meets has: a receiver of unknown kind is a tensor (nomic's rotary
#: ``self._cos_cached``, ``None`` until the first call fills it in, checked with ``is None`` first).
_TENSOR_ONLY_NAMES = frozenset({"is_inference"})
_SKIPPED_MODULE = "Dynamo skips the torch module it lives in"
_RNG_STATE = "read or restore the RNG state outside the compiled function"
_PACKING = "run the recurrent part outside the compiled function, or pad and mask instead of packing"
_SETTING = "read or change it once, outside the compiled function, and pass what the code needs in"
_VARIABLE = (
    "use the tensor itself (`Variable` has been a no-op wrapper since PyTorch 0.4), `.detach()`ed if it must "
    "not carry autograd history"
)
#: Functions of skipped torch modules without a Dynamo handler (GB0007, measured) -> what to do instead.
_SKIPPED_FUNCTIONS: dict[str, str] = {
    "torch.nn.utils.rnn.pack_padded_sequence": _PACKING,
    "torch.nn.utils.rnn.pad_packed_sequence": _PACKING,
    "torch.jit.isinstance": "use the builtin `isinstance` for a plain type; a container type such as "
    "`List[int]` needs checking outside the compiled function",
    "torch.jit.fork": "call the function directly: compiled code gains nothing from TorchScript futures",
    "torch.jit.wait": "call the function directly: compiled code gains nothing from TorchScript futures",
    "torch.get_rng_state": _RNG_STATE,
    "torch.random.get_rng_state": _RNG_STATE,
    "torch.set_rng_state": _RNG_STATE,
    "torch.random.set_rng_state": _RNG_STATE,
    "torch.typename": "use `type(x).__name__`, or compute the name outside the compiled function",
    "torch.utils.data.get_worker_info": "read it in the data pipeline, outside the compiled function",
    "torch.autograd.Variable": _VARIABLE,
    "torch.autograd.variable.Variable": _VARIABLE,
    "torch.set_num_threads": _SETTING,
    "torch.save": "save outside the compiled function (return the tensor, then save it)",
    "torch.hub.get_dir": _SETTING,
    "torch.get_default_device": _SETTING,
    "torch.result_type": "use `torch.promote_types(a.dtype, b.dtype)`, which traces",
    "torch.autograd.set_detect_anomaly": _SETTING,
    "torch.backends.mkldnn.is_available": _SETTING,
}
#: Host queries: torch functions that return a Python value Dynamo cannot put in the graph ("torch.* op
#: returned non-Tensor", GB0208; GB0046 for the inference-mode query), measured on torch 2.13. Their
#: neighbours ``torch.set_default_dtype``, ``torch.set_float32_matmul_precision``,
#: ``torch.is_autocast_enabled`` and ``torch.finfo`` trace; so do ``torch.cuda.is_available()``,
#: ``torch.xpu.is_available()``, ``torch.cuda.is_initialized()``, ``torch.get_default_dtype()``,
#: ``torch.is_grad_enabled()``, ``torch.are_deterministic_algorithms_enabled()`` and the flag
#: ``torch.backends.cudnn.enabled``. The backend availability checks do not (diffusers' EDM Euler scheduler
#: picks its sigma dtype with ``torch.backends.mps.is_available()``); ``torch.backends.mkldnn.is_available``
#: lives in a skipped file (GB0007, in ``_SKIPPED_FUNCTIONS``).
_HOST_QUERIES = frozenset(
    {
        "torch.cuda.device_count", "torch.cuda.memory_allocated", "torch.get_num_threads",
        "torch.get_float32_matmul_precision", "torch.is_inference_mode_enabled", "torch.get_num_interop_threads",
        "torch.cuda.is_bf16_supported", "torch.backends.cudnn.is_available", "torch.backends.mps.is_available",
        "torch.backends.mps.is_built", "torch.backends.cuda.is_built", "torch.backends.openmp.is_available",
        "torch.backends.mkl.is_available", "torch.backends.cuda.flash_sdp_enabled",
        "torch.backends.cuda.mem_efficient_sdp_enabled", "torch.backends.cuda.math_sdp_enabled",
    }
)  # fmt: skip
#: Context managers Dynamo does not support (GB0142; the backend switches also log GB0208 on the same line),
#: measured on torch 2.13 -> what to do instead. ``torch.nn.attention.sdpa_kernel``, ``autocast``, ``no_grad``
#: and ``inference_mode`` are supported.
_REFUSED_CONTEXTS: dict[str, str] = {
    "torch.backends.cudnn.flags": "set the flags outside the compiled function (they only matter on CUDA)",
    "torch.backends.cuda.sdp_kernel": (
        "use `torch.nn.attention.sdpa_kernel(...)`, which Dynamo traces, or choose the kernel outside the "
        "compiled function"
    ),
    "torch.device": "pass `device=` to the factories, or enter the device context outside the compiled function",
    "torch.autograd.detect_anomaly": "debug anomalies in eager mode; Dynamo skips the context (GB0008 too)",
    "torch.random.fork_rng": "fork the RNG outside the compiled function, or pass a `torch.Generator` to the ops",
}
#: ``nn.Module`` methods that register a hook and return a ``RemovableHandle`` (GB0467).
_MODULE_HOOK_REGISTRATIONS = frozenset(
    {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
     "register_full_backward_pre_hook"}
)  # fmt: skip
_DISABLE_DECORATORS = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
#: ``@torch.compiler.disable(recursive=False)`` logs GB0099 at the call, ``recursive=True`` and ``reason=`` GB0098.
_MEASURED_DISABLE_KEYWORDS = frozenset({"recursive", "reason"})
#: Dynamo calls such a function on fake tensors while tracing and puts the call in the graph as one node.
_ALLOW_IN_GRAPH = frozenset({"torch.compiler.allow_in_graph", "torch._dynamo.allow_in_graph"})


@dataclass(frozen=True)
class RefusedCall:
    """A call Dynamo will not trace, and what to say about it."""

    call: nodes.Call
    label: str
    reason: str
    advice: str
    autograd: bool = False  # only breaks while ``trace_autograd_ops`` is off
    callee: str = ""  # the torch function's qualified name, when the call is one


def _backward_of_a_tensor(values: ValueOracle, receiver: nodes.NodeNG) -> bool:
    """``receiver.backward()`` runs autograd: *receiver* is a tensor, or a value of unknown kind in a file none
    of whose classes defines a ``backward`` it could call (decision-transformer's ``loss = self.loss_fn(...)``
    with the loss function a lambda its trainer is built with; an ``autograd.Function``'s ``backward`` is
    autograd's to call, never ``obj.backward()``)."""
    kind = values.kind(receiver)
    if kind is Kind.TENSOR:
        return True
    return kind is Kind.UNKNOWN and not _local_backward_methods(values.module)


def _local_backward_methods(module: nodes.Module) -> bool:
    """A class of the file defines ``backward`` as an ordinary method (not a ``staticmethod`` of an
    ``autograd.Function``, which only autograd calls)."""
    return any(
        method.name == "backward" and not _is_staticmethod(method)
        for klass in descendants(module, nodes.ClassDef)
        for method in klass.mymethods()
    )


def _built_by(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """The class *node* is an instance of: a constructor call's callee, or what :func:`constructor_of` proves
    for a name or a ``self`` attribute."""
    return values.qualified_name(node.func) if isinstance(node, nodes.Call) else constructor_of(values, node)


def _is_staticmethod(method: nodes.FunctionDef) -> bool:
    decorators = method.decorators.nodes if method.decorators else []
    return any(isinstance(decorator, nodes.Name) and decorator.name == "staticmethod" for decorator in decorators)


def refused_call(values: ValueOracle, node: nodes.NodeNG) -> RefusedCall | None:
    """What makes Dynamo refuse *node*, when it is such a call."""
    if not isinstance(node, nodes.Call):
        return None
    name = values.qualified_name(node.func) or ""
    if name in KL_DIVERGENCE and any(_built_by(values, argument) in _SINGLE_KL_MATCH for argument in node.args):
        return None
    if name in _REFUSED_CALLS:
        label, reason, advice = _REFUSED_CALLS[name]
        return RefusedCall(node, label, reason, advice, autograd=name == "torch.autograd.grad", callee=name)
    if name in _HOST_QUERIES:
        return RefusedCall(node, f"`{name}()`", "it returns a Python value Dynamo cannot keep in the graph", _SETTING, callee=name)
    if name == "torch._assert" and node.args and values.is_tensor(node.args[0]):
        return RefusedCall(
            node, "`torch._assert` of a tensor condition", "it reads the condition's truth on the host",
            "use `torch._assert_async(cond)`, which checks on the device", callee=name,
        )
    if name == "torch.testing.assert_close":
        return RefusedCall(
            node, "`torch.testing.assert_close`", "it compares the tensors on the host",
            "check outside the compiled function, or keep the check on the device (`torch._assert_async`)",
            callee=name,
        )
    if name in _SKIPPED_FUNCTIONS:
        label = f"`{name.removeprefix('torch.nn.utils.rnn.')}`"
        return RefusedCall(node, label, _SKIPPED_MODULE, _SKIPPED_FUNCTIONS[name], callee=name)
    if isinstance(node.func, nodes.Attribute) and node.func.attrname == "backward" and _backward_of_a_tensor(values, node.func.expr):
        return RefusedCall(node, *_BACKWARD, autograd=True)
    if (
        isinstance(node.func, nodes.Attribute)
        and node.func.attrname in _REFUSED_TENSOR_METHODS
        and (values.is_tensor(node.func.expr) or _only_tensors_have(values, node.func))
    ):
        return RefusedCall(node, f"`.{node.func.attrname}()` on a tensor", *_REFUSED_TENSOR_METHODS[node.func.attrname])
    if name in _REFUSED_CONTEXTS and _is_with_item(node):
        return RefusedCall(node, f"`with {name}(...)`", "Dynamo does not support this context manager", _REFUSED_CONTEXTS[name])
    if isinstance(node.func, nodes.Attribute) and node.func.attrname in _MODULE_HOOK_REGISTRATIONS:
        return RefusedCall(
            node,
            f"`.{node.func.attrname}(...)`",
            "the handle it returns sets an attribute on a type, which Dynamo does not support",
            "register the hook once, outside the compiled function",
        )
    disabled = _disabled_callee(values, node)
    if disabled is not None:
        return RefusedCall(
            node,
            f"`{disabled}` (disabled with `torch.compiler.disable`)",
            "Dynamo runs it eagerly between two graphs",
            "call it outside the compiled function, or drop the decorator once its body traces",
        )
    return None


def _only_tensors_have(values: ValueOracle, func: nodes.Attribute) -> bool:
    """``r.is_inference()`` on an ``r`` of unknown kind: only a tensor has the method."""
    return func.attrname in _TENSOR_ONLY_NAMES and values.kind(func.expr) is Kind.UNKNOWN


def _is_with_item(call: nodes.Call) -> bool:
    parent = call.parent
    return isinstance(parent, nodes.With) and any(expression is call for expression, _ in parent.items)


def _sole_binding(call: nodes.Call) -> nodes.NodeNG | None:
    """The one binding of the name *call* calls (``f(...)``, ``self.m(...)``), else ``None``."""
    func = call.func
    candidates: list[nodes.NodeNG] = []
    if isinstance(func, nodes.Name):
        try:
            _, candidates = func.lookup(func.name)
        except Exception:  # astroid lookups can fail on odd code: no provable callee
            return None
    elif isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == "self":
        klass = enclosing_class(call)
        candidates = list(klass.locals.get(func.attrname, ())) if klass is not None else []
    return candidates[0] if len(candidates) == 1 else None


def _disabled_callee(values: ValueOracle, call: nodes.Call) -> str | None:
    """The name of what *call* calls when Dynamo skips it, else ``None``.

    A function of this file decorated to be skipped (``f(...)``, ``self.m(...)``), or the wrapper
    ``torch.compiler.disable(fn)`` returns, called on the spot, through a name bound once to it,
    or through a ``self`` attribute every assignment of which is one.
    """
    func = call.func
    if isinstance(func, nodes.Call) and _disables(values, func):
        return func.args[0].as_string()
    binding = _sole_binding(call)
    if isinstance(binding, nodes.FunctionDef):
        return binding.name if _is_disabled(values, binding) else None
    if isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Assign):
        assign = binding.parent
        return func.as_string() if len(assign.targets) == 1 and _disables(values, assign.value) else None
    if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == "self":
        klass = enclosing_class(call)
        assigned = list(assigned_self_values(klass, func.attrname)) if klass is not None else []
        return func.as_string() if assigned and all(_disables(values, value) for value in assigned) else None
    return None


def _disables(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """*node* is ``torch.compiler.disable(fn, ...)`` (or ``torch._dynamo.disable``): the skipped wrapper of ``fn``."""
    return (
        isinstance(node, nodes.Call)
        and bool(node.args)
        and values.qualified_name(node.func) in _DISABLE_DECORATORS
    )


def allow_in_graph_callee(values: ValueOracle, call: nodes.Call) -> nodes.FunctionDef | None:
    """The function of this file *call* calls when Dynamo puts it in the graph whole (``allow_in_graph``).

    Decorated ``@torch.compiler.allow_in_graph`` / ``@torch._dynamo.allow_in_graph``,
    or the name bound once to ``allow_in_graph(fn)`` with ``fn`` a function of this file.
    """
    binding = _sole_binding(call)
    if isinstance(binding, nodes.FunctionDef):
        decorators = binding.decorators.nodes if binding.decorators else []
        allowed = any(values.qualified_name(decorator) in _ALLOW_IN_GRAPH for decorator in decorators)
        return binding if allowed else None
    wrapper = binding.parent if isinstance(binding, nodes.AssignName) else None
    if not (isinstance(wrapper, nodes.Assign) and len(wrapper.targets) == 1 and isinstance(wrapper.value, nodes.Call)):
        return None
    wrapped = wrapper.value
    if values.qualified_name(wrapped.func) not in _ALLOW_IN_GRAPH or len(wrapped.args) != 1 or wrapped.keywords:
        return None
    inner = wrapped.args[0]
    if not isinstance(inner, nodes.Name):
        return None
    try:
        _, functions = inner.lookup(inner.name)
    except Exception:  # astroid lookups can fail on odd code: no provable callee
        return None
    return functions[0] if len(functions) == 1 and isinstance(functions[0], nodes.FunctionDef) else None


def _is_disabled(values: ValueOracle, function: nodes.FunctionDef) -> bool:
    """Decorated ``torch.compiler.disable``, by name or through an alias scope analysis resolved
    (``disable_compiler = getattr(getattr(torch, "compiler", None), "disable", None) or nullwrap``)."""
    decorators = function.decorators.nodes if function.decorators else []
    if any(
        isinstance(decorator, nodes.Call) and any(k.arg not in _MEASURED_DISABLE_KEYWORDS for k in decorator.keywords)
        for decorator in decorators
    ):
        return False  # other keywords of ``disable(...)`` were not measured
    if values.scope.is_disabled(*def_position(function)):
        return True
    return any(
        values.qualified_name(decorator.func if isinstance(decorator, nodes.Call) else decorator) in _DISABLE_DECORATORS
        for decorator in decorators
    )
