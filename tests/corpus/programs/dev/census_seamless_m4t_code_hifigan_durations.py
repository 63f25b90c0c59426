"""SeamlessM4T code-HiFiGAN: predicted durations drive `torch.repeat_interleave` (tensor repeats), and a
batched training call logs a `logger.warning` first.

Source: huggingface/transformers@v5.23.0:src/transformers/models/seamless_m4t/modeling_seamless_m4t.py:2214-2245
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): SeamlessM4TModel eval+train,
`modeling_seamless_m4t.py:3735 logger.warning(` (the same module logs from forward).
Kept: unit/speaker/language embeddings, the duration predictor rounding/clamp, the batch-of-one vs batched
branches (warning under `self.training`, per-sample repeat_interleave and pad_sequence), the concat.
Simplified: the duration predictor is a Linear, HiFi-GAN is a Conv1d, output lengths are not computed.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class SeamlessM4TCodeHifiGan(nn.Module):
    def __init__(self, unit_vocab=10, dim=4):
        super().__init__()
        self.unit_embedding = nn.Embedding(unit_vocab, dim)
        self.speaker_embedding = nn.Embedding(3, dim)
        self.language_embedding = nn.Embedding(3, dim)
        self.dur_predictor = nn.Linear(dim, 1)
        self.hifi_gan = nn.Conv1d(3 * dim, 1, 3, padding=1)

    def forward(self, input_ids, spkr_id, lang_id):
        hidden_states = self.unit_embedding(input_ids).transpose(1, 2)
        spkr = self.speaker_embedding(spkr_id).transpose(1, 2)
        lang = self.language_embedding(lang_id).transpose(1, 2)

        log_dur_pred = self.dur_predictor(hidden_states.transpose(1, 2)).squeeze(-1)
        dur_out = torch.clamp(torch.round(torch.expm1(log_dur_pred)).long(), min=1)
        # B x C x T
        if hidden_states.size(0) == 1:
            hidden_states = torch.repeat_interleave(hidden_states, dur_out.view(-1), dim=2)
        else:
            # if batched sample, need to interleave per sample, and pad -> loss of parallelism
            if hidden_states.shape[0] > 1 and self.training:
                logger.warning(
                    """`self.training=True` and you use batching. You lose parallelism during the hifigan
                               forward pass because the samples are interleaved."""
                )
            hidden_states = [
                torch.repeat_interleave(hidden_state, duration, dim=-1).transpose(0, 1)
                for (hidden_state, duration) in zip(hidden_states, dur_out)
            ]

            hidden_states = nn.utils.rnn.pad_sequence(hidden_states, batch_first=True).transpose(1, 2)

        spkr = spkr.repeat(1, 1, hidden_states.shape[-1])
        lang = lang.repeat(1, 1, hidden_states.shape[-1])
        hidden_states = torch.cat([lang, hidden_states, spkr], dim=1)
        return self.hifi_gan(hidden_states)


vocoder = torch.compile(SeamlessM4TCodeHifiGan().train())


def make():
    torch.manual_seed(0)
    return SeamlessM4TCodeHifiGan().train(), [
        (torch.tensor([[1, 2, 3]]), torch.tensor([[0]]), torch.tensor([[1]])),
        (torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([[0], [1]]), torch.tensor([[1], [2]])),
    ]
