"""Matcha-TTS synthesise: token durations become a mel length through `fix_len_compatibility(y_lengths.max())`, which returns `length.int().item()`, and the real-time factor is timed with `datetime.now()`.

Source: shivammehta25/Matcha-TTS@14d903fdae868235b46d5dc0a97969fe340a9249:matcha/models/matcha_tts.py:73-156
Also: matcha/utils/model.py@01c99161c4f7bf4e37b953300d45a0ff9c01b360 (sequence_mask,
fix_len_compatibility, convert_pad_shape, generate_path, denormalize).
Kept: MatchaTTS.synthesise verbatim (speaker embedding, exp/round durations,
clamp_min, y_max_length, fix_len_compatibility with its torch.jit.is_tracing()
branch, generate_path alignment, decoder call, rtf with dt.datetime.now()) and
the utils verbatim.
Simplified: TextEncoder is embedding + conv + projection; the duration
predictor is one conv; the CFM decoder is a fixed-step Euler solver over a
1x1-conv estimator; 2 speakers, 4 mel features, vocab 10.
"""
import datetime as dt

import numpy as np
import torch
from torch import nn


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    x = torch.arange(max_length, dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


def fix_len_compatibility(length, num_downsamplings_in_unet=2):
    factor = torch.scalar_tensor(2).pow(num_downsamplings_in_unet)
    length = (length / factor).ceil() * factor
    if torch.jit.is_tracing():
        return length
    else:
        return length.int().item()


def convert_pad_shape(pad_shape):
    inverted_shape = pad_shape[::-1]
    pad_shape = [item for sublist in inverted_shape for item in sublist]
    return pad_shape


def generate_path(duration, mask):
    device = duration.device

    b, t_x, t_y = mask.shape
    cum_duration = torch.cumsum(duration, 1)
    path = torch.zeros(b, t_x, t_y, dtype=mask.dtype).to(device=device)

    cum_duration_flat = cum_duration.view(b * t_x)
    path = sequence_mask(cum_duration_flat, t_y).to(mask.dtype)
    path = path.view(b, t_x, t_y)
    path = path - torch.nn.functional.pad(path, convert_pad_shape([[0, 0], [1, 0], [0, 0]]))[:, :-1]
    path = path * mask
    return path


def denormalize(data, mu, std):
    if not isinstance(mu, float):
        if isinstance(mu, list):
            mu = torch.tensor(mu, dtype=data.dtype, device=data.device)
        elif isinstance(mu, torch.Tensor):
            mu = mu.to(data.device)
        elif isinstance(mu, np.ndarray):
            mu = torch.from_numpy(mu).to(data.device)
        mu = mu.unsqueeze(-1)

    if not isinstance(std, float):
        if isinstance(std, list):
            std = torch.tensor(std, dtype=data.dtype, device=data.device)
        elif isinstance(std, torch.Tensor):
            std = std.to(data.device)
        elif isinstance(std, np.ndarray):
            std = torch.from_numpy(std).to(data.device)
        std = std.unsqueeze(-1)

    return data * std + mu


class TextEncoder(nn.Module):
    def __init__(self, n_vocab, n_feats, n_channels, n_spks, spk_emb_dim):
        super().__init__()
        self.n_spks = n_spks
        self.emb = nn.Embedding(n_vocab, n_channels)
        in_ch = n_channels + (spk_emb_dim if n_spks > 1 else 0)
        self.conv = nn.Conv1d(in_ch, n_channels, 3, padding=1)
        self.proj_m = nn.Conv1d(n_channels, n_feats, 1)

    def forward(self, x, x_lengths, spks=None):
        x = self.emb(x).transpose(1, -1)
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)
        if self.n_spks > 1:
            x = torch.cat([x, spks.unsqueeze(-1).repeat(1, 1, x.shape[-1])], dim=1)
        x = torch.relu(self.conv(x * x_mask)) * x_mask
        mu = self.proj_m(x) * x_mask
        return mu, x, x_mask


class DP(nn.Module):
    def __init__(self, n_channels):
        super().__init__()
        self.proj = nn.Conv1d(n_channels, 1, 1)

    def forward(self, x, x_mask):
        return self.proj(x.detach() * x_mask) * x_mask


class CFM(nn.Module):
    def __init__(self, n_feats, n_spks, spk_emb_dim):
        super().__init__()
        self.n_spks = n_spks
        self.estimator = nn.Conv1d(2 * n_feats + 1, n_feats, 1)

    def forward(self, mu, mask, n_timesteps, temperature=1.0, spks=None):
        z = torch.randn_like(mu) * temperature
        t_span = torch.linspace(0, 1, n_timesteps + 1, device=mu.device)
        x, t, dt_ = z, t_span[0], t_span[1] - t_span[0]
        for step in range(1, len(t_span)):
            t_in = t.expand(x.shape[0], 1, x.shape[-1])
            dphi_dt = self.estimator(torch.cat([x, mu, t_in], dim=1)) * mask
            x = x + dt_ * dphi_dt
            t = t + dt_
            if step < len(t_span) - 1:
                dt_ = t_span[step + 1] - t
        return x * mask


class MatchaTTS(nn.Module):  # 🍵
    def __init__(self, n_vocab, n_spks, spk_emb_dim, n_feats, n_channels, data_statistics):
        super().__init__()
        self.n_vocab = n_vocab
        self.n_spks = n_spks
        self.spk_emb_dim = spk_emb_dim
        self.n_feats = n_feats

        if n_spks > 1:
            self.spk_emb = torch.nn.Embedding(n_spks, spk_emb_dim)

        self.encoder = TextEncoder(n_vocab, n_feats, n_channels, n_spks, spk_emb_dim)
        self.dp = DP(n_channels)
        self.decoder = CFM(n_feats, n_spks, spk_emb_dim)
        self.register_buffer("mel_mean", torch.tensor(data_statistics["mel_mean"]))
        self.register_buffer("mel_std", torch.tensor(data_statistics["mel_std"]))

    @torch.inference_mode()
    def synthesise(self, x, x_lengths, n_timesteps, temperature=1.0, spks=None, length_scale=1.0):
        # For RTF computation
        t = dt.datetime.now()

        if self.n_spks > 1:
            # Get speaker embedding
            spks = self.spk_emb(spks.long())

        # Get encoder_outputs `mu_x` and encoded text `enc_output`
        mu_x, enc_output, x_mask = self.encoder(x, x_lengths, spks)

        # Get log-scaled token durations `logw`
        logw = self.dp(enc_output, x_mask)

        w = torch.exp(logw) * x_mask
        w_ceil = torch.round(w) * length_scale
        # print(w_ceil)
        y_lengths = torch.clamp_min(torch.sum(w_ceil, [1, 2]), 1).long()
        y_max_length = y_lengths.max()
        y_max_length_ = fix_len_compatibility(y_max_length)

        # Using obtained durations `w` construct alignment map `attn`
        y_mask = sequence_mask(y_lengths, y_max_length_).unsqueeze(1).to(x_mask.dtype)
        attn_mask = x_mask.unsqueeze(-1) * y_mask.unsqueeze(2)
        attn = generate_path(w_ceil.squeeze(1), attn_mask.squeeze(1)).unsqueeze(1)

        # Align encoded text and get mu_y
        mu_y = torch.matmul(attn.squeeze(1).transpose(1, 2), mu_x.transpose(1, 2))
        mu_y = mu_y.transpose(1, 2)
        encoder_outputs = mu_y[:, :, :y_max_length]

        # Generate sample tracing the probability flow
        decoder_outputs = self.decoder(mu_y, y_mask, n_timesteps, temperature, spks)
        decoder_outputs = decoder_outputs[:, :, :y_max_length]

        t = (dt.datetime.now() - t).total_seconds()
        rtf = t * 22050 / (decoder_outputs.shape[-1] * 256)

        return {
            "encoder_outputs": encoder_outputs,
            "decoder_outputs": decoder_outputs,
            "attn": attn[:, :, :y_max_length],
            "mel": denormalize(decoder_outputs, self.mel_mean, self.mel_std),
            "mel_lengths": y_lengths,
            "rtf": rtf,
        }


STATS = {"mel_mean": [-5.5, -5.0, -4.8, -5.2], "mel_std": [2.0, 2.1, 2.2, 1.9]}


def load_for_inference():
    model = MatchaTTS(n_vocab=10, n_spks=2, spk_emb_dim=4, n_feats=4, n_channels=8, data_statistics=STATS).eval()
    model.synthesise = torch.compile(model.synthesise)
    return model


def make():
    torch.manual_seed(0)
    model = MatchaTTS(n_vocab=10, n_spks=2, spk_emb_dim=4, n_feats=4, n_channels=8, data_statistics=STATS).eval()
    with torch.no_grad():
        model.dp.proj.bias.fill_(0.7)
    x = torch.randint(0, 10, (2, 5))
    x_lengths = torch.tensor([5, 3])
    spks = torch.tensor([0, 1])
    return model.synthesise, [(x, x_lengths, 2, 0.667, spks, 1.0), (x[:1, :4], x_lengths[:1] - 1, 3, 1.0, spks[:1], 1.5)]
