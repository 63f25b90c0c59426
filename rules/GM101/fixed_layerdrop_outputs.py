"""GM101 bad: LayerDrop's `continue` over a layer whose attentions are collected when asked (TrOCR's, LED's decoders)."""
import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, dim=8, dropout=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.dropout = dropout

    def forward(self, hidden_states, attention_mask):
        weights = torch.softmax(self.fc(hidden_states) * attention_mask, dim=-1)
        update = nn.functional.dropout(weights * hidden_states, p=self.dropout, training=self.training)
        return self.norm(hidden_states + update), weights


class Decoder(nn.Module):
    def __init__(self, dim=8, layers=6, layerdrop=0.5):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.layers = nn.ModuleList(DecoderLayer(dim) for _ in range(layers))
        self.layerdrop = layerdrop

    def forward(self, inputs_embeds, attention_mask, output_attentions=False):
        hidden_states = self.embed(inputs_embeds)
        all_self_attns = () if output_attentions else None
        for idx, decoder_layer in enumerate(self.layers):
            _gm_dropped = None
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if torch.compiler.is_compiling() and not output_attentions:
                    _gm_dropped = dropout_probability < self.layerdrop
                    _gm_kept_hidden_states = hidden_states
                elif dropout_probability < self.layerdrop:
                    continue

            layer_outputs = decoder_layer(hidden_states, attention_mask)
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_self_attns += (layer_outputs[1],)
            if _gm_dropped is not None:
                hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)
        return (hidden_states, all_self_attns) if output_attentions else hidden_states


def make():
    """Return (eager_callable, input_sets): a model in train mode, attentions not collected (as when training)."""
    torch.manual_seed(0)
    model = Decoder().train()
    return model, [(torch.randn(2, 5, 8), torch.ones(2, 5, 1))]


compiled = torch.compile(Decoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
