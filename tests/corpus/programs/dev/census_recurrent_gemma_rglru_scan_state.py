"""RecurrentGemma RG-LRU: a custom autograd.Function sqrt, a Python loop over time in `_rnn_scan`, and the recurrent state kept on `self.recurrent_states`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/recurrent_gemma/modeling_recurrent_gemma.py:263-388
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10 (RecurrentGemmaModel eval, modeling_recurrent_gemma.py:655-656).
Kept: SqrtBoundDerivative, RecurrentGemmaRglru.forward (reset from position_ids,
baddbmm gates, the gamma normalisation) and _rnn_scan verbatim with its
decode (shape[1] == 1) and linear-mode branches; the state attribute update.
Simplified: 2 heads of width 4; the state starts as None (prefill) or a tensor (decode).
"""
import torch
from torch import nn

_MAX_SQRT_GRADIENT = 1000.0


class SqrtBoundDerivative(torch.autograd.Function):
    """Computes a square root with a gradient clipped at `_MAX_SQRT_GRADIENT`."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sqrt(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        clipped_x_times_4 = torch.clip(4.0 * x, min=1 / (_MAX_SQRT_GRADIENT**2))
        return grad_output / torch.sqrt(clipped_x_times_4)


class RecurrentGemmaConfig:
    num_attention_heads = 2
    lru_width = 8


class RecurrentGemmaRglru(nn.Module):
    """A Real-Gated Linear Recurrent Unit (RG-LRU) layer."""

    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.block_width = config.lru_width // self.num_attention_heads

        self.recurrent_param = nn.Parameter(torch.randn([config.lru_width]))
        self.input_gate_weight = nn.Parameter(torch.randn([self.num_attention_heads, self.block_width, self.block_width]) * 0.3)
        self.input_gate_bias = nn.Parameter(torch.zeros([self.num_attention_heads, self.block_width]))
        self.recurrent_gate_weight = nn.Parameter(torch.randn([self.num_attention_heads, self.block_width, self.block_width]) * 0.3)
        self.recurrent_gate_bias = nn.Parameter(torch.zeros([self.num_attention_heads, self.block_width]))
        self.recurrent_states = None

    def forward(self, activations, position_ids):
        batch_size, seq_len, lru_width = activations.shape
        reset = position_ids[:, :, None] == 0

        reshape_act = activations.reshape(batch_size * seq_len, self.num_attention_heads, self.block_width)
        reshape_act = reshape_act.permute(1, 0, 2)

        res = torch.baddbmm(self.input_gate_bias[:, None, :], reshape_act, self.input_gate_weight)
        input_gate = torch.sigmoid(res.transpose(0, 1).reshape(batch_size, seq_len, lru_width))

        res = torch.baddbmm(self.recurrent_gate_bias[:, None, :], reshape_act, self.recurrent_gate_weight)
        recurrent_gate = torch.sigmoid(res.transpose(0, 1).reshape(batch_size, seq_len, lru_width))

        log_recurrent_gate = -8.0 * recurrent_gate * nn.functional.softplus(self.recurrent_param)
        recurrent_gate = torch.exp(log_recurrent_gate)
        a_square = torch.exp(2 * log_recurrent_gate)

        gated_inputs = activations * input_gate

        multiplier = SqrtBoundDerivative.apply(1 - a_square)
        multiplier = reset + ~reset * multiplier
        normalized_x = gated_inputs * multiplier.type(activations.dtype)

        hidden_states, recurrent_states = self._rnn_scan(
            hidden_states=normalized_x,
            recurrent_gate=recurrent_gate,
            reset=reset,
            recurrent_states=self.recurrent_states,
        )
        self.recurrent_states = recurrent_states
        return hidden_states

    def _rnn_scan(self, hidden_states, recurrent_gate, reset, recurrent_states, acc_dtype=torch.float32):
        recurrent_gate = recurrent_gate * ~reset

        if hidden_states.shape[1] == 1:
            if recurrent_states is None:
                return hidden_states, hidden_states[:, 0].type(acc_dtype)
            else:
                contextualized_states = recurrent_gate.type(acc_dtype) * recurrent_states[:, None].to(
                    recurrent_gate.device
                )
                contextualized_states += hidden_states.type(acc_dtype)
                return contextualized_states.type(hidden_states.dtype), contextualized_states[:, -1]
        else:
            if recurrent_states is None:
                recurrent_states = torch.zeros(hidden_states[:, 0].shape, dtype=acc_dtype, device=hidden_states.device)

            contextualized_states = torch.zeros_like(hidden_states)
            for t in range(hidden_states.shape[1]):
                recurrent_states = recurrent_gate[:, t].type(acc_dtype) * recurrent_states.to(recurrent_gate.device)
                recurrent_states = recurrent_states + hidden_states[:, t].type(acc_dtype)
                contextualized_states[:, t] = recurrent_states.type(hidden_states.dtype)

        return contextualized_states, recurrent_states


class DecodeStep(nn.Module):
    """Prefill then one decode step through the same RG-LRU, as generation does."""

    def __init__(self, config):
        super().__init__()
        self.rg_lru = RecurrentGemmaRglru(config)

    def forward(self, prompt, position_ids, next_token, next_position):
        self.rg_lru.recurrent_states = None
        prefill = self.rg_lru(prompt, position_ids)
        step = self.rg_lru(next_token, next_position)
        return prefill, step


def make():
    torch.manual_seed(0)
    prompt = torch.randn(1, 4, 8)
    pos = torch.arange(4)[None]
    return DecodeStep(RecurrentGemmaConfig()), [(prompt, pos, torch.randn(1, 1, 8), torch.tensor([[4]])),
                                                (prompt[:, :1], pos[:, :1], torch.randn(1, 1, 8), torch.tensor([[1]]))]


def main():
    model = DecodeStep(RecurrentGemmaConfig())
    model.compile()
    return model
