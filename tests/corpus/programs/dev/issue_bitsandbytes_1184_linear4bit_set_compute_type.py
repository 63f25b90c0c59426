"""bitsandbytes Linear4bit under torch.compile: the first forward sets `self.compute_dtype = x.dtype` and warns.

Source: https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1184 (bitsandbytes/nn/modules.py
Params4bit, fix_4bit_weight_quant_state_from_module, Linear4bit.set_compute_type/forward; autograd/_functions.py matmul_4bit)
Kept: the docs example the reporter compiled (an nn.Sequential of two Linear4bit layers loaded from a float
model, quantized by moving the weights to the device, then `torch.compile`d), Params4bit as a Parameter
subclass made with `_make_subclass` and carrying its quant_state, the quant-state recovery helper, the
bias `.data` cast, set_compute_type's dtype checks and warnings, and matmul_4bit's gemv / autograd.Function
split.
Simplified: the CUDA 4-bit kernels are a pure-torch blockwise absmax quantizer (16 levels); QuantState keeps
only absmax, shape, blocksize and dtype; no nested statistics, no NF4 table, no blocksize-mismatch warning.
"""
import warnings

import torch
import torch.nn.functional as F
from torch import nn


class QuantState:
    def __init__(self, absmax, shape, blocksize, dtype, quant_type="fp4"):
        self.absmax = absmax
        self.shape = shape
        self.blocksize = blocksize
        self.dtype = dtype
        self.quant_type = quant_type

    def to(self, device):
        self.absmax = self.absmax.to(device)


def quantize_4bit(A, blocksize=8, compress_statistics=True, quant_type="fp4", quant_storage=torch.uint8):
    flat = A.reshape(-1, blocksize).float()
    absmax = flat.abs().amax(dim=1).clamp_min(1e-8)
    codes = torch.round(flat / absmax[:, None] * 7.0).to(torch.int16) + 8
    packed = (codes[:, 0::2] * 16 + codes[:, 1::2]).to(quant_storage).reshape(-1, 1)
    return packed, QuantState(absmax, A.shape, blocksize, A.dtype, quant_type)


def dequantize_4bit(A, quant_state):
    packed = A.reshape(-1, quant_state.blocksize // 2).to(torch.int16)
    hi = packed // 16
    lo = packed % 16
    codes = torch.stack([hi, lo], dim=-1).reshape(-1, quant_state.blocksize).float() - 8
    out = codes / 7.0 * quant_state.absmax[:, None]
    return out.reshape(quant_state.shape).to(quant_state.dtype)


def gemv_4bit(A, B, out=None, state=None):
    return torch.matmul(A, dequantize_4bit(B.t(), state).to(A.dtype).t())


class MatMul4Bit(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A, B, out=None, bias=None, quant_state=None):
        output = torch.nn.functional.linear(A, dequantize_4bit(B.t(), quant_state).to(A.dtype), bias)
        ctx.state = quant_state
        ctx.save_for_backward(B)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (B,) = ctx.saved_tensors
        grad_A = torch.matmul(grad_output, dequantize_4bit(B.t(), ctx.state).to(grad_output.dtype))
        return grad_A, None, None, None, None


def matmul_4bit(A, B, quant_state, out=None, bias=None):
    assert quant_state is not None
    if A.numel() == A.shape[-1] and A.requires_grad == False:
        out = gemv_4bit(A, B.t(), out, state=quant_state)
        if bias is not None:
            out += bias
        return out
    else:
        return MatMul4Bit.apply(A, B, out, bias, quant_state)


class Params4bit(torch.nn.Parameter):
    def __new__(
        cls,
        data=None,
        requires_grad=False,  # quantized weights should be frozen by default
        quant_state=None,
        blocksize=None,
        compress_statistics=True,
        quant_type="fp4",
        quant_storage=torch.uint8,
        module=None,
        bnb_quantized=False,
    ):
        if data is None:
            data = torch.empty(0)
        if blocksize is None:
            blocksize = 8

        self = torch.Tensor._make_subclass(cls, data, requires_grad)
        self.blocksize = blocksize
        self.compress_statistics = compress_statistics
        self.quant_type = quant_type
        self.quant_state = quant_state
        self.quant_storage = quant_storage
        self.bnb_quantized = bnb_quantized
        self.data = data
        self.module = module
        return self

    def _quantize(self, device):
        w = self.data.contiguous().to(device)
        w_4bit, quant_state = quantize_4bit(
            w,
            blocksize=self.blocksize,
            compress_statistics=self.compress_statistics,
            quant_type=self.quant_type,
            quant_storage=self.quant_storage,
        )
        self.data = w_4bit
        self.quant_state = quant_state
        if self.module is not None:
            self.module.quant_state = quant_state
        self.bnb_quantized = True
        return self


def fix_4bit_weight_quant_state_from_module(module):
    if getattr(module.weight, "quant_state", None) is not None:
        return

    if getattr(module, "quant_state", None) is None:
        warnings.warn(
            "FP4 quantization state not initialized. Please call .cuda() or .to(device) on the LinearFP4 layer first.",
        )

    # the quant state got lost when the parameter got converted. This happens for example for fsdp
    # since we registered the module, we can recover the state here
    assert module.weight.shape[1] == 1
    if not isinstance(module.weight, Params4bit):
        module.weight = Params4bit(module.weight, quant_storage=module.quant_storage, bnb_quantized=True)
    module.weight.quant_state = module.quant_state


class Linear4bit(nn.Linear):
    def __init__(
        self,
        input_features,
        output_features,
        bias=True,
        compute_dtype=None,
        compress_statistics=True,
        quant_type="fp4",
        quant_storage=torch.uint8,
        device=None,
    ):
        super().__init__(input_features, output_features, bias, device)
        self.weight = Params4bit(
            self.weight.data,
            requires_grad=False,
            compress_statistics=compress_statistics,
            quant_type=quant_type,
            quant_storage=quant_storage,
            module=self,
        )
        self.compute_dtype = compute_dtype
        self.compute_type_is_set = False if compute_dtype is None else True
        self.quant_state = None
        self.quant_storage = quant_storage

    def set_compute_type(self, x):
        if x.dtype in [torch.float32, torch.bfloat16]:
            # the input is in a dtype that is safe to compute in, we switch
            # to this type for speed and stability
            self.compute_dtype = x.dtype
        elif x.dtype == torch.float16:
            # we take the compoute dtype passed into the layer
            if self.compute_dtype in [None, torch.float32] and (x.numel() == x.shape[-1]):
                # single batch inference with input torch.float16 and compute_dtype float32 -> slow inference when it could be fast
                # warn the user about this
                warnings.warn(
                    "Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32 (default). This will lead to slow inference.",
                )
                warnings.filterwarnings("ignore", message=".*inference.")
            if self.compute_dtype in [None, torch.float32] and (x.numel() != x.shape[-1]):
                warnings.warn(
                    "Input type into Linear4bit is torch.float16, but bnb_4bit_compute_dtype=torch.float32 (default). This will lead to slow inference or training speed.",
                )
                warnings.filterwarnings("ignore", message=".*inference or training")

    def forward(self, x: torch.Tensor):
        fix_4bit_weight_quant_state_from_module(self)

        # weights are cast automatically as Int8Params, but the bias has to be cast manually
        if self.bias is not None and self.bias.dtype != x.dtype:
            self.bias.data = self.bias.data.to(x.dtype)

        if not self.compute_type_is_set:
            self.set_compute_type(x)
            self.compute_type_is_set = True

        inp_dtype = x.dtype
        if self.compute_dtype is not None:
            x = x.to(self.compute_dtype)

        bias = None if self.bias is None else self.bias.to(self.compute_dtype)
        weight = self.weight.t()

        return matmul_4bit(x, weight, bias=bias, quant_state=self.weight.quant_state).to(inp_dtype)


def build_quantized_model(device="cpu"):
    fp16_model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 16))
    quantized_model = nn.Sequential(Linear4bit(16, 16), Linear4bit(16, 16))
    quantized_model.load_state_dict(fp16_model.state_dict())
    for layer in quantized_model:
        layer.weight._quantize(device)  # Quantization happens here (`.to(0)` in the docs)
    return quantized_model


def main():
    quantized_model = build_quantized_model()
    compiled = torch.compile(quantized_model)
    with torch.no_grad():
        return compiled(torch.randn(1, 16, dtype=torch.float16))


def make():
    torch.manual_seed(0)
    model = build_quantized_model()
    return model, [
        (torch.randn(3, 16),),
        (torch.randn(1, 16, dtype=torch.float16),),
        (torch.randn(4, 16, dtype=torch.float16),),
    ]
