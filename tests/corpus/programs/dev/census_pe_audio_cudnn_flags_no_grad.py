"""PE-Audio encoder runs its DAC codec under `with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/pe_audio/modeling_pe_audio.py:155-180
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): PeAudioModel eval+train,
`modeling_pe_audio.py:171 with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):`.
Kept: the two context managers in one `with`, the codec + bottleneck inside, the projection outside.
Simplified: the DAC encoder is one strided Conv1d.
"""
import torch
from torch import nn


class PeAudioDacEncoderStub(nn.Module):
    def __init__(self, hidden_size=4):
        super().__init__()
        self.conv = nn.Conv1d(1, hidden_size, 4, stride=2)

    def forward(self, x):
        return self.conv(x)


class PeAudioEmbeddings(nn.Module):
    def __init__(self, hidden_size=4, codebook_dim=3, model_dim=6):
        super().__init__()
        self.dac_encoder = PeAudioDacEncoderStub(hidden_size)
        self.bottleneck = nn.Conv1d(hidden_size, codebook_dim, 1)
        self.data_proj = nn.Linear(codebook_dim, model_dim)

    def forward(self, input_values, padding_mask=None):
        with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):
            hidden_states = self.dac_encoder(input_values)
            hidden_states = self.bottleneck(hidden_states)

        codec_features = hidden_states.transpose(1, 2)
        inputs_embeds = self.data_proj(codec_features)
        return inputs_embeds, padding_mask


embed = torch.compile(PeAudioEmbeddings())


def make():
    torch.manual_seed(0)
    return PeAudioEmbeddings(), [(torch.randn(2, 1, 16),)]
