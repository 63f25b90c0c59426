"""Slot attention with the adaptive keep-slot wrapper: iterative GRUCell slot updates, an optional `num_slots` passed through `**slot_kwargs`, and a straight-through gumbel one-hot keep mask (no break expected).

Source: lucidrains/slot-attention@d98bc1717d203b7d1c2b5e56d238a34bf73deae1:slot_attention/slot_attention.py:1-75
Also: slot_attention/adaptive_slot_wrapper.py@e66a1c4c94e5e91e9519213853259e55be3d0132:1-80
Kept: SlotAttention verbatim (the num_slots default, randn slot init, the
iters loop with GRUCell and residual MLP), the wrapper's gumbel_softmax
and forward with **slot_kwargs and the union type annotation.
Simplified: `self.dim = dim` is stored on SlotAttention (the wrapper reads
slot_attn.dim, which later versions of SlotAttention define); an outer
encoder module stands in for the README's image-feature pipeline so that
num_slots reaches the wrapper as a keyword; tiny sizes.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import Module, init
import torch.nn.functional as F


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim, iters = 3, eps = 1e-8, hidden_dim = 128):
        super().__init__()
        self.dim = dim
        self.num_slots = num_slots
        self.iters = iters
        self.eps = eps
        self.scale = dim ** -0.5

        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))

        self.slots_logsigma = nn.Parameter(torch.zeros(1, 1, dim))
        init.xavier_uniform_(self.slots_logsigma)

        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

        self.gru = nn.GRUCell(dim, dim)

        hidden_dim = max(dim, hidden_dim)

        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden_dim),
            nn.ReLU(inplace = True),
            nn.Linear(hidden_dim, dim)
        )

        self.norm_input  = nn.LayerNorm(dim)
        self.norm_slots  = nn.LayerNorm(dim)
        self.norm_pre_ff = nn.LayerNorm(dim)

    def forward(self, inputs, num_slots = None):
        b, n, d, device, dtype = *inputs.shape, inputs.device, inputs.dtype
        n_s = num_slots if num_slots is not None else self.num_slots

        mu = self.slots_mu.expand(b, n_s, -1)
        sigma = self.slots_logsigma.exp().expand(b, n_s, -1)

        slots = mu + sigma * torch.randn(mu.shape, device = device, dtype = dtype)

        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)

        for _ in range(self.iters):
            slots_prev = slots

            slots = self.norm_slots(slots)
            q = self.to_q(slots)

            dots = torch.einsum('bid,bjd->bij', q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps

            attn = attn / attn.sum(dim=-1, keepdim=True)

            updates = torch.einsum('bjd,bij->bid', v, attn)

            slots = self.gru(
                updates.reshape(-1, d),
                slots_prev.reshape(-1, d)
            )

            slots = slots.reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_pre_ff(slots))

        return slots

# functions

def log(t, eps = 1e-20):
    return torch.log(t.clamp(min = eps))

def gumbel_noise(t):
    noise = torch.rand_like(t)
    return -log(-log(noise))

def gumbel_softmax(logits, temperature = 1.):
    dtype, size = logits.dtype, logits.shape[-1]

    assert temperature > 0

    scaled_logits = logits / temperature

    # gumbel sampling and derive one hot

    noised_logits = scaled_logits + gumbel_noise(scaled_logits)

    indices = noised_logits.argmax(dim = -1)

    hard_one_hot = F.one_hot(indices, size).type(dtype)

    # get soft for gradients

    soft = scaled_logits.softmax(dim = -1)

    # straight through

    hard_one_hot = hard_one_hot + soft - soft.detach()

    # return indices and one hot

    return hard_one_hot, indices

# wrapper

class AdaptiveSlotWrapper(Module):
    def __init__(
        self,
        slot_attn: SlotAttention,
        temperature = 1.
    ):
        super().__init__()

        self.slot_attn = slot_attn
        dim = slot_attn.dim

        self.temperature = temperature
        self.pred_keep_slot = nn.Linear(dim, 2, bias = False)

    def forward(
        self,
        x,
        **slot_kwargs
    ):

        slots = self.slot_attn(x, **slot_kwargs)

        keep_slot_logits = self.pred_keep_slot(slots)

        keep_slots, _ = gumbel_softmax(keep_slot_logits, temperature = self.temperature)

        # just use last column for "keep" mask

        keep_slots = keep_slots[..., -1]  # Float["batch num_slots"] of {0., 1.}

        return slots, keep_slots


class SlotEncoder(Module):
    def __init__(self, dim: int, num_slots: int):
        super().__init__()
        self.adaptive = AdaptiveSlotWrapper(SlotAttention(num_slots = num_slots, dim = dim, iters = 3, hidden_dim = 16))

    def forward(self, features, num_slots: int | None = None):
        slots, keep_slots = self.adaptive(features, num_slots = num_slots)
        return slots * keep_slots[..., None]


encoder = SlotEncoder(dim = 8, num_slots = 4)
encoder.compile()


def make():
    torch.manual_seed(0)
    model = SlotEncoder(dim = 8, num_slots = 4)
    features = torch.randn(2, 10, 8)
    return model, [(features,), (features, 6)]
