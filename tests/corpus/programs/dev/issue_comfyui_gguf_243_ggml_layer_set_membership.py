"""ComfyUI-GGUF `GGMLOps.Linear` (pre-#243): GGMLTensor weights, set-membership qtype checks, `__class__` reset.

Source: city96/ComfyUI-GGUF#243 (https://github.com/city96/ComfyUI-GGUF/pull/243)
The PR names two graph-break sources in the compiled diffusion model: the module-level *set*
`TORCH_COMPATIBLE_QTYPES` used in `in` checks, and `weight.__class__ = torch.Tensor` on the
`GGMLTensor` subclass (plus the `torch.compiler.disable` on `cast_bias_weight`). The code is the
pre-PR version, city96/ComfyUI-GGUF@687241b^ (ops.py: GGMLTensor, GGMLLayer, GGMLOps.Linear,
move_patch_to_device; dequant.py: is_torch_compatible, is_quantized, dequantize_tensor,
dequantize, split_block_dims, dequantize_blocks_Q8_0).
Kept: those functions as written, the `torch_compiler_disable` fallback, the patch loop in
get_weight, the MRO GGMLLayer -> comfy manual_cast.Linear, and a compiled feed-forward block
(`torch.compile(model)`) whose first Linear holds a Q8_0 GGMLTensor and second an F16 one.
Simplified: `gguf` (GGMLQuantizationType, GGML_QUANT_SIZES) and `comfy.ops` /
`comfy.model_management` (manual_cast.Linear, cast_bias_weight, cast_to,
device_supports_non_blocking) are replaced by minimal local stand-ins with the same call
shapes; only the Q8_0 dequant kernel is kept; no numpy fallback, state-dict load/save hooks,
or Conv/Embedding/Norm ops. Sizes: 32 -> 4 -> 32 features.
"""
from enum import IntEnum

import torch


# ---- stand-ins for `gguf` ----
class GGMLQuantizationType(IntEnum):
    F32 = 0
    F16 = 1
    Q8_0 = 8


GGML_QUANT_SIZES = {GGMLQuantizationType.Q8_0: (32, 2 + 32)}


# ---- stand-ins for `comfy.model_management` / `comfy.ops` ----
def device_supports_non_blocking(device):
    return torch.device(device).type == "cuda"


def cast_to(weight, dtype=None, device=None, non_blocking=False, copy=False):
    if device is None or weight.device == device:
        if not copy:
            if dtype is None or weight.dtype == dtype:
                return weight
        return weight.to(dtype=dtype, copy=copy)
    r = torch.empty_like(weight, dtype=dtype, device=device)
    r.copy_(weight, non_blocking=non_blocking)
    return r


def comfy_cast_bias_weight(s, input=None, dtype=None, device=None, bias_dtype=None):
    if input is not None:
        if dtype is None:
            dtype = input.dtype
        if bias_dtype is None:
            bias_dtype = dtype
        if device is None:
            device = input.device
    bias = None
    non_blocking = device_supports_non_blocking(device)
    if s.bias is not None:
        bias = cast_to(s.bias, bias_dtype, device, non_blocking=non_blocking)
    weight = cast_to(s.weight, dtype, device, non_blocking=non_blocking)
    return weight, bias


class CastWeightBiasOp:
    comfy_cast_weights = False
    weight_function = []
    bias_function = []


class manual_cast:
    class Linear(torch.nn.Linear, CastWeightBiasOp):
        comfy_cast_weights = True

        def reset_parameters(self):
            return None

        def forward_comfy_cast_weights(self, input):
            weight, bias = comfy_cast_bias_weight(self, input)
            return torch.nn.functional.linear(input, weight, bias)

        def forward(self, *args, **kwargs):
            if self.comfy_cast_weights or len(self.weight_function) > 0 or len(self.bias_function) > 0:
                return self.forward_comfy_cast_weights(*args, **kwargs)
            else:
                return super().forward(*args, **kwargs)


# ---- dequant.py ----
TORCH_COMPATIBLE_QTYPES = {None, GGMLQuantizationType.F32, GGMLQuantizationType.F16}


def is_torch_compatible(tensor):
    return tensor is None or getattr(tensor, "tensor_type", None) in TORCH_COMPATIBLE_QTYPES


def is_quantized(tensor):
    return not is_torch_compatible(tensor)


def dequantize_tensor(tensor, dtype=None, dequant_dtype=None):
    qtype = getattr(tensor, "tensor_type", None)
    oshape = getattr(tensor, "tensor_shape", tensor.shape)

    if qtype in TORCH_COMPATIBLE_QTYPES:
        return tensor.to(dtype)
    elif qtype in dequantize_functions:
        dequant_dtype = dtype if dequant_dtype == "target" else dequant_dtype
        return dequantize(tensor.data, qtype, oshape, dtype=dequant_dtype).to(dtype)
    else:
        raise NotImplementedError(f"qtype {qtype}")


def dequantize(data, qtype, oshape, dtype=None):
    """
    Dequantize tensor back to usable shape/dtype
    """
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    dequantize_blocks = dequantize_functions[qtype]

    rows = data.reshape(
        (-1, data.shape[-1])
    ).view(torch.uint8)

    n_blocks = rows.numel() // type_size
    blocks = rows.reshape((n_blocks, type_size))
    blocks = dequantize_blocks(blocks, block_size, type_size, dtype)
    return blocks.reshape(oshape)


def split_block_dims(blocks, *args):
    n_max = blocks.shape[1]
    dims = list(args) + [n_max - sum(args)]
    return torch.split(blocks, dims, dim=1)


def dequantize_blocks_Q8_0(blocks, block_size, type_size, dtype=None):
    d, x = split_block_dims(blocks, 2)
    d = d.view(torch.float16).to(dtype)
    x = x.view(torch.int8)
    return (d * x)


dequantize_functions = {
    GGMLQuantizationType.Q8_0: dequantize_blocks_Q8_0,
}


# ---- ops.py ----
# to avoid breaking really old pytorch versions
if hasattr(torch, "compiler") and hasattr(torch.compiler, "disable"):
    torch_compiler_disable = torch.compiler.disable
else:
    def torch_compiler_disable(*args, **kwargs):
        def noop(x):
            return x
        return noop


class GGMLTensor(torch.Tensor):
    """
    Main tensor-like class for storing quantized weights
    """
    def __init__(self, *args, tensor_type, tensor_shape, patches=[], **kwargs):
        super().__init__()
        self.tensor_type = tensor_type
        self.tensor_shape = tensor_shape
        self.patches = patches

    def __new__(cls, *args, tensor_type, tensor_shape, patches=[], **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def to(self, *args, **kwargs):
        new = super().to(*args, **kwargs)
        new.tensor_type = getattr(self, "tensor_type", None)
        new.tensor_shape = getattr(self, "tensor_shape", new.data.shape)
        new.patches = getattr(self, "patches", []).copy()
        return new

    def clone(self, *args, **kwargs):
        return self

    def detach(self, *args, **kwargs):
        return self

    @property
    def shape(self):
        if not hasattr(self, "tensor_shape"):
            self.tensor_shape = self.size()
        return self.tensor_shape


def move_patch_to_device(item, device):
    if isinstance(item, torch.Tensor):
        return item.to(device, non_blocking=True)
    elif isinstance(item, tuple):
        return tuple(move_patch_to_device(x, device) for x in item)
    elif isinstance(item, list):
        return [move_patch_to_device(x, device) for x in item]
    else:
        return item


class GGMLLayer(torch.nn.Module):
    """
    This (should) be responsible for de-quantizing on the fly
    """
    comfy_cast_weights = True
    dequant_dtype = None
    patch_dtype = None
    largest_layer = False
    torch_compatible_tensor_types = {None, GGMLQuantizationType.F32, GGMLQuantizationType.F16}

    def is_ggml_quantized(self, *, weight=None, bias=None):
        if weight is None:
            weight = self.weight
        if bias is None:
            bias = self.bias
        return is_quantized(weight) or is_quantized(bias)

    def get_weight(self, tensor, dtype):
        if tensor is None:
            return

        # consolidate and load patches to GPU in async
        patch_list = []
        device = tensor.device
        for function, patches, key in getattr(tensor, "patches", []):
            patch_list += move_patch_to_device(patches, device)

        # dequantize tensor while patches load
        weight = dequantize_tensor(tensor, dtype, self.dequant_dtype)

        # prevent propagating custom tensor class
        if isinstance(weight, GGMLTensor):
            weight.__class__ = torch.Tensor

        # apply patches
        if patch_list:
            if self.patch_dtype is None:
                weight = function(patch_list, weight, key)
            else:
                # for testing, may degrade image quality
                patch_dtype = dtype if self.patch_dtype == "target" else self.patch_dtype
                weight = function(patch_list, weight, key, patch_dtype)
        return weight

    @torch_compiler_disable()
    def cast_bias_weight(s, input=None, dtype=None, device=None, bias_dtype=None):
        if input is not None:
            if dtype is None:
                dtype = getattr(input, "dtype", torch.float32)
            if bias_dtype is None:
                bias_dtype = dtype
            if device is None:
                device = input.device

        bias = None
        non_blocking = device_supports_non_blocking(device)
        if s.bias is not None:
            bias = s.get_weight(s.bias.to(device), dtype)
            bias = cast_to(bias, bias_dtype, device, non_blocking=non_blocking, copy=False)

        weight = s.get_weight(s.weight.to(device), dtype)
        weight = cast_to(weight, dtype, device, non_blocking=non_blocking, copy=False)
        return weight, bias

    def forward_comfy_cast_weights(self, input, *args, **kwargs):
        if self.is_ggml_quantized():
            out = self.forward_ggml_cast_weights(input, *args, **kwargs)
        else:
            out = super().forward_comfy_cast_weights(input, *args, **kwargs)

        # non-ggml forward might still propagate custom tensor class
        if isinstance(out, GGMLTensor):
            out.__class__ = torch.Tensor
        return out

    def forward_ggml_cast_weights(self, input):
        raise NotImplementedError


class GGMLOps(manual_cast):
    """
    Dequantize weights on the fly before doing the compute
    """
    class Linear(GGMLLayer, manual_cast.Linear):
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            torch.nn.Module.__init__(self)
            self.in_features = in_features
            self.out_features = out_features
            self.weight = None
            self.bias = None

        def forward_ggml_cast_weights(self, input):
            weight, bias = self.cast_bias_weight(input)
            return torch.nn.functional.linear(input, weight, bias)


class FeedForward(torch.nn.Module):
    def __init__(self, dim, hidden, operations=GGMLOps):
        super().__init__()
        self.proj_in = operations.Linear(dim, hidden)
        self.proj_out = operations.Linear(hidden, dim)

    def forward(self, x):
        return self.proj_out(torch.nn.functional.gelu(self.proj_in(x)))


def _q8_0(w):
    # GGUF Q8_0 layout per 32-value block: fp16 scale, then 32 int8 values.
    out_f, in_f = w.shape
    blocks = w.reshape(-1, 32)
    d = blocks.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127.0
    q = torch.round(blocks / d).to(torch.int8)
    raw = torch.cat([d.to(torch.float16).view(torch.uint8), q.view(torch.uint8)], dim=1)
    return GGMLTensor(raw.reshape(out_f, -1), tensor_type=GGMLQuantizationType.Q8_0, tensor_shape=torch.Size(w.shape))


def build_model():
    torch.manual_seed(0)
    model = FeedForward(32, 4)
    # what ggml_load_from_state_dict assigns
    model.proj_in.weight = torch.nn.Parameter(_q8_0(torch.randn(4, 32)), requires_grad=False)
    model.proj_in.bias = torch.nn.Parameter(
        GGMLTensor(torch.randn(4), tensor_type=GGMLQuantizationType.F32, tensor_shape=torch.Size([4])),
        requires_grad=False)
    model.proj_out.weight = torch.nn.Parameter(
        GGMLTensor(torch.randn(32, 4).half(), tensor_type=GGMLQuantizationType.F16, tensor_shape=torch.Size([32, 4])),
        requires_grad=False)
    model.proj_out.bias = torch.nn.Parameter(
        GGMLTensor(torch.randn(32), tensor_type=GGMLQuantizationType.F32, tensor_shape=torch.Size([32])),
        requires_grad=False)
    return model


def load_compiled():
    return torch.compile(build_model())


def make():
    model = build_model()
    torch.manual_seed(0)
    return model, [(torch.randn(2, 5, 32),)]
