"""flash-attention's BERT encoder: `unpad_input` drops padding with `torch.nonzero` on the mask and returns `seqlens_in_batch.max().item()` as `max_seqlen`.

Source: Dao-AILab/flash-attention@2d64d7a52cc87d491bbe159b68263589780c40ed:flash_attn/bert_padding.py:1-60,99-127,201-215 (BertEncoder from flash_attn/models/bert.py)
Kept: IndexFirstAxis / IndexPutFirstAxis autograd Functions with their
backward, unpad_input's tuple return (hidden states, indices, cu_seqlens,
max_seqlen_in_batch), pad_input, and the encoder that unpads, runs its layers
with mixer_kwargs={"cu_seqlens", "max_seqlen"} and pads back.
Simplified: einops rearrange/repeat written as reshape/expand; the varlen
attention mixer is a per-token MLP block that only checks the kwargs; 2
layers of width 8.
"""
import torch
import torch.nn.functional as F
from torch import nn


class IndexFirstAxis(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, indices):
        ctx.save_for_backward(indices)
        assert input.ndim >= 2
        ctx.first_axis_dim, other_shape = input.shape[0], input.shape[1:]
        second_dim = other_shape.numel()
        # torch.gather is a bit faster than indexing.
        return torch.gather(
            input.reshape(input.shape[0], -1), 0, indices.unsqueeze(1).expand(-1, second_dim)
        ).reshape(-1, *other_shape)

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        assert grad_output.ndim >= 2
        other_shape = grad_output.shape[1:]
        grad_output = grad_output.reshape(grad_output.shape[0], -1)
        grad_input = torch.zeros(
            [ctx.first_axis_dim, grad_output.shape[1]],
            device=grad_output.device,
            dtype=grad_output.dtype,
        )
        grad_input.scatter_(0, indices.unsqueeze(1).expand(-1, grad_output.shape[1]), grad_output)
        return grad_input.reshape(ctx.first_axis_dim, *other_shape), None


index_first_axis = IndexFirstAxis.apply


class IndexPutFirstAxis(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, indices, first_axis_dim):
        ctx.save_for_backward(indices)
        assert indices.ndim == 1
        assert values.ndim >= 2
        output = torch.zeros(
            first_axis_dim, *values.shape[1:], device=values.device, dtype=values.dtype
        )
        output[indices] = values
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        grad_values = grad_output[indices]
        return grad_values, None, None


index_put_first_axis = IndexPutFirstAxis.apply


def unpad_input(hidden_states, attention_mask):
    """
    Return:
        hidden_states: (total_nnz, ...), indices: (total_nnz), cu_seqlens: (batch + 1),
        max_seqlen_in_batch: int
    """
    seqlens_in_batch = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten()
    max_seqlen_in_batch = seqlens_in_batch.max().item()
    cu_seqlens = F.pad(torch.cumsum(seqlens_in_batch, dim=0, dtype=torch.torch.int32), (1, 0))
    return (
        index_first_axis(hidden_states.reshape(-1, *hidden_states.shape[2:]), indices),
        indices,
        cu_seqlens,
        max_seqlen_in_batch,
    )


def pad_input(hidden_states, indices, batch, seqlen):
    output = index_put_first_axis(hidden_states, indices, batch * seqlen)
    return output.reshape(batch, seqlen, *output.shape[1:])


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.mixer = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, hidden_states, mixer_kwargs=None):
        if mixer_kwargs is not None:
            assert mixer_kwargs["cu_seqlens"].shape[0] >= 2
        hidden_states = self.norm1(hidden_states + self.mixer(hidden_states))
        return self.norm2(hidden_states + self.mlp(hidden_states))


class BertEncoder(nn.Module):
    def __init__(self, dim=8, num_layers=2):
        super().__init__()
        self.layers = nn.ModuleList([Block(dim) for _ in range(num_layers)])

    def forward(self, hidden_states, key_padding_mask=None):
        if key_padding_mask is None:
            for layer in self.layers:
                hidden_states = layer(hidden_states)
        else:
            batch, seqlen = hidden_states.shape[:2]
            hidden_states, indices, cu_seqlens, max_seqlen_in_batch = unpad_input(
                hidden_states, key_padding_mask
            )
            mixer_kwargs = {"cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen_in_batch}
            for layer in self.layers:
                hidden_states = layer(hidden_states, mixer_kwargs=mixer_kwargs)
            hidden_states = pad_input(hidden_states, indices, batch, seqlen)
        return hidden_states


encoder = torch.compile(BertEncoder())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    return BertEncoder(), [(x,), (x, mask)]
