"""GM101 bad: LayerDrop gated in its own test, `if self.training and (torch.rand([]) < p): continue` (FSMT's encoder)."""
import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, dim=8, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.dropout = dropout

    def forward(self, x, attention_mask):
        residual = x
        x = nn.functional.dropout(torch.relu(self.fc(x)) * attention_mask, p=self.dropout, training=self.training)
        return self.norm(residual + x)


class Encoder(nn.Module):
    def __init__(self, dim=8, layers=6, layerdrop=0.5):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim) for _ in range(layers))
        self.layerdrop = layerdrop

    def forward(self, inputs_embeds, attention_mask):
        x = self.embed(inputs_embeds)
        for idx, encoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            dropout_probability = torch.rand([])
            if self.training and (dropout_probability < self.layerdrop):  # skip the layer
                continue
            x = encoder_layer(x, attention_mask)
        return x


def make():
    """Return (eager_callable, input_sets): a model in train mode, so LayerDrop and dropout are on."""
    torch.manual_seed(0)
    model = Encoder().train()
    return model, [(torch.randn(2, 5, 8), torch.ones(2, 5, 1))]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
