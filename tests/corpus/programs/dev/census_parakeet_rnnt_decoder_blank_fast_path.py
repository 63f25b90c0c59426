"""Parakeet RNN-T prediction network: `if cache.is_initialized and blank_mask.all(): return cache.cache` (all-blank
fast path), an `nn.LSTM` call, and a masked cache update with `torch.where`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/parakeet/modeling_parakeet.py:811-857
(ParakeetRNNTDecoder) and models/parakeet/generation_parakeet.py:23-82 (ParakeetRNNTDecoderCache)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): CohereAsrModel (Parakeet encoder) train
LayerDrop; the RNN-T decoder is the generation-time module of the same family.
Kept: the decoder forward verbatim, the cache's lazy initialization (zeros + mark_static_address) and update
(copy_ or per-batch torch.where).
Simplified: 1 LSTM layer, hidden 4, vocab 6 (blank id 5).
"""
import torch
from torch import nn


class ParakeetRNNTConfig:
    blank_token_id = 5
    vocab_size = 6
    decoder_hidden_size = 4
    num_decoder_layers = 1


class ParakeetRNNTDecoderCache:
    def __init__(self, config):
        self.config = config
        self.cache = None
        self.hidden_state = None
        self.cell_state = None
        self.is_initialized = False

    def lazy_initialization(self, hidden_states):
        self.cache = torch.zeros(
            hidden_states.shape[0], 1, self.config.decoder_hidden_size,
            device=hidden_states.device, dtype=hidden_states.dtype,
        )
        self.hidden_state = torch.zeros(
            self.config.num_decoder_layers, hidden_states.shape[0], self.config.decoder_hidden_size,
            device=hidden_states.device, dtype=hidden_states.dtype,
        )
        self.cell_state = torch.zeros(
            self.config.num_decoder_layers, hidden_states.shape[0], self.config.decoder_hidden_size,
            device=hidden_states.device, dtype=hidden_states.dtype,
        )
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
            # Mask to update specific batch elements
            mask = mask.to(decoder_output.device)
            batch_size = decoder_output.shape[0]
            mask_h = mask.view(1, batch_size, 1)
            mask_d = mask.view(batch_size, 1, 1)
            self.cache = torch.where(mask_d, decoder_output, self.cache)
            self.hidden_state = torch.where(mask_h, hidden_state, self.hidden_state)
            self.cell_state = torch.where(mask_h, cell_state, self.cell_state)


class ParakeetRNNTDecoder(nn.Module):
    """LSTM-based prediction network For RNN-T"""

    def __init__(self, config):
        super().__init__()
        self.blank_token_id = config.blank_token_id
        self.embedding = nn.Embedding(config.vocab_size, config.decoder_hidden_size)
        self.lstm = nn.LSTM(
            input_size=config.decoder_hidden_size,
            hidden_size=config.decoder_hidden_size,
            num_layers=config.num_decoder_layers,
            batch_first=True,
        )
        self.decoder_projector = nn.Linear(config.decoder_hidden_size, config.decoder_hidden_size)

    def forward(self, input_ids, cache=None):
        if cache is not None:
            blank_mask = input_ids[:, -1] == self.blank_token_id
            # All-blank fast path: skip decoder when all batch elements predict blank
            if cache.is_initialized and blank_mask.all():
                return cache.cache

        embeddings = self.embedding(input_ids)

        # Get cached hidden/cell states if available, otherwise initialize with ParakeetRNNTDecoderCache
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


decoder = torch.compile(ParakeetRNNTDecoder(ParakeetRNNTConfig()))


def _warm_cache():
    cache = ParakeetRNNTDecoderCache(ParakeetRNNTConfig())
    cache.lazy_initialization(torch.zeros(2, 1, 4))
    return cache


def make():
    torch.manual_seed(0)
    return ParakeetRNNTDecoder(ParakeetRNNTConfig()), [
        (torch.tensor([[1], [2]]),),
        (torch.tensor([[1], [2]]), ParakeetRNNTDecoderCache(ParakeetRNNTConfig())),
        (torch.tensor([[5], [5]]), _warm_cache()),
        (torch.tensor([[5], [3]]), _warm_cache()),
    ]
