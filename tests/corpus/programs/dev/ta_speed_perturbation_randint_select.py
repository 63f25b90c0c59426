"""torchaudio SpeedPerturbation: `idx = int(torch.randint(len(self.speeders), ()))`, a loop over the ModuleList comparing indices, then Speed -> Resample with a precomputed sinc kernel and a tensor `target_length` slice.

Source: pytorch/audio@v2.11.0:src/torchaudio/transforms/_transforms.py:908-989,1960-2064; src/torchaudio/functional/functional.py:1305-1432
Kept: SpeedPerturbation, Speed, _source_target_sample_rate and Resample
verbatim; _get_sinc_resample_kernel (hann path, frequency checks) and
_apply_sinc_resample_kernel verbatim (pad, strided conv1d,
`torch.ceil(torch.as_tensor(...)).long()` used as a slice bound).
Simplified: orig_freq 10 with factors (0.9, 1.1) so kernels are tiny and a
resampler always runs;
the kaiser branch and deprecation warning of the kernel builder are dropped;
the augmentation is compiled as part of a small front end.
"""
import math
from typing import Optional, Sequence, Tuple

import torch
from torch import Tensor

_CPU = torch.device("cpu")


def _get_sinc_resample_kernel(orig_freq: int, new_freq: int, gcd: int, lowpass_filter_width: int=6, rolloff: float=0.99, resampling_method: str='sinc_interp_hann', beta: Optional[float]=None, device: torch.device=_CPU, dtype: Optional[torch.dtype]=None):
    if not (int(orig_freq) == orig_freq and int(new_freq) == new_freq):
        raise Exception('Frequencies must be of integer type to ensure quality resampling computation. To work around this, manually convert both frequencies to integer values that maintain their resampling rate ratio before passing them into the function. Example: To downsample a 44100 hz waveform by a factor of 8, use `orig_freq=8` and `new_freq=1` instead of `orig_freq=44100` and `new_freq=5512.5`. For more information, please refer to https://github.com/pytorch/audio/issues/1487.')
    if resampling_method not in ['sinc_interp_hann', 'sinc_interp_kaiser']:
        raise ValueError('Invalid resampling method: {}'.format(resampling_method))
    orig_freq = int(orig_freq) // gcd
    new_freq = int(new_freq) // gcd
    if lowpass_filter_width <= 0:
        raise ValueError('Low pass filter width should be positive.')
    base_freq = min(orig_freq, new_freq)
    base_freq *= rolloff
    width = math.ceil(lowpass_filter_width * orig_freq / base_freq)
    idx_dtype = dtype if dtype is not None else torch.float64
    idx = torch.arange(-width, width + orig_freq, dtype=idx_dtype, device=device)[None, None] / orig_freq
    t = torch.arange(0, -new_freq, -1, dtype=dtype, device=device)[:, None, None] / new_freq + idx
    t *= base_freq
    t = t.clamp_(-lowpass_filter_width, lowpass_filter_width)
    window = torch.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    t *= math.pi
    scale = base_freq / orig_freq
    kernels = torch.where(t == 0, torch.tensor(1.0).to(t), t.sin() / t)
    kernels *= window * scale
    if dtype is None:
        kernels = kernels.to(dtype=torch.float32)
    return (kernels, width)


def _apply_sinc_resample_kernel(waveform: Tensor, orig_freq: int, new_freq: int, gcd: int, kernel: Tensor, width: int):
    if not waveform.is_floating_point():
        raise TypeError(f'Expected floating point type for waveform tensor, but received {waveform.dtype}.')
    orig_freq = int(orig_freq) // gcd
    new_freq = int(new_freq) // gcd
    shape = waveform.size()
    waveform = waveform.view(-1, shape[-1])
    num_wavs, length = waveform.shape
    waveform = torch.nn.functional.pad(waveform, (width, width + orig_freq))
    resampled = torch.nn.functional.conv1d(waveform[:, None], kernel, stride=orig_freq)
    resampled = resampled.transpose(1, 2).reshape(num_wavs, -1)
    target_length = torch.ceil(torch.as_tensor(new_freq * length / orig_freq)).long()
    resampled = resampled[..., :target_length]
    resampled = resampled.view(shape[:-1] + resampled.shape[-1:])
    return resampled


class Resample(torch.nn.Module):
    def __init__(
        self,
        orig_freq: int = 16000,
        new_freq: int = 16000,
        resampling_method: str = "sinc_interp_hann",
        lowpass_filter_width: int = 6,
        rolloff: float = 0.99,
        beta: Optional[float] = None,
        *,
        dtype: Optional[torch.dtype] = None,
    ) -> None:
        super().__init__()

        self.orig_freq = orig_freq
        self.new_freq = new_freq
        self.gcd = math.gcd(int(self.orig_freq), int(self.new_freq))
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta

        if self.orig_freq != self.new_freq:
            kernel, self.width = _get_sinc_resample_kernel(
                self.orig_freq,
                self.new_freq,
                self.gcd,
                self.lowpass_filter_width,
                self.rolloff,
                self.resampling_method,
                beta,
                dtype=dtype,
            )
            self.register_buffer("kernel", kernel)

    def forward(self, waveform: Tensor) -> Tensor:
        if self.orig_freq == self.new_freq:
            return waveform
        return _apply_sinc_resample_kernel(waveform, self.orig_freq, self.new_freq, self.gcd, self.kernel, self.width)


def _source_target_sample_rate(orig_freq: int, speed: float) -> Tuple[int, int]:
    source_sample_rate = int(speed * orig_freq)
    target_sample_rate = int(orig_freq)
    gcd = math.gcd(source_sample_rate, target_sample_rate)
    return source_sample_rate // gcd, target_sample_rate // gcd


class Speed(torch.nn.Module):
    def __init__(self, orig_freq, factor) -> None:
        super().__init__()

        self.orig_freq = orig_freq
        self.factor = factor

        self.source_sample_rate, self.target_sample_rate = _source_target_sample_rate(orig_freq, factor)
        self.resampler = Resample(orig_freq=self.source_sample_rate, new_freq=self.target_sample_rate)

    def forward(self, waveform, lengths: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        if lengths is None:
            out_lengths = None
        else:
            out_lengths = torch.ceil(lengths * self.target_sample_rate / self.source_sample_rate).to(lengths.dtype)

        return self.resampler(waveform), out_lengths


class SpeedPerturbation(torch.nn.Module):
    def __init__(self, orig_freq: int, factors: Sequence[float]) -> None:
        super().__init__()

        self.speeders = torch.nn.ModuleList([Speed(orig_freq=orig_freq, factor=factor) for factor in factors])

    def forward(
        self, waveform: torch.Tensor, lengths: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        idx = int(torch.randint(len(self.speeders), ()))
        # NOTE: we do this because TorchScript doesn't allow for
        # indexing ModuleList instances with non-literals.
        for speeder_idx, speeder in enumerate(self.speeders):
            if idx == speeder_idx:
                return speeder(waveform, lengths)
        raise RuntimeError("Speeder not found; execution should have never reached here.")


class FrontEnd(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.speed_perturb = SpeedPerturbation(10, [0.9, 1.1])

    def forward(self, waveform, lengths=None):
        if self.training:
            waveform, lengths = self.speed_perturb(waveform, lengths)
        return waveform.abs().mean(-1), lengths


front_end = torch.compile(FrontEnd().train())


def make():
    torch.manual_seed(0)
    m = FrontEnd().train()
    wave = torch.randn(2, 40)
    return m, [(wave, torch.tensor([40, 31])), (wave, None)]
