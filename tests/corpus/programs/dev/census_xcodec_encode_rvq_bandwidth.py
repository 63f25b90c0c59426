"""Xcodec codec forward: bandwidth validated against `config.target_bandwidths`, semantic features averaged
over the hidden states of a frozen model run under `torch.no_grad()`, acoustic/semantic frame-count check,
residual vector quantization with a bandwidth-derived quantizer count, and decode trimmed to the input length.

Source: huggingface/transformers@18e2c4e71b45cffe0c7233ee5250f5200607f955:src/transformers/models/xcodec/modeling_xcodec.py:ResidualUnit, SemanticEncoderBlock, SemanticEncoder, XcodecEuclideanCodebook, XcodecVectorQuantization, XcodecResidualVectorQuantization, XcodecModel._extract_semantic_features/encode/decode/forward
Census: penguinwu/oss-model-graph-break-corpus lists XcodecModel with a skipped function call.
Kept: the semantic encoder blocks, the codebook/VQ/RVQ classes (get_num_quantizers_for_bandwidth with
math.floor), XcodecModel.encode/decode/forward with their validation and return_dict plumbing (including
`self.decode(...)[0]`).
Simplified: the semantic model (HuBERT) and the DAC acoustic encoder/decoder, built with AutoModel from other
files, are small conv stand-ins with the same call shapes; sizes shrunk (hidden 8, codebook 16, 3 quantizers).
"""
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class XcodecConfig:
    semantic_hidden_size = 4
    acoustic_hidden_size = 4
    hidden_size = 8
    kernel_size = 3
    unit_kernel_size = 3
    strides = [1, 1]
    channel_ratios = [1, 1]
    block_dilations = [1, 1]
    codebook_size = 16
    codebook_dim = 8
    num_quantizers = 3
    frame_rate = 50
    hop_length = 8
    target_bandwidths = [0.5, 1.0, 1.5]
    return_dict = True


class ResidualUnit(nn.Module):
    def __init__(self, config, in_channels: int, out_channels: int, dilation: int):
        super().__init__()
        self.activation = nn.ELU()
        padding = ((config.unit_kernel_size - 1) // 2) * dilation
        self.conv1 = nn.Conv1d(
            in_channels,
            out_channels,
            config.unit_kernel_size,
            stride=1,
            padding=padding,
            dilation=dilation,
            groups=1,
            bias=False,
        )
        self.conv2 = nn.Conv1d(in_channels=out_channels, out_channels=out_channels, kernel_size=1, bias=False)

    def forward(self, hidden_state: torch.Tensor) -> torch.Tensor:
        output_tensor = self.activation(hidden_state)
        output_tensor = self.conv1(output_tensor)
        output_tensor = self.activation(output_tensor)
        output_tensor = self.conv2(output_tensor)
        return hidden_state + output_tensor


class SemanticEncoderBlock(nn.Module):
    def __init__(self, config, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.res_units = nn.ModuleList(
            [ResidualUnit(config, in_channels, in_channels, dilation) for dilation in config.block_dilations]
        )

        # special case: stride=1, do not use kernel=2
        kernel = 3 if stride == 1 else (2 * stride)
        padding = (kernel - 1) // 2
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=kernel, stride=stride, padding=padding, bias=True)

    def forward(self, hidden_state: torch.Tensor) -> torch.Tensor:
        for unit in self.res_units:
            hidden_state = unit(hidden_state)
        hidden_state = self.conv(hidden_state)
        return hidden_state


class SemanticEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        if len(config.strides) != len(config.channel_ratios):
            raise ValueError("Number of strides must match the number of channel_ratios.")
        self.conv = nn.Conv1d(
            config.semantic_hidden_size,
            config.semantic_hidden_size,
            config.kernel_size,
            1,
            config.kernel_size // 2,
            bias=False,
        )

        in_channels = config.semantic_hidden_size
        conv_blocks = []
        for i, stride in enumerate(config.strides):
            out_channels = int(config.semantic_hidden_size * config.channel_ratios[i])
            conv_blocks += [SemanticEncoderBlock(config, in_channels, out_channels, stride)]
            in_channels = out_channels

        self.conv_blocks = nn.ModuleList(conv_blocks)

    def forward(self, hidden_state: torch.Tensor) -> torch.Tensor:
        hidden_state = self.conv(hidden_state)
        for block in self.conv_blocks:
            hidden_state = block(hidden_state)
        return hidden_state


class XcodecEuclideanCodebook(nn.Module):
    """Codebook with Euclidean distance."""

    def __init__(self, config):
        super().__init__()
        embed = torch.randn(config.codebook_size, config.codebook_dim)
        self.codebook_size = config.codebook_size
        self.register_buffer("inited", torch.Tensor([True]))
        self.register_buffer("cluster_size", torch.zeros(config.codebook_size))
        self.register_buffer("embed", embed)
        self.register_buffer("embed_avg", embed.clone())

    def quantize(self, hidden_states):
        embed = self.embed.t()
        scaled_states = hidden_states.pow(2).sum(1, keepdim=True)
        dist = -(scaled_states - 2 * hidden_states @ embed + embed.pow(2).sum(0, keepdim=True))
        embed_ind = dist.max(dim=-1).indices
        return embed_ind

    def encode(self, hidden_states):
        shape = hidden_states.shape
        hidden_states = hidden_states.reshape((-1, shape[-1]))
        embed_ind = self.quantize(hidden_states)
        embed_ind = embed_ind.view(*shape[:-1])
        return embed_ind

    def decode(self, embed_ind):
        quantized = F.embedding(embed_ind, self.embed)
        return quantized


class XcodecVectorQuantization(nn.Module):
    """
    Vector quantization implementation. Currently supports only euclidean distance.
    """

    def __init__(self, config):
        super().__init__()
        self.codebook = XcodecEuclideanCodebook(config)

    def encode(self, hidden_states):
        hidden_states = hidden_states.permute(0, 2, 1)
        embed_in = self.codebook.encode(hidden_states)
        return embed_in

    def decode(self, embed_ind):
        quantize = self.codebook.decode(embed_ind)
        quantize = quantize.permute(0, 2, 1)
        return quantize


class XcodecResidualVectorQuantization(nn.Module):
    """
    Residual vector quantization implementation. Follows Algorithm 1 in https://huggingface.co/papers/2107.03312
    """

    def __init__(self, config):
        super().__init__()
        self.quantizers = nn.ModuleList([XcodecVectorQuantization(config) for _ in range(config.num_quantizers)])
        self.frame_rate = config.frame_rate
        self.codebook_size = config.codebook_size
        self.num_quantizers = config.num_quantizers

    def get_bandwidth_per_quantizer(self):
        """Return bandwidth per quantizer."""
        return math.log2(self.codebook_size) * self.frame_rate / 1000

    def get_num_quantizers_for_bandwidth(self, bandwidth=None) -> int:
        """Return num_quantizers based on specified target bandwidth."""
        bw_per_q = self.get_bandwidth_per_quantizer()
        num_quantizers = self.num_quantizers
        if bandwidth is not None and bandwidth > 0.0:
            num_quantizers = int(max(1, math.floor(bandwidth / bw_per_q)))
        return num_quantizers

    def encode(self, embeddings: torch.Tensor, bandwidth=None) -> torch.Tensor:
        num_quantizers = self.get_num_quantizers_for_bandwidth(bandwidth)
        residual = embeddings
        all_indices = []
        for quantizer in self.quantizers[:num_quantizers]:
            indices = quantizer.encode(residual)
            quantized = quantizer.decode(indices)
            residual = residual - quantized
            all_indices.append(indices)
        out_indices = torch.stack(all_indices)
        return out_indices

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """Decode the given codes to their quantized representation."""
        quantized_out = torch.tensor(0.0, device=codes.device)
        for i, indices in enumerate(codes):
            quantizer = self.quantizers[i]
            quantized = quantizer.decode(indices)
            quantized_out = quantized_out + quantized
        return quantized_out


class SemanticModelStandIn(nn.Module):
    """Stand-in for the HuBERT semantic model: returns a dict with a tuple of hidden states."""

    def __init__(self, config):
        super().__init__()
        self.conv = nn.Conv1d(1, config.semantic_hidden_size, kernel_size=8, stride=8)
        self.layers = nn.ModuleList([nn.Linear(config.semantic_hidden_size, config.semantic_hidden_size) for _ in range(2)])

    def forward(self, input_values, output_hidden_states=False):
        hidden = self.conv(input_values[:, None]).transpose(1, 2)
        hidden_states = (hidden,)
        for layer in self.layers:
            hidden = torch.tanh(layer(hidden))
            hidden_states = hidden_states + (hidden,)
        return {"last_hidden_state": hidden, "hidden_states": hidden_states}


class XcodecModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.pad = config.hop_length // 2
        # stand-ins for the DAC acoustic encoder/decoder
        self.acoustic_encoder = nn.Conv1d(1, config.acoustic_hidden_size, kernel_size=8, stride=8)
        self.acoustic_decoder = nn.ConvTranspose1d(config.acoustic_hidden_size, 1, kernel_size=8, stride=8)
        self.encoder_semantic = SemanticEncoder(config)
        self.semantic_model = SemanticModelStandIn(config).eval()
        self.fc = nn.Linear(config.hidden_size, config.hidden_size)
        self.fc1 = nn.Linear(config.hidden_size, config.semantic_hidden_size)
        self.fc2 = nn.Linear(config.hidden_size, config.acoustic_hidden_size)
        self.quantizer = XcodecResidualVectorQuantization(config)

    def _extract_semantic_features(self, input_values: torch.FloatTensor) -> torch.FloatTensor:
        input_values = input_values[:, 0, :]
        input_values = F.pad(input_values, (self.pad, self.pad))
        with torch.no_grad():
            outputs = self.semantic_model(input_values, output_hidden_states=True)
            hidden_states = outputs["hidden_states"]

        stacked = torch.stack(hidden_states, dim=1)
        return stacked.mean(dim=1)

    def encode(self, input_values, bandwidth=None, return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.return_dict

        channels = input_values.shape[1]
        if channels != 1:
            raise ValueError(f"Audio must be mono, but got {channels}")

        if bandwidth is None:
            bandwidth = self.config.target_bandwidths[-1]
        elif bandwidth not in self.config.target_bandwidths:
            raise ValueError(
                f"This model doesn't support the bandwidth {bandwidth}. Select one of {self.config.target_bandwidths}."
            )

        e_semantic_input = self._extract_semantic_features(input_values).detach()
        e_semantic = self.encoder_semantic(e_semantic_input.transpose(1, 2))
        e_acoustic = self.acoustic_encoder(input_values)

        if e_acoustic.shape[2] != e_semantic.shape[2]:
            # make sure they line up if frames don't match
            e_acoustic = self.acoustic_encoder(F.pad(input_values[:, 0, :], (self.pad, self.pad)).unsqueeze(1))

        embeddings = torch.cat([e_acoustic, e_semantic], dim=1)
        embeddings = self.fc(embeddings.transpose(1, 2)).transpose(1, 2)
        audio_codes = self.quantizer.encode(embeddings, bandwidth)
        audio_codes = audio_codes.transpose(0, 1)

        if not return_dict:
            return audio_codes

        return {"audio_codes": audio_codes}

    def decode(self, audio_codes, return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.return_dict

        audio_codes = audio_codes.transpose(0, 1)
        quantized = self.quantizer.decode(audio_codes)
        quantized_acoustic = self.fc2(quantized.transpose(1, 2)).transpose(1, 2)
        audio_values = self.acoustic_decoder(quantized_acoustic)

        if not return_dict:
            return audio_values

        return (audio_values,)

    def forward(self, input_values, audio_codes=None, bandwidth=None, return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        length = input_values.shape[-1]

        if audio_codes is None:
            audio_codes = self.encode(input_values, bandwidth, return_dict=False)

        audio_values = self.decode(audio_codes, return_dict=return_dict)[0][..., :length]

        if not return_dict:
            return (audio_codes, audio_values)

        return {"audio_codes": audio_codes, "audio_values": audio_values}


codec = torch.compile(XcodecModel(XcodecConfig()).eval())

RAISING_INPUTS = {3: "ValueError", 4: "ValueError"}


def make():
    torch.manual_seed(0)
    audio = torch.randn(2, 1, 64)
    codes = torch.randint(0, 16, (2, 3, 8))
    return XcodecModel(XcodecConfig()).eval(), [
        (audio,),
        (audio, None, 0.5),
        (audio, codes, None, False),
        (audio, None, 2.0),
        (torch.randn(2, 2, 64),),
    ]
