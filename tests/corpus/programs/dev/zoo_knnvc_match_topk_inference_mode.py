"""kNN-VC matching: an `@torch.inference_mode()` method that optionally resamples the query with `F.interpolate(scale_factor=...)`, takes cosine distances through `torch.cdist`, averages the `topk` nearest matching-set frames, vocodes, moves to CPU and applies a loudness gain (torchaudio's `gain` tests `if gain_db == 0`).

Source: bshall/knn-vc@07fba7e129a0a26afad9097b31dd35b7340bb3b4:matcher.py:17-150
Kept: SPEAKER_INFORMATION_WEIGHTS, fast_cosine_dist, KNeighborsVC.__init__
(weighting buffer, hop_length, sr from the hifigan config), vocode and match
verbatim.
Simplified: WavLM is not needed by `match` and is a placeholder; the HiFiGAN
generator is a small local stand-in (lin_pre, permute, conv_pre, one
ConvTranspose1d upsampling, conv_post, tanh); torchaudio.functional.loudness is
a local stand-in without the K-weighting biquads (block energies gated at
-70 LUFS), torchaudio.functional.gain is copied; feature dim 8, 24/12 frames.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


SPEAKER_INFORMATION_WEIGHTS = [
    0, 0, 0, 0, 0, 0,  # layer 0-5
    1.0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, # layer 15
    0, 0, 0, 0, 0, 0, # layer 16-21
    0, # layer 22
    0, 0 # layer 23-24
]


class AttrDict(dict):
    def __init__(self, *args, **kwargs):
        super(AttrDict, self).__init__(*args, **kwargs)
        self.__dict__ = self


class HiFiGAN(nn.Module):
    """Stand-in for hifigan.models.Generator (features -> waveform)."""

    def __init__(self, h):
        super().__init__()
        self.lin_pre = nn.Linear(h.hubert_dim, h.hifi_dim)
        self.conv_pre = nn.Conv1d(h.hifi_dim, h.upsample_initial_channel, 7, 1, padding=3)
        self.ups = nn.ModuleList([
            nn.ConvTranspose1d(h.upsample_initial_channel, h.upsample_initial_channel // 2,
                               h.upsample_kernel_sizes[0], h.upsample_rates[0],
                               padding=(h.upsample_kernel_sizes[0] - h.upsample_rates[0]) // 2)
        ])
        self.conv_post = nn.Conv1d(h.upsample_initial_channel // 2, 1, 7, 1, padding=3)

    def forward(self, x):
        x = self.lin_pre(x)
        x = x.permute(0, 2, 1)
        x = self.conv_pre(x)
        for up in self.ups:
            x = F.leaky_relu(x, 0.1)
            x = up(x)
        x = F.leaky_relu(x)
        x = self.conv_post(x)
        x = torch.tanh(x)
        return x


def loudness(waveform: Tensor, sample_rate: int):
    # stand-in for torchaudio.functional.loudness without the K-weighting filters
    if waveform.size(-2) > 5:
        raise ValueError("Only up to 5 channels are supported.")

    gate_duration = 0.4
    overlap = 0.75
    gamma_abs = -70.0
    kernel_size = int(gate_duration * sample_rate)
    stride = int(kernel_size * (1 - overlap))

    weights = torch.tensor([1.0, 1.0, 1.0, 1.41, 1.41], dtype=waveform.dtype, device=waveform.device)

    energy = torch.square(waveform).unfold(-1, kernel_size, stride)
    energy = torch.mean(energy, dim=-1)

    energy_weighted = torch.sum(weights[..., : energy.size(-2), None] * energy, dim=-2)
    l = -0.691 + 10.0 * torch.log10(energy_weighted)

    # absolute gating of the blocks
    mask_abs = l > gamma_abs
    energy_filtered = torch.sum(energy_weighted * mask_abs, dim=-1) / torch.sum(mask_abs, dim=-1)
    return -0.691 + 10.0 * torch.log10(energy_filtered)


def gain(waveform: Tensor, gain_db: float = 1.0) -> Tensor:
    if gain_db == 0:
        return waveform

    ratio = 10 ** (gain_db / 20)

    return waveform * ratio


def fast_cosine_dist(source_feats: Tensor, matching_pool: Tensor, device: str = 'cpu') -> Tensor:
    """ Like torch.cdist, but fixed dim=-1 and for cosine distance."""
    source_norms = torch.norm(source_feats, p=2, dim=-1).to(device)
    matching_norms = torch.norm(matching_pool, p=2, dim=-1)
    dotprod = -torch.cdist(source_feats[None].to(device), matching_pool[None], p=2)[0]**2 + source_norms[:, None]**2 + matching_norms[None]**2
    dotprod /= 2

    dists = 1 - ( dotprod / (source_norms[:, None] * matching_norms[None]) )
    return dists


class KNeighborsVC(nn.Module):

    def __init__(self,
        wavlm,
        hifigan: HiFiGAN,
        hifigan_cfg: AttrDict,
        device='cuda'
    ) -> None:
        super().__init__()
        # set which features to extract from wavlm
        self.weighting = torch.tensor(SPEAKER_INFORMATION_WEIGHTS, device=device)[:, None]
        # load hifigan
        self.hifigan = hifigan.eval()
        self.h = hifigan_cfg
        # store wavlm
        self.wavlm = wavlm
        self.device = torch.device(device)
        self.sr = self.h.sampling_rate
        self.hop_length = 320

    @torch.inference_mode()
    def vocode(self, c: Tensor) -> Tensor:
        """ Vocode features with hifigan. `c` is of shape (bs, seq_len, c_dim) """
        y_g_hat = self.hifigan(c)
        y_g_hat = y_g_hat.squeeze(1)
        return y_g_hat

    @torch.inference_mode()
    def match(self, query_seq: Tensor, matching_set: Tensor, synth_set: Tensor = None,
              topk: int = 4, tgt_loudness_db: float | None = -16,
              target_duration: float | None = None, device: str | None = None) -> Tensor:
        if synth_set is None: synth_set = matching_set
        device = torch.device(device) if device is not None else self.device

        if target_duration is not None:
            target_samples = int(target_duration*self.sr)
            scale_factor = (target_samples/self.hop_length) / query_seq.shape[0] # n_targ_feats / n_input_feats
            query_seq = F.interpolate(query_seq.T[None], scale_factor=scale_factor, mode='linear')[0].T

        dists = fast_cosine_dist(query_seq.to(device), matching_set.to(device), device=device)
        best = dists.topk(k=topk, largest=False, dim=-1)
        out_feats = synth_set[best.indices].mean(dim=1)

        prediction = self.vocode(out_feats[None].to(device)).cpu().squeeze()

        # normalization
        if tgt_loudness_db is not None:
            src_loudness = loudness(prediction[None], self.h.sampling_rate)
            tgt_loudness = tgt_loudness_db
            pred_wav = gain(prediction, tgt_loudness - src_loudness)
        else: pred_wav = prediction
        return pred_wav


HIFIGAN_CFG = AttrDict(
    sampling_rate=400, hubert_dim=8, hifi_dim=8, upsample_initial_channel=8,
    upsample_rates=[8], upsample_kernel_sizes=[16],
)


def knn_vc(device='cpu'):
    hifigan = HiFiGAN(HIFIGAN_CFG)
    model = KNeighborsVC(None, hifigan, HIFIGAN_CFG, device)
    return model


def load_compiled(device='cpu'):
    model = knn_vc(device)
    model.match = torch.compile(model.match)
    return model


def make():
    torch.manual_seed(0)
    eager = knn_vc('cpu')
    query = torch.randn(24, 8)
    matching = torch.randn(40, 8)
    return eager.match, [
        (query, matching, None, 4, -16, None, None),
        (query, matching, matching * 0.5, 2, None, 12.8, 'cpu'),
    ]
