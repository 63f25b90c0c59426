"""Moshi depth decoder: per-codebook embedding chosen by iterating the `codebook_idx` tensor and calling `.item()` on each position.

Source: huggingface/transformers@v5.23.0:src/transformers/models/moshi/modeling_moshi.py:208-246,573-610,673-735
Kept: MoshiFlexibleLinear (index_select of per-codebook weights),
MoshiDepthDecoder.__init__'s text/audio embeddings and flexible projections,
and forward's `past_seen_tokens` / `codebook_idx` computation, the embedding
loop over `codebook_idx` with `position_idx.item()`, `input_projections`,
the layer loop, `lm_heads(hidden_states, codebook_idx)` and the masked-fill
label loss.
Simplified: the cache is a tiny object with `get_seq_length()`; decoder layers
are a flexible-linear MLP without attention; no causal mask; tuple return.
"""
import torch
from torch import nn
from torch.nn import CrossEntropyLoss


class MoshiDepthConfig:
    vocab_size = 12
    audio_vocab_size = 10
    hidden_size = 8
    input_size = 6
    num_codebooks = 3
    num_hidden_layers = 1


class SeenTokens:
    """Stands in for the DynamicCache: only its length is read here."""

    def __init__(self, seen):
        self.seen = seen

    def get_seq_length(self):
        return self.seen


class MoshiFlexibleLinear(nn.Module):
    def __init__(self, input_size, output_size, num_layers):
        super().__init__()
        # Stack the weights for N layers into a single tensor (num_layers, output_size, input_size)
        self.weight = nn.Parameter(torch.randn(num_layers, output_size, input_size))

    def forward(self, x, layer_idx=None):
        selected_weights = torch.index_select(self.weight, 0, layer_idx) if layer_idx is not None else self.weight

        # (1, codebooks, hidden_size, output_size)
        selected_weights = selected_weights.transpose(1, 2)[None, :, :, :]

        # (batch_size, codebooks, 1, hidden_size) x (1, codebooks, hidden_size, output_size)
        x = torch.matmul(x[:, :, None, :], selected_weights)

        return x.squeeze(2)


class MoshiDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc1 = MoshiFlexibleLinear(config.hidden_size, 2 * config.hidden_size, config.num_codebooks)
        self.fc2 = MoshiFlexibleLinear(2 * config.hidden_size, config.hidden_size, config.num_codebooks)

    def forward(self, hidden_states, codebook_idx=None):
        residual = hidden_states
        hidden_states = self.fc2(nn.functional.gelu(self.fc1(hidden_states, codebook_idx)), codebook_idx)
        return residual + hidden_states


class MoshiDepthDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.text_embed_tokens = nn.Embedding(config.vocab_size + 1, config.hidden_size)

        # the last codebook is never used as input
        self.embed_tokens = nn.ModuleList(
            [nn.Embedding(config.audio_vocab_size + 1, config.hidden_size) for _ in range(config.num_codebooks - 1)]
        )

        self.input_projections = MoshiFlexibleLinear(config.input_size, config.hidden_size, config.num_codebooks)
        self.layers = nn.ModuleList([MoshiDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.lm_heads = MoshiFlexibleLinear(config.hidden_size, config.audio_vocab_size, config.num_codebooks)

    def forward(self, input_ids=None, last_hidden_state=None, past_key_values=None, inputs_embeds=None, labels=None):
        past_seen_tokens = 0 if past_key_values is None else past_key_values.get_seq_length()
        codebook_idx = torch.arange(input_ids.shape[1], device=input_ids.device) + past_seen_tokens

        # If inputs_embeds is provided, it has the priority over input_ids, which won't be used
        if inputs_embeds is None:
            inputs_embeds = []
            for position_idx in codebook_idx:
                position_idx = position_idx.item()
                if position_idx == 0:
                    inputs_embeds.append(self.text_embed_tokens(input_ids[:, [position_idx]]))
                else:
                    inputs_embeds.append(
                        self.embed_tokens[(position_idx - 1)](input_ids[:, [position_idx - past_seen_tokens]])
                    )

            inputs_embeds = torch.cat(inputs_embeds, dim=1)

        inputs_embeds += self.input_projections(last_hidden_state, codebook_idx)

        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, codebook_idx=codebook_idx)

        logits = self.lm_heads(hidden_states, codebook_idx)

        loss = None
        if labels is not None:
            logits = logits.float()
            loss_fct = CrossEntropyLoss()

            labels = labels.masked_fill(labels == self.config.audio_vocab_size, -100).reshape(-1)
            labels = labels.to(logits.device)
            loss = loss_fct(logits.reshape(-1, self.config.audio_vocab_size), labels)

        return (loss, logits) if loss is not None else (logits,)


depth_decoder = MoshiDepthDecoder(MoshiDepthConfig())
depth_decoder.compile()


def make():
    torch.manual_seed(0)
    cfg = MoshiDepthConfig()
    model = MoshiDepthDecoder(cfg)
    ids = torch.tensor([[3, 4, 5]])
    last_hidden = torch.randn(1, 3, cfg.input_size)
    labels = torch.tensor([[4, 10, 2]])
    embeds = torch.randn(1, 3, cfg.hidden_size)
    return model, [
        (ids, last_hidden, None, None, labels),
        (ids[:, :1], last_hidden[:, :1], SeenTokens(2)),
        (ids, last_hidden, None, embeds),
    ]
