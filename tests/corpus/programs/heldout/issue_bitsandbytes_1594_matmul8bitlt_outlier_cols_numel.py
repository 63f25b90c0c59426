"""LLM.int8() Linear8bitLt compiled for inference: outlier detection and `outlier_cols.numel()` in MatMul8bitLt.

Source: https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1594 (bitsandbytes@97073cdb^:
bitsandbytes/autograd/_functions.py MatmulLtState / MatMul8bitLt / matmul, bitsandbytes/nn/modules.py
Int8Params._quantize / Linear8bitLt.__init__ / init_8bit_state / forward, bitsandbytes/functional.py
int8_vectorwise_dequant, backends/cuda/ops.py int8_vectorwise_quant, backends/default/ops.py int8_scaled_mm,
backends/cpu/ops.py int8_mm_dequant)
Kept: the state object with class-level defaults, MatMul8bitLt.forward as before the PR (empty-input
shortcut, `_is_compiling()`-guarded cast warning, 3-D reshape, fast/slow quantization paths, the
`state.threshold > 0.0 and outlier_cols is not None and outlier_cols.numel()` decomposition with
CAt/subA/subB, addmm of the outliers, ctx plumbing), Linear8bitLt.forward with its `self.weight.data = CB`
write-back, and the docs' int8 Sequential (quantized by moving it to the device) compiled with `torch.compile`.
Simplified: the CUDA int8 kernels are pure-torch (row absmax quantization in int8_vectorwise_quant with
the kernel's outlier zeroing, fp32 matmul in int8_linear_matmul); int8_double_quant is built from two
vectorwise quantizations; no outlier pool, no state-dict hooks; CPU, tiny sizes.
"""
import warnings
from math import prod
from typing import Optional

import torch
from torch import nn

_is_compiling = torch.compiler.is_compiling


# ---- bitsandbytes.functional / ops stand-ins -------------------------------------------------------------

def int8_vectorwise_quant(A: torch.Tensor, threshold=0.0):
    rows = prod(A.shape[:-1])

    outlier_cols = None

    if threshold > 0.0:
        outliers = A.abs() >= threshold

        if outliers.any():
            outlier_cols = torch.argwhere(outliers.any(dim=0)).view(-1)

    A_kernel = A.masked_fill(A.abs() >= threshold, 0) if threshold > 0.0 else A
    row_stats = A_kernel.abs().amax(dim=-1).float().clamp_min(1e-6).reshape(rows)
    out_row = torch.round(A_kernel.float() * (127.0 / row_stats.view(*A.shape[:-1], 1))).to(torch.int8)

    # Zero out values from outlier columns across all rows.
    if rows > 1 and outlier_cols is not None:
        out_row[:, outlier_cols] = 0

    return out_row, row_stats, outlier_cols


def int8_double_quant(A: torch.Tensor, threshold=0.0):
    out_row, row_stats, outlier_cols = int8_vectorwise_quant(A, threshold=threshold)
    out_col, col_stats, _ = int8_vectorwise_quant(A.t().contiguous(), threshold=threshold)
    return out_row, out_col.t(), row_stats, col_stats, outlier_cols


def int8_vectorwise_dequant(A: torch.Tensor, stats: torch.Tensor):
    # To dequantize we divide by 127, or multiply by the reciprocal.
    return A * stats.view(-1, 1) * 7.874015718698502e-3


def int8_linear_matmul(A: torch.Tensor, B: torch.Tensor):
    # Naive implementation: perform matmul in fp32
    return torch.matmul(A.float(), B.float().t()).to(torch.int32)


def int8_mm_dequant(A, row_stats, col_stats, dtype=None, bias=None):
    A_calc = A.view(-1, A.shape[-1])
    row_stats = row_stats.reshape(-1).unsqueeze(-1)
    col_stats = col_stats.reshape(-1).unsqueeze(0)

    out = A_calc * (row_stats * col_stats) * 6.200124e-05
    if bias is not None:
        out += bias

    return out.to(dtype or torch.float16)


def int8_scaled_mm(A, B, row_stats, col_stats, bias=None, dtype=None):
    out_i32 = int8_linear_matmul(A, B)
    return int8_mm_dequant(out_i32, row_stats, col_stats, dtype=dtype or torch.float16, bias=bias)


# ---- bitsandbytes/autograd/_functions.py ----------------------------------------------------------------

class MatmulLtState:
    force_no_igemmlt: bool = False

    CB: Optional[torch.Tensor] = None
    SCB: Optional[torch.Tensor] = None
    CBt: Optional[torch.Tensor] = None

    subB: Optional[torch.Tensor] = None

    has_accumulated_gradients = False
    threshold = 0.0
    idx: Optional[torch.Tensor] = None
    is_training = True
    has_fp16_weights = True
    use_pool = False
    formatB = "row"

    def reset_grads(self):
        self.CB = None
        self.SCB = None
        self.CBt = None


class MatMul8bitLt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A, B, out=None, bias=None, state=None):
        state = state or MatmulLtState()

        # default of pytorch behavior if inputs are empty
        ctx.is_empty = False
        if prod(A.shape) == 0:
            ctx.is_empty = True
            ctx.A = A
            ctx.B = B
            ctx.bias = bias
            if A.shape[-1] == B.shape[0]:
                return torch.empty(A.shape[:-1] + B.shape[1:], dtype=A.dtype, device=A.device)
            else:
                return torch.empty(A.shape[:-1] + B.shape[:1], dtype=A.dtype, device=A.device)

        input_shape = A.shape

        # Cast A to fp16
        if A.dtype != torch.float16 and not _is_compiling():
            warnings.warn(f"MatMul8bitLt: inputs will be cast from {A.dtype} to float16 during quantization")

        if len(A.shape) == 3:
            A = A.reshape(-1, A.shape[-1])

        # 1. Quantize A. Note that as a side-effect, outliers are suppressed in CA/CAt.
        if ctx.needs_input_grad[1]:
            # Slower path
            CA, CAt, SCA, SCAt, outlier_cols = int8_double_quant(A.to(torch.float16), threshold=state.threshold)
        else:
            # Fast path
            CA, SCA, outlier_cols = int8_vectorwise_quant(A.to(torch.float16), threshold=state.threshold)
            CAt = SCAt = None

        has_grad = False

        if state.has_fp16_weights or state.CB is None:
            has_grad = getattr(B, "grad", None) is not None
            is_transposed = not B.is_contiguous() and B.shape[0] == B.stride(1)
            if is_transposed:
                B = B.contiguous()

            if (state.is_training and not has_grad) or state.CB is None or state.SCB is None:
                state.reset_grads()

                # 2. Quantize B
                state.CB, state.SCB, _ = int8_vectorwise_quant(B.to(torch.float16))

        # Handle sparse decomposition. In some instances, we may have not found any
        # outlier columns at all. In that case, we'll skip this part completely.
        if state.threshold > 0.0 and outlier_cols is not None and outlier_cols.numel():
            state.idx = outlier_cols

            # Zero out the outliers in the transposed 8bit inputs.
            if CAt is not None:
                CAt[:, state.idx] = 0

            # Extract the input outliers in original precision
            subA = A[:, state.idx].contiguous()

            # Extract the corresponding weights
            if state.has_fp16_weights:
                state.subB = B[:, state.idx].t()
            else:
                outliers = state.CB[:, state.idx]
                state.subB = int8_vectorwise_dequant(outliers, state.SCB).to(A.dtype).t()
        else:
            subA = None

        # 3. Int8 Matmul + Dequant + Bias
        output = int8_scaled_mm(CA, state.CB, SCA, state.SCB, bias=bias, dtype=A.dtype)

        # 4. Mixed-precision decomposition matmul
        if subA is not None and state.subB is not None:
            output = output.addmm(subA, state.subB)

        # 5. Save state
        ctx.state = state

        ctx.grad_shape = input_shape
        ctx.dtype_A, ctx.dtype_B, ctx.dtype_bias = A.dtype, B.dtype, None if bias is None else bias.dtype

        if any(ctx.needs_input_grad[:2]):
            ctx.tensors = (CAt, subA, A)
            ctx.tensor_states = (SCAt, state.idx)
        else:
            ctx.tensors = [None, None, None]
            ctx.tensor_states = (None, None)
            ctx.save_for_backward(None, None)

        output_shape = (*input_shape[:-1], state.CB.shape[0])

        if len(input_shape) == 3:
            return output.reshape(output_shape)

        return output

    @staticmethod
    def backward(ctx, grad_output):
        state = ctx.state
        CB = state.CB.to(ctx.dtype_A, copy=True).mul_(state.SCB.unsqueeze(1).mul(1.0 / 127.0))
        grad_A = torch.matmul(grad_output.to(ctx.dtype_A), CB).view(ctx.grad_shape)
        return grad_A, None, None, None, None


def matmul(A, B, out=None, state=None, threshold=0.0, bias=None):
    state = state or MatmulLtState()
    if threshold > 0.0:
        state.threshold = threshold
    return MatMul8bitLt.apply(A, B, out, bias, state)


# ---- bitsandbytes/nn/modules.py ---------------------------------------------------------------------------

class Int8Params(torch.nn.Parameter):
    def __new__(cls, data=None, requires_grad=True, has_fp16_weights=False, CB=None, SCB=None):
        if data is None:
            data = torch.empty(0)
        obj = torch.Tensor._make_subclass(cls, data, requires_grad)
        obj.CB = CB
        obj.SCB = SCB
        obj.has_fp16_weights = has_fp16_weights
        return obj

    def _quantize(self, device):
        if self.has_fp16_weights:
            return super().to(device)

        # We quantize the weight and store in 8bit row-major
        B = self.data.contiguous().to(device=device, dtype=torch.float16)
        CB, SCB, _ = int8_vectorwise_quant(B)
        self.data = CB
        self.CB = CB
        self.SCB = SCB

        return self


class Linear8bitLt(nn.Linear):
    def __init__(self, input_features, output_features, bias=True, has_fp16_weights=True, threshold=0.0,
                 index=None, device=None):
        super().__init__(input_features, output_features, bias, device)
        self.state = MatmulLtState()
        self.index = index

        self.state.threshold = threshold
        self.state.has_fp16_weights = has_fp16_weights

        if threshold > 0.0 and not has_fp16_weights:
            self.state.use_pool = True

        self.weight = Int8Params(self.weight.data, has_fp16_weights=has_fp16_weights, requires_grad=has_fp16_weights)

    def init_8bit_state(self):
        self.state.CB = self.weight.CB
        self.state.SCB = self.weight.SCB
        self.weight.CB = None
        self.weight.SCB = None

    def forward(self, x: torch.Tensor):
        self.state.is_training = self.training
        if self.weight.CB is not None:
            self.init_8bit_state()

        # weights are cast automatically as Int8Params, but the bias has to be cast manually
        if self.bias is not None and self.bias.dtype != x.dtype:
            self.bias.data = self.bias.data.to(x.dtype)

        out = matmul(x, self.weight, bias=self.bias, state=self.state)

        if not self.state.has_fp16_weights and self.state.CB is not None:
            self.weight.data = self.state.CB

        return out


def build_int8_model(device="cpu"):
    fp16_model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    int8_model = nn.Sequential(
        Linear8bitLt(8, 8, has_fp16_weights=False, threshold=6.0),
        Linear8bitLt(8, 8, has_fp16_weights=False, threshold=6.0),
    )
    int8_model.load_state_dict(fp16_model.state_dict())
    for layer in int8_model:
        layer.weight._quantize(device)  # Quantization happens here (`.to(0)` in the docs)
    return int8_model


def main():
    int8_model = torch.compile(build_int8_model())
    with torch.no_grad():
        return int8_model(torch.randn(2, 3, 8))


def make():
    torch.manual_seed(0)
    model = build_int8_model()
    x = torch.randn(2, 3, 8)
    x_outliers = x.clone()
    x_outliers[:, :, 2] = 9.0
    return model, [(x,), (x_outliers,)]
