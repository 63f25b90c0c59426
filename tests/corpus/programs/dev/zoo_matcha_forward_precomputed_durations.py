"""Matcha-TTS training forward with `use_precomputed_durations`: masks from `sequence_mask(y_lengths, y.shape[-1])`, alignment from `generate_path`, flow-matching and prior losses (no break expected).

Source: shivammehta25/Matcha-TTS@14d903fdae868235b46d5dc0a97969fe340a9249:matcha/models/matcha_tts.py:158-244
Also: matcha/utils/model.py@01c99161c4f7bf4e37b953300d45a0ff9c01b360 (sequence_mask,
convert_pad_shape, generate_path, duration_loss); matcha/models/components/flow_matching.py
(CFM.compute_loss: random t, y = (1 - (1 - sigma_min) t) z + t x1, masked MSE).
Kept: MatchaTTS.forward verbatim for the precomputed-duration path and the
`prior_loss` flag; the `out_size` cut is left in and not taken (out_size=None).
Simplified: the MAS branch (cython monotonic_align) is replaced by raising, as
the model is built with use_precomputed_durations=True; encoder, duration
predictor and CFM estimator are single convolutions; 4 mel features.
"""
import math
import random

import torch
from torch import nn


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    x = torch.arange(max_length, dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


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


def duration_loss(logw, logw_, lengths):
    loss = torch.sum((logw - logw_) ** 2) / torch.sum(lengths)
    return loss


class TextEncoder(nn.Module):
    def __init__(self, n_vocab, n_feats, n_channels):
        super().__init__()
        self.emb = nn.Embedding(n_vocab, n_channels)
        self.conv = nn.Conv1d(n_channels, n_channels, 3, padding=1)
        self.proj_m = nn.Conv1d(n_channels, n_feats, 1)

    def forward(self, x, x_lengths, spks=None):
        x = self.emb(x).transpose(1, -1)
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)
        x = torch.relu(self.conv(x * x_mask)) * x_mask
        mu = self.proj_m(x) * x_mask
        return mu, x, x_mask


class DP(nn.Module):
    def __init__(self, n_channels):
        super().__init__()
        self.proj = nn.Conv1d(n_channels, 1, 1)

    def forward(self, x, x_mask):
        return self.proj(x.detach() * x_mask) * x_mask

    def compute_loss(self, durations, enc_outputs, x_mask):
        logw = self(enc_outputs, x_mask)
        loss = duration_loss(logw, durations, torch.sum(x_mask))
        return loss


class CFM(nn.Module):
    def __init__(self, n_feats, sigma_min=1e-4):
        super().__init__()
        self.sigma_min = sigma_min
        self.estimator = nn.Conv1d(2 * n_feats + 1, n_feats, 1)

    def compute_loss(self, x1, mask, mu, spks=None, cond=None):
        b, _, t = mu.shape

        # random timestep
        t = torch.rand([b, 1, 1], device=mu.device, dtype=mu.dtype)
        # sample noise p(x_0)
        z = torch.randn_like(x1)

        y = (1 - (1 - self.sigma_min) * t) * z + t * x1
        u = x1 - (1 - self.sigma_min) * z

        est = self.estimator(torch.cat([y, mu, t.expand(b, 1, y.shape[-1])], dim=1)) * mask
        loss = torch.nn.functional.mse_loss(est, u, reduction="sum") / (torch.sum(mask) * u.shape[1])
        return loss, y


class MatchaTTS(nn.Module):  # 🍵
    def __init__(self, n_vocab, n_spks, n_feats, n_channels, out_size=None, prior_loss=True, use_precomputed_durations=False):
        super().__init__()
        self.n_vocab = n_vocab
        self.n_spks = n_spks
        self.n_feats = n_feats
        self.out_size = out_size
        self.prior_loss = prior_loss
        self.use_precomputed_durations = use_precomputed_durations

        if n_spks > 1:
            self.spk_emb = torch.nn.Embedding(n_spks, 4)

        self.encoder = TextEncoder(n_vocab, n_feats, n_channels)
        self.dp = DP(n_channels)
        self.decoder = CFM(n_feats)

    def forward(self, x, x_lengths, y, y_lengths, spks=None, out_size=None, cond=None, durations=None):
        if self.n_spks > 1:
            # Get speaker embedding
            spks = self.spk_emb(spks)

        # Get encoder_outputs `mu_x` and log-scaled token durations `logw`
        mu_x, enc_output, x_mask = self.encoder(x, x_lengths, spks)
        y_max_length = y.shape[-1]

        y_mask = sequence_mask(y_lengths, y_max_length).unsqueeze(1).to(x_mask)
        attn_mask = x_mask.unsqueeze(-1) * y_mask.unsqueeze(2)

        if self.use_precomputed_durations:
            attn = generate_path(durations.squeeze(1), attn_mask.squeeze(1))
        else:
            raise NotImplementedError("monotonic_align.maximum_path is a cython extension")

        # Compute loss between predicted log-scaled durations and those obtained from MAS
        logw_ = torch.log(1e-8 + torch.sum(attn.unsqueeze(1), -1)) * x_mask
        dur_loss = self.dp.compute_loss(logw_, enc_output, x_mask)

        # Cut a small segment of mel-spectrogram in order to increase batch size
        #   - "Hack" taken from Grad-TTS, in case of Grad-TTS, we cannot train batch size 32 on a 24GB GPU without it
        #   - Do not need this hack for Matcha-TTS, but it works with it as well
        if not isinstance(out_size, type(None)):
            max_offset = (y_lengths - out_size).clamp(0)
            offset_ranges = list(zip([0] * max_offset.shape[0], max_offset.cpu().numpy()))
            out_offset = torch.LongTensor(
                [torch.tensor(random.choice(range(start, end)) if end > start else 0) for start, end in offset_ranges]
            ).to(y_lengths)
            attn_cut = torch.zeros(attn.shape[0], attn.shape[1], out_size, dtype=attn.dtype, device=attn.device)
            y_cut = torch.zeros(y.shape[0], self.n_feats, out_size, dtype=y.dtype, device=y.device)

            y_cut_lengths = []
            for i, (y_, out_offset_) in enumerate(zip(y, out_offset)):
                y_cut_length = out_size + (y_lengths[i] - out_size).clamp(None, 0)
                y_cut_lengths.append(y_cut_length)
                cut_lower, cut_upper = out_offset_, out_offset_ + y_cut_length
                y_cut[i, :, :y_cut_length] = y_[:, cut_lower:cut_upper]
                attn_cut[i, :, :y_cut_length] = attn[i, :, cut_lower:cut_upper]

            y_cut_lengths = torch.LongTensor(y_cut_lengths)
            y_cut_mask = sequence_mask(y_cut_lengths).unsqueeze(1).to(y_mask)

            attn = attn_cut
            y = y_cut
            y_mask = y_cut_mask

        # Align encoded text with mel-spectrogram and get mu_y segment
        mu_y = torch.matmul(attn.squeeze(1).transpose(1, 2), mu_x.transpose(1, 2))
        mu_y = mu_y.transpose(1, 2)

        # Compute loss of the decoder
        diff_loss, _ = self.decoder.compute_loss(x1=y, mask=y_mask, mu=mu_y, spks=spks, cond=cond)

        if self.prior_loss:
            prior_loss = torch.sum(0.5 * ((y - mu_y) ** 2 + math.log(2 * math.pi)) * y_mask)
            prior_loss = prior_loss / (torch.sum(y_mask) * self.n_feats)
        else:
            prior_loss = 0

        return dur_loss, prior_loss, diff_loss, attn


def training_step(model, batch):
    dur_loss, prior_loss, diff_loss, _ = model(**batch)
    return dur_loss + prior_loss + diff_loss


def configure(prior_loss=True):
    return torch.compile(MatchaTTS(10, 1, 4, 8, prior_loss=prior_loss, use_precomputed_durations=True))


def make():
    torch.manual_seed(0)
    model = MatchaTTS(10, 1, 4, 8, prior_loss=True, use_precomputed_durations=True)
    x = torch.randint(0, 10, (2, 4))
    x_lengths = torch.tensor([4, 3])
    durations = torch.tensor([[[2.0, 1.0, 3.0, 2.0]], [[1.0, 2.0, 2.0, 0.0]]])
    y = torch.randn(2, 4, 8)
    y_lengths = torch.tensor([8, 5])
    return model, [
        (x, x_lengths, y, y_lengths, None, None, None, durations),
        (x[:1], x_lengths[:1], y[:1], y_lengths[:1], None, None, None, durations[:1]),
    ]
