"""apex normalization layers on CPU: FusedRMSNorm / MixedFusedRMSNorm / MixedFusedLayerNorm guard their CUDA kernels with `torch.jit.is_tracing() or torch.jit.is_scripting() [or torch.compiler.is_compiling()] or not input.is_cuda` and fall back to `manual_rms_norm` / `F.layer_norm` (no break expected).

Source: NVIDIA/apex@014f30f72902aeca1437b56ef66f97801a7c35d9:apex/normalization/fused_layer_norm.py:20-36,560-700
Kept: manual_rms_norm, FusedLayerNorm / FusedRMSNorm __init__ and forward,
MixedFusedLayerNorm and MixedFusedRMSNorm verbatim (the mixed classes lack
the is_compiling test, as in apex).
Simplified: the `importlib.import_module("fused_layer_norm_cuda")` in the
constructors and the fused autograd/custom-op paths are dropped (never
reached on CPU); a pre-norm MLP block (as in Megatron-style models that
import these norms) calls the layers.
"""
import numbers

import torch
from torch.nn import functional as F
from torch.nn import init
from torch.nn.parameter import Parameter


# Reference implementation from Huggingface
def manual_rms_norm(input, normalized_shape, weight, eps):
    # layer norm should always be calculated in float32
    dims = tuple(i for i in range(-1, -len(normalized_shape)-1, -1))
    variance = input.to(torch.float32).pow(2).mean(dims, keepdim=True)
    input = input * torch.rsqrt(variance + eps)

    if weight is None:
        return input

    # convert into half-precision if necessary
    if weight.dtype in [torch.float16, torch.bfloat16]:
        input = input.to(weight.dtype)

    return weight * input


def fused_layer_norm_affine(input, weight, bias, normalized_shape, eps, memory_efficient=False):
    raise NotImplementedError("CUDA kernel")


def mixed_dtype_fused_rms_norm_affine(input, weight, normalized_shape, eps, memory_efficient=False):
    raise NotImplementedError("CUDA kernel")


def mixed_dtype_fused_layer_norm_affine(input, weight, bias, normalized_shape, eps, memory_efficient=False):
    raise NotImplementedError("CUDA kernel")


class FusedLayerNorm(torch.nn.Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, memory_efficient=False):
        super().__init__()

        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = torch.Size(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.memory_efficient = memory_efficient
        if self.elementwise_affine:
            self.weight = Parameter(torch.empty(*normalized_shape))
            self.bias = Parameter(torch.empty(*normalized_shape))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input):
        if torch.jit.is_tracing() or torch.jit.is_scripting() or torch.compiler.is_compiling() or not input.is_cuda:
            return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)
        return fused_layer_norm_affine(
            input, self.weight, self.bias, self.normalized_shape, self.eps, self.memory_efficient
        )


class FusedRMSNorm(torch.nn.Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, memory_efficient=False):
        super().__init__()

        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = torch.Size(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.memory_efficient = memory_efficient
        if self.elementwise_affine:
            self.weight = Parameter(torch.empty(*normalized_shape))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        if torch.jit.is_tracing() or torch.jit.is_scripting() or torch.compiler.is_compiling() or not input.is_cuda:
            return manual_rms_norm(input, self.normalized_shape, self.weight, self.eps)
        raise NotImplementedError("CUDA kernel")


class MixedFusedLayerNorm(FusedLayerNorm):

    def __init__(self, normalized_shape, eps=1e-5, *, memory_efficient=False, **kwargs):
        if "elementwise_affine" in kwargs:
            import warnings
            warnings.warn("MixedFusedLayerNorm does not support `elementwise_affine` argument")
            elementwise_affine = kwargs.pop("elementwise_affine")
            if not elementwise_affine:
                raise RuntimeError("MixedFusedLayerNorm does not support `elementwise_affine = False`")

        super().__init__(
            normalized_shape=normalized_shape, eps=eps, elementwise_affine=True, memory_efficient=memory_efficient
        )
    def forward(self, input: torch.Tensor):
        # NOTE (mkozuki): CPU path is here mainly for unittest sake.
        if torch.jit.is_tracing() or torch.jit.is_scripting() or not input.is_cuda:
            return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)
        return mixed_dtype_fused_layer_norm_affine(
            input, self.weight, self.bias, self.normalized_shape, self.eps, self.memory_efficient
        )


class MixedFusedRMSNorm(FusedRMSNorm):

    def __init__(self, normalized_shape, eps=1e-5, *, memory_efficient=False, **kwargs):
        if "elementwise_affine" in kwargs:
            import warnings
            warnings.warn("MixedFusedRMSNorm does not support `elementwise_affine` argument")
            elementwise_affine = kwargs.pop("elementwise_affine")
            if not elementwise_affine:
                raise RuntimeError("MixedFusedRMSNorm does not support `elementwise_affine = False`")

        super().__init__(
            normalized_shape=normalized_shape, eps=eps, elementwise_affine=True, memory_efficient=memory_efficient
        )
    def forward(self, input: torch.Tensor):
        # NOTE (mkozuki): CPU path is here mainly for unittest sake.
        # TODO Manual RMS Norm Implementation Here
        if torch.jit.is_tracing() or torch.jit.is_scripting() or not input.is_cuda:
            return manual_rms_norm(input, self.normalized_shape, self.weight, self.eps)
        return mixed_dtype_fused_rms_norm_affine(
            input, self.weight, self.normalized_shape, self.eps, self.memory_efficient
        )


class Block(torch.nn.Module):
    def __init__(self, hidden=8, norm="rmsnorm"):
        super().__init__()
        norm_cls = MixedFusedRMSNorm if norm == "rmsnorm" else MixedFusedLayerNorm
        self.input_layernorm = norm_cls(hidden, eps=1e-6)
        self.fc1 = torch.nn.Linear(hidden, 2 * hidden)
        self.fc2 = torch.nn.Linear(2 * hidden, hidden)
        self.post_layernorm = FusedLayerNorm(hidden)
        self.final_norm = FusedRMSNorm([hidden], elementwise_affine=False)

    def forward(self, hidden_states):
        h = self.input_layernorm(hidden_states)
        h = hidden_states + self.fc2(F.gelu(self.fc1(h)))
        return self.final_norm(self.post_layernorm(h))


block = torch.compile(Block())


def make():
    torch.manual_seed(0)
    return Block(), [(torch.randn(2, 3, 8),), (torch.randn(4, 8).to(torch.bfloat16).float(),)]
