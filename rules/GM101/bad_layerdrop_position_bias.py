"""GM101 bad: WavLM's LayerDrop, `skip_the_layer = torch.rand([]) < p` for every layer but the first, which computes the `position_bias` (`None` before the loop) that the later layers pass on."""
import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, dim=8, length=5, has_relative_position_bias=False, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.rel_bias = nn.Parameter(torch.randn(length, length)) if has_relative_position_bias else None
        self.dropout = dropout

    def forward(self, hidden_states, attention_mask, position_bias=None):
        if position_bias is None:
            position_bias = self.rel_bias.unsqueeze(0).repeat(hidden_states.shape[0], 1, 1)
        residual = hidden_states
        mixed = torch.softmax(position_bias, dim=-1) @ self.fc(hidden_states)
        hidden_states = torch.relu(mixed) * attention_mask
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        return self.norm(residual + hidden_states), position_bias


class Encoder(nn.Module):
    def __init__(self, dim=8, layers=6, layerdrop=0.5):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim, has_relative_position_bias=(i == 0)) for i in range(layers))
        self.layerdrop = layerdrop

    def forward(self, inputs_embeds, attention_mask, synced_gpus=False):
        hidden_states = self.embed(inputs_embeds)
        position_bias = None
        for i, layer in enumerate(self.layers):
            skip_the_layer = False
            if self.training and i > 0 and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_the_layer = dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                hidden_states, position_bias = layer(hidden_states, attention_mask, position_bias=position_bias)
        return hidden_states


def make():
    """Return (eager_callable, input_sets): a model in train mode, so LayerDrop and dropout are on."""
    torch.manual_seed(0)
    model = Encoder().train()
    return model, [(torch.randn(2, 5, 8), torch.ones(2, 5, 1)), (torch.randn(2, 5, 8), torch.ones(2, 5, 1), True)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
