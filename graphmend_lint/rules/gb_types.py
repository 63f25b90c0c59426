"""The Dynamo graph-break types the rules cite: one ``Gb_type`` title per GB id.

A GB id in torch's ``graph_break_registry.json`` may hold several entries; the
title picks the one a rule means (``docs_gen`` checks it against the registry).
Rules name ids only (``dynamo_gb = gb_types("GB0170")``), so a title is written once.
"""

from __future__ import annotations

from typing import Final

GB_TYPES: Final[dict[str, str]] = {
    "GB0007": "Attempted to call function marked as skipped",
    "GB0008": "Attempted to inline function marked as skipped",
    "GB0014": "Attempted to wrap RNN, GRU, or LSTM",
    "GB0015": "Attempted to wrap sparse Tensor",
    "GB0025": "Call to `torch._dynamo.graph_break()`",
    "GB0033": "Data dependent operator",
    "GB0036": "Dynamic shape operator",
    "GB0046": "Encountered torch.is_inference_mode_enabled during tracing",
    "GB0055": "Failed to convert args/kwargs to proxy",
    "GB0058": "Failed to set tensor attribute",
    "GB0059": "Failed to trace builtin operator",
    "GB0082": "Missing bytecode handler",
    "GB0083": "Module-level backwards hooks require compiled autograd.",
    "GB0088": "Observed exception",
    "GB0092": "Reconstruction failure",
    "GB0098": "Skip calling `torch.compiler.disable()`d function",
    "GB0099": "Skip inlining `torch.compiler.disable()`d function",
    "GB0104": "Tensor with grad_fn()",
    "GB0108": "Tensor.retain_grad() with AOTDispatcher",
    "GB0109": "Tensor.tolist() with non-integer tensor",
    "GB0119": "Uninitialized nn.Module",
    "GB0123": "Unsupported Tensor.backward() call",
    "GB0124": "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "GB0125": "Unsupported Tensor.requires_grad_() call",
    "GB0126": "Unsupported Tensor.resize_() call",
    "GB0127": "Unsupported Tensor.resize_as_() call",
    "GB0142": "Unsupported context manager",
    "GB0148": "Unsupported function call (delayed)",
    "GB0156": "Unsupported method call",
    "GB0157": "Unsupported ndarray attribute access",
    "GB0158": "Unsupported ndarray method call",
    "GB0170": "Data-dependent branching",
    "GB0178": "constant fold exception",
    "GB0206": "setattr() on Tensor.requires_grad",
    "GB0207": "sort with non-constant keys",
    "GB0208": "torch.* op returned non-Tensor",
    "GB0213": "unimplemented builtin op on tensor arguments",
    "GB0225": "Attempted to use tensor creation function with requires_grad=True",
    "GB0246": "Attempted to use `torch.nn.functional.one_hot` with data-dependent output shape",
    "GB0264": "Attempted to use `torch.nn.Parameter()` constructor with Dynamo",
    "GB0277": "Attempted to wrap sparse Tensor with VariableTracker",
    "GB0291": "logging.Logger method not supported for non-export cases",
    "GB0363": "An opaque object was created in the middle of the program.",
    "GB0294": "attempted to trace numpy function unsupported by PyTorch",
    "GB0374": "Sparse tensor creation not supported",
    "GB0467": "setattr() on unsupported type",
    "GB0569": "repr() on tensor",
    "GB4198": "Attempted to copy.deepcopy a tensor",
    "GB4271": "__class__ assignment on user-defined object",
    "GB4315": "RuntimeError when making fake tensor call",
    "GB4347": "Missing tp_iternext",
    "GB4841": "Unsupported python_type() call",
    "GB5976": "Data pointer comparison",
    "GB6215": "Unresolved GetAttrVariable comparison",
    "GB6297": "autograd.Function.apply: duplicate tensor input",
    "GB7312": "failed to bind arguments when attempting to inline",
    "GB7650": "torch.Generator method",
    "GB8335": "Generator reconstruction with mutations",
    "GB8977": "Invalid call to __build_class__",
    "GB8985": "requires_grad_() intermediate leaked as output",
    "GB9186": "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`",
}


def gb_types(*ids: str) -> dict[str, str]:
    """``{id: Gb_type}`` for *ids*, in the order given (the order rule pages list them)."""
    return {gb_id: GB_TYPES[gb_id] for gb_id in ids}
