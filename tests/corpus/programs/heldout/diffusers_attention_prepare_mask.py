"""diffusers Attention.prepare_attention_mask: pad to target length on shape ints, repeat_interleave by head count (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/attention_processor.py:632-657,706-755
Kept: the None early return, current_length vs target_length with the mps
device branch, F.pad, the out_dim 3 / 4 variants with repeat_interleave and
output_size, head_to_batch_dim, and an AttnProcessor-style use with baddbmm.
Simplified: 2 heads, head dim 2, one attention block.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, query_dim=4, heads=2):
        super().__init__()
        self.heads = heads
        self.scale = (query_dim // heads) ** -0.5
        self.to_q = nn.Linear(query_dim, query_dim)
        self.to_k = nn.Linear(query_dim, query_dim)
        self.to_v = nn.Linear(query_dim, query_dim)

    def head_to_batch_dim(self, tensor, out_dim=3):
        head_size = self.heads
        if tensor.ndim == 3:
            batch_size, seq_len, dim = tensor.shape
            extra_dim = 1
        else:
            batch_size, extra_dim, seq_len, dim = tensor.shape
        tensor = tensor.reshape(batch_size, seq_len * extra_dim, head_size, dim // head_size)
        tensor = tensor.permute(0, 2, 1, 3)
        if out_dim == 3:
            tensor = tensor.reshape(batch_size * head_size, seq_len * extra_dim, dim // head_size)
        return tensor

    def prepare_attention_mask(self, attention_mask, target_length: int, batch_size: int, out_dim: int = 3):
        head_size = self.heads
        if attention_mask is None:
            return attention_mask
        current_length: int = attention_mask.shape[-1]
        if current_length != target_length:
            if attention_mask.device.type == "mps":
                padding_shape = (attention_mask.shape[0], attention_mask.shape[1], target_length)
                padding = torch.zeros(padding_shape, dtype=attention_mask.dtype, device=attention_mask.device)
                attention_mask = torch.cat([attention_mask, padding], dim=2)
            else:
                attention_mask = F.pad(attention_mask, (0, target_length), value=0.0)
        if out_dim == 3:
            if attention_mask.shape[0] < batch_size * head_size:
                attention_mask = attention_mask.repeat_interleave(head_size, dim=0, output_size=attention_mask.shape[0] * head_size)
        elif out_dim == 4:
            attention_mask = attention_mask.unsqueeze(1)
            attention_mask = attention_mask.repeat_interleave(head_size, dim=1, output_size=attention_mask.shape[1] * head_size)
        return attention_mask

    def forward(self, hidden_states, encoder_hidden_states, attention_mask=None):
        batch_size, sequence_length, _ = encoder_hidden_states.shape
        attention_mask = self.prepare_attention_mask(attention_mask, sequence_length, batch_size)
        query = self.head_to_batch_dim(self.to_q(hidden_states))
        key = self.head_to_batch_dim(self.to_k(encoder_hidden_states))
        value = self.head_to_batch_dim(self.to_v(encoder_hidden_states))
        if attention_mask is None:
            baddbmm_input = torch.empty(query.shape[0], query.shape[1], key.shape[1], dtype=query.dtype)
            beta = 0
        else:
            baddbmm_input = attention_mask
            beta = 1
        scores = torch.baddbmm(baddbmm_input, query, key.transpose(-1, -2), beta=beta, alpha=self.scale)
        return torch.bmm(scores.softmax(dim=-1), value)


attn = Attention()
attn = torch.compile(attn, fullgraph=True)


def make():
    torch.manual_seed(0)
    h, enc = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    return Attention(), [(h, enc), (h, enc, torch.zeros(2, 1, 5))]
