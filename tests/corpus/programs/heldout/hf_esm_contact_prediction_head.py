"""ESM contact prediction head: eos mask removal by broadcasting, symmetrize and average-product correction (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/esm/modeling_esm.py:88-102,155-187
Kept: symmetrize, average_product_correct (in-place div_), and the head's
forward: eos mask from `tokens.ne(self.eos_idx)`, the two mask products that
drop eos positions, slicing off bos/eos, the attention reshape, the regression
and sigmoid.
Simplified: 2 layers x 2 heads of attention maps over 6 tokens.
"""
import torch
from torch import nn


def symmetrize(x):
    "Make layer symmetric in final two dimensions, used for contact prediction."
    return x + x.transpose(-1, -2)


def average_product_correct(x):
    "Perform average product correct, used for contact prediction."
    a1 = x.sum(-1, keepdims=True)
    a2 = x.sum(-2, keepdims=True)
    a12 = x.sum((-1, -2), keepdims=True)
    avg = a1 * a2
    avg.div_(a12)
    normalized = x - avg
    return normalized


class EsmContactPredictionHead(nn.Module):
    def __init__(self, in_features: int, bias=True, eos_idx: int = 2):
        super().__init__()
        self.in_features = in_features
        self.eos_idx = eos_idx
        self.regression = nn.Linear(in_features, 1, bias)
        self.activation = nn.Sigmoid()

    def forward(self, tokens, attentions):
        eos_mask = tokens.ne(self.eos_idx).to(attentions)
        eos_mask = eos_mask.unsqueeze(1) * eos_mask.unsqueeze(2)
        attentions = attentions * eos_mask[:, None, None, :, :]
        attentions = attentions[..., :-1, :-1]
        attentions = attentions[..., 1:, 1:]
        batch_size, layers, heads, seqlen, _ = attentions.size()
        attentions = attentions.view(batch_size, layers * heads, seqlen, seqlen)
        attentions = attentions.to(self.regression.weight.device)
        attentions = average_product_correct(symmetrize(attentions))
        attentions = attentions.permute(0, 2, 3, 1)
        return self.activation(self.regression(attentions).squeeze(3))


contact_head = torch.compile(EsmContactPredictionHead(4))


def make():
    torch.manual_seed(0)
    return EsmContactPredictionHead(4), [(torch.tensor([[0, 5, 6, 7, 8, 2]]), torch.rand(1, 2, 2, 6, 6))]
