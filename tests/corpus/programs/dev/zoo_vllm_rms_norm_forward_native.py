"""vLLM RMSNorm / SiluAndMul through CustomOp dispatch to `forward_native`, used the Llama way: the first layer norm returns a tensor, later ones a `(hidden_states, residual)` tuple (no data-dependent step).

Source: vllm-project/vllm@00cba797bda48c0413ff05ab3c699335a745d734:vllm/model_executor/layers/layernorm.py:RMSNorm
Also: vllm/model_executor/custom_op.py@000f37116b2944ceb44da468a129d34d77c85c42
(CustomOp, dispatch_forward); vllm/model_executor/layers/activation.py
(SiluAndMul.forward_native); vllm/model_executor/models/llama.py
(LlamaMLP, LlamaDecoderLayer.forward's residual handling, LlamaModel's
final norm).
Kept: RMSNorm.__init__ and forward_native verbatim (float32 upcast, fused
residual add, hidden-size check, variance_size_override slice, has_weight),
CustomOp's forward -> _forward_method indirection and register decorator.
Simplified: dispatch_forward always picks forward_native (what vLLM does
for custom ops disabled under torch.compile); attention is a linear stand-in;
Merged/RowParallelLinear are nn.Linear; hidden 8, 2 layers.
"""
from typing import Optional, Union

import torch
import torch.nn as nn
import torch.nn.functional as F


class CustomOp(nn.Module):
    op_registry: dict = {}

    def __init__(self, *args, **kwargs):
        super().__init__()
        self._forward_method = self.dispatch_forward()

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)

    def forward_native(self, *args, **kwargs):
        raise NotImplementedError

    def forward_cuda(self, *args, **kwargs):
        raise NotImplementedError

    def dispatch_forward(self):
        # custom ops are disabled when vLLM compiles the model: use the native path
        return self.forward_native

    @classmethod
    def register(cls, name: str):
        def decorator(op_cls):
            assert name not in cls.op_registry, f"Duplicate op name: {name}"
            op_cls.name = name
            cls.op_registry[name] = op_cls
            return op_cls

        return decorator


@CustomOp.register("rms_norm")
class RMSNorm(CustomOp):
    """Root mean square normalization.

    Computes x -> w * x / sqrt(E[x^2] + eps) where w is the learned weight.
    Refer to https://arxiv.org/abs/1910.07467
    """

    def __init__(
        self,
        hidden_size: int,
        eps: float = 1e-6,
        var_hidden_size: Optional[int] = None,
        has_weight: bool = True,
        dtype: Optional[torch.dtype] = None,
    ) -> None:
        super().__init__()

        self.hidden_size = hidden_size
        self.variance_epsilon = eps
        self.variance_size_override = (
            None if var_hidden_size == hidden_size else var_hidden_size
        )
        self.has_weight = has_weight
        if dtype is not None:
            self.weight = torch.ones(hidden_size, dtype=dtype)
        else:
            self.weight = torch.ones(hidden_size)
        if self.has_weight:
            self.weight = nn.Parameter(self.weight)

    def forward_native(
        self,
        x: torch.Tensor,
        residual: Optional[torch.Tensor] = None,
    ) -> Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """PyTorch-native implementation equivalent to forward()."""
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        if residual is not None:
            x = x + residual.to(torch.float32)
            residual = x.to(orig_dtype)

        hidden_size = x.shape[-1]
        if hidden_size != self.hidden_size:
            raise ValueError(
                "Expected hidden_size to be "
                f"{self.hidden_size}, but found: {hidden_size}"
            )

        if self.variance_size_override is None:
            x_var = x
        else:
            if hidden_size < self.variance_size_override:
                raise ValueError(
                    "Expected hidden_size to be at least "
                    f"{self.variance_size_override}, but found: {hidden_size}"
                )

            x_var = x[:, :, : self.variance_size_override]

        variance = x_var.pow(2).mean(dim=-1, keepdim=True)

        x = x * torch.rsqrt(variance + self.variance_epsilon)
        x = x.to(orig_dtype)
        if self.has_weight:
            x = x * self.weight
        if residual is None:
            return x
        else:
            return x, residual

    def extra_repr(self) -> str:
        s = f"hidden_size={self.weight.data.size(0)}"
        s += f", eps={self.variance_epsilon}"
        return s


@CustomOp.register("silu_and_mul")
class SiluAndMul(CustomOp):
    """An activation function for SwiGLU.

    The function computes x -> silu(x[:d]) * x[d:] where d = x.shape[-1] // 2.
    """

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        """PyTorch-native implementation equivalent to forward()."""
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


class LlamaMLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, hidden_act: str) -> None:
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        if hidden_act != "silu":
            raise ValueError(
                f"Unsupported activation: {hidden_act}. Only silu is supported for now."
            )
        self.act_fn = SiluAndMul()

    def forward(self, x):
        x = self.gate_up_proj(x)
        x = self.act_fn(x)
        x = self.down_proj(x)
        return x


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, rms_norm_eps: float) -> None:
        super().__init__()
        self.self_attn = nn.Linear(hidden_size, hidden_size, bias=False)
        self.mlp = LlamaMLP(hidden_size, intermediate_size, hidden_act="silu")
        self.input_layernorm = RMSNorm(hidden_size, eps=rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(hidden_size, eps=rms_norm_eps)

    def forward(
        self,
        positions: torch.Tensor,
        hidden_states: torch.Tensor,
        residual: Optional[torch.Tensor],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # Self Attention
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(hidden_states)

        # Fully Connected
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states)
        return hidden_states, residual


class LlamaModel(nn.Module):
    def __init__(self, vocab_size=16, hidden_size=8, intermediate_size=12, num_layers=2,
                 rms_norm_eps=1e-5, head_var_size=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(hidden_size, intermediate_size, rms_norm_eps) for _ in range(num_layers)]
        )
        self.norm = RMSNorm(hidden_size, eps=rms_norm_eps, var_hidden_size=head_var_size)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, residual)
        hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states


def make():
    torch.manual_seed(0)
    model = LlamaModel(head_var_size=6)
    ids = torch.randint(0, 16, (2, 5))
    positions = torch.arange(5).expand(2, 5)
    return model, [(ids, positions)]


def load_model():
    model = LlamaModel(head_var_size=6)
    return torch.compile(model, dynamic=True, backend="inductor")
