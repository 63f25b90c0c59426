"""Parakeet RNN-T decoder at v5.23: `if cache.is_initialized and blank_mask.all(): return cache.cache`, then an nn.LSTM step.

Source: huggingface/transformers@v5.23.0:src/transformers/models/parakeet/modeling_parakeet.py:800-856; src/transformers/models/parakeet/generation_parakeet.py:23-60
Kept: ParakeetRNNTDecoderCache verbatim (lazy zeros with mark_static_address,
update with the masked torch.where path), and the decoder forward: the
all-blank fast path on a tensor .all(), embedding, the cached (h, c) handoff,
the LSTM, the projector, the cache update with `~blank_mask`.
Simplified: vocab 6 with blank id 5; hidden 4, 1 layer.
"""
import torch
from torch import nn


class ParakeetRNNTDecoderCache:

    def __init__(self, config):
        self.config = config
        self.cache: torch.Tensor | None = None
        self.hidden_state: torch.Tensor | None = None
        self.cell_state: torch.Tensor | None = None
        self.is_initialized: bool = False

    def lazy_initialization(self, hidden_states):
        self.cache = torch.zeros(hidden_states.shape[0], 1, self.config.decoder_hidden_size, device=hidden_states.device, dtype=hidden_states.dtype)
        self.hidden_state = torch.zeros(self.config.num_decoder_layers, hidden_states.shape[0], self.config.decoder_hidden_size, device=hidden_states.device, dtype=hidden_states.dtype)
        self.cell_state = torch.zeros(self.config.num_decoder_layers, hidden_states.shape[0], self.config.decoder_hidden_size, device=hidden_states.device, dtype=hidden_states.dtype)
        torch._dynamo.mark_static_address(self.cache)
        torch._dynamo.mark_static_address(self.hidden_state)
        torch._dynamo.mark_static_address(self.cell_state)
        self.is_initialized = True

    def update(self, decoder_output, hidden_state, cell_state, mask=None):
        if not self.is_initialized:
            self.lazy_initialization(decoder_output)
        if mask is None:
            self.hidden_state.copy_(hidden_state)
            self.cell_state.copy_(cell_state)
            self.cache.copy_(decoder_output)
        else:
            mask = mask.to(decoder_output.device)
            batch_size = decoder_output.shape[0]
            mask_h = mask.view(1, batch_size, 1)
            mask_d = mask.view(batch_size, 1, 1)
            self.cache = torch.where(mask_d, decoder_output, self.cache)
            self.hidden_state = torch.where(mask_h, hidden_state, self.hidden_state)
            self.cell_state = torch.where(mask_h, cell_state, self.cell_state)



class Config:
    decoder_hidden_size = 4
    num_decoder_layers = 1


class ParakeetRNNTDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.blank_token_id = 5
        self.embedding = nn.Embedding(6, config.decoder_hidden_size)
        self.lstm = nn.LSTM(input_size=config.decoder_hidden_size, hidden_size=config.decoder_hidden_size, num_layers=config.num_decoder_layers, batch_first=True)
        self.decoder_projector = nn.Linear(config.decoder_hidden_size, config.decoder_hidden_size)

    def forward(self, input_ids, cache=None):
        if cache is not None:
            blank_mask = input_ids[:, -1] == self.blank_token_id
            if cache.is_initialized and blank_mask.all():
                return cache.cache
        embeddings = self.embedding(input_ids)
        if cache is not None:
            was_initialized = cache.is_initialized
            if not was_initialized:
                cache.lazy_initialization(embeddings)
            hidden_cell_states = (cache.hidden_state, cache.cell_state)
        else:
            hidden_cell_states = None
        lstm_output, (hidden_state, cell_state) = self.lstm(embeddings, hidden_cell_states)
        decoder_output = self.decoder_projector(lstm_output)
        if cache is not None:
            mask = ~blank_mask if was_initialized else None
            cache.update(decoder_output, hidden_state, cell_state, mask=mask)
            return cache.cache
        return decoder_output


decoder = torch.compile(ParakeetRNNTDecoder(Config()))


def make():
    torch.manual_seed(0)
    warm = ParakeetRNNTDecoderCache(Config())
    warm.lazy_initialization(torch.zeros(2, 1, 4))
    blank = ParakeetRNNTDecoderCache(Config())
    blank.lazy_initialization(torch.zeros(2, 1, 4))
    return ParakeetRNNTDecoder(Config()), [
        (torch.tensor([[1], [2]]),),
        (torch.tensor([[1], [5]]), warm),
        (torch.tensor([[5], [5]]), blank),
    ]
