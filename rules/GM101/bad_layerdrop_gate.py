"""GM101 bad: LayerDrop through a gate, `skip_the_layer = torch.rand([]) < p` then `if not skip_the_layer or synced_gpus:` (wav2vec2, HuBERT)."""
import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, dim=8, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.dropout = dropout

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states = torch.relu(self.fc(hidden_states)) * attention_mask
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        return self.norm(residual + hidden_states)


class Encoder(nn.Module):
    def __init__(self, dim=8, layers=6, layerdrop=0.5):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim) for _ in range(layers))
        self.layerdrop = layerdrop

    def forward(self, inputs_embeds, attention_mask, synced_gpus=False):
        hidden_states = self.embed(inputs_embeds)
        for layer in self.layers:
            skip_the_layer = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_the_layer = dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                # under fsdp or deepspeed zero3 all gpus must run in sync
                hidden_states = layer(hidden_states, attention_mask)
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
