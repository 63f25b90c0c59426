"""DCCRN conv-STFT analysis/synthesis: ConvSTFT as a fixed-kernel conv1d (2-D inputs unsqueezed, complex or magnitude/phase output) and ConviSTFT's overlap-add with a window-energy normaliser and edge trim.

Source: huyanxin/DeepComplexCRN@2e20e122d4b752cd8299450dae5181ff2bd3c29d:conv_stft.py:11-104,141-160
Kept: init_kernels, ConvSTFT and ConviSTFT verbatim (the `inputs.dim() == 2`
branch, the feature_type branch, the optional `phase` path, the `coff` normaliser);
the analysis-then-synthesis call order of the file's own test_ifft2 (DCCRN.forward
calls them the same way around its network).
Simplified: scipy.signal.get_window replaced by numpy periodic hann/hamming windows;
`np.int` (removed from numpy) written `int`; a small function runs stft then istft,
unpacking the (mags, phase) pair when the analysis side is 'real'; window 64,
hop 16, fft 64, 0.05 s of 16 kHz audio.
"""
import torch
import torch.nn as nn
import numpy as np
import torch.nn.functional as F


def get_window(win_type, win_len, fftbins=True):
    # stands in for scipy.signal.get_window (periodic windows when fftbins=True)
    n = win_len + 1 if fftbins else win_len
    if win_type in ('hann', 'hanning'):
        window = np.hanning(n)
    elif win_type == 'hamming':
        window = np.hamming(n)
    else:
        raise ValueError(win_type)
    return window[:-1] if fftbins else window


def init_kernels(win_len, win_inc, fft_len, win_type=None, invers=False):
    if win_type == 'None' or win_type is None:
        window = np.ones(win_len)
    else:
        window = get_window(win_type, win_len, fftbins=True)#**0.5

    N = fft_len
    fourier_basis = np.fft.rfft(np.eye(N))[:win_len]
    real_kernel = np.real(fourier_basis)
    imag_kernel = np.imag(fourier_basis)
    kernel = np.concatenate([real_kernel, imag_kernel], 1).T

    if invers :
        kernel = np.linalg.pinv(kernel).T

    kernel = kernel*window
    kernel = kernel[:, None, :]
    return torch.from_numpy(kernel.astype(np.float32)), torch.from_numpy(window[None,:,None].astype(np.float32))


class ConvSTFT(nn.Module):

    def __init__(self, win_len, win_inc, fft_len=None, win_type='hamming', feature_type='real', fix=True):
        super(ConvSTFT, self).__init__()

        if fft_len == None:
            self.fft_len = int(2**np.ceil(np.log2(win_len)))
        else:
            self.fft_len = fft_len

        kernel, _ = init_kernels(win_len, win_inc, self.fft_len, win_type)
        #self.weight = nn.Parameter(kernel, requires_grad=(not fix))
        self.register_buffer('weight', kernel)
        self.feature_type = feature_type
        self.stride = win_inc
        self.win_len = win_len
        self.dim = self.fft_len

    def forward(self, inputs):
        if inputs.dim() == 2:
            inputs = torch.unsqueeze(inputs, 1)
        inputs = F.pad(inputs,[self.win_len-self.stride, self.win_len-self.stride])
        outputs = F.conv1d(inputs, self.weight, stride=self.stride)

        if self.feature_type == 'complex':
            return outputs
        else:
            dim = self.dim//2+1
            real = outputs[:, :dim, :]
            imag = outputs[:, dim:, :]
            mags = torch.sqrt(real**2+imag**2)
            phase = torch.atan2(imag, real)
            return mags, phase

class ConviSTFT(nn.Module):

    def __init__(self, win_len, win_inc, fft_len=None, win_type='hamming', feature_type='real', fix=True):
        super(ConviSTFT, self).__init__()
        if fft_len == None:
            self.fft_len = int(2**np.ceil(np.log2(win_len)))
        else:
            self.fft_len = fft_len
        kernel, window = init_kernels(win_len, win_inc, self.fft_len, win_type, invers=True)
        #self.weight = nn.Parameter(kernel, requires_grad=(not fix))
        self.register_buffer('weight', kernel)
        self.feature_type = feature_type
        self.win_type = win_type
        self.win_len = win_len
        self.stride = win_inc
        self.stride = win_inc
        self.dim = self.fft_len
        self.register_buffer('window', window)
        self.register_buffer('enframe', torch.eye(win_len)[:,None,:])

    def forward(self, inputs, phase=None):
        """
        inputs : [B, N+2, T] (complex spec) or [B, N//2+1, T] (mags)
        phase: [B, N//2+1, T] (if not none)
        """

        if phase is not None:
            real = inputs*torch.cos(phase)
            imag = inputs*torch.sin(phase)
            inputs = torch.cat([real, imag], 1)
        outputs = F.conv_transpose1d(inputs, self.weight, stride=self.stride)

        # this is from torch-stft: https://github.com/pseeth/torch-stft
        t = self.window.repeat(1,1,inputs.size(-1))**2
        coff = F.conv_transpose1d(t, self.enframe, stride=self.stride)
        outputs = outputs/(coff+1e-8)
        #outputs = torch.where(coff == 0, outputs, outputs/coff)
        outputs = outputs[...,self.win_len-self.stride:-(self.win_len-self.stride)]

        return outputs


def analysis_synthesis(fft, ifft, inputs):
    out1 = fft(inputs)
    if isinstance(out1, tuple):
        mags, phase = out1
        return ifft(mags, phase)
    output = ifft(out1)
    return output


compiled_analysis_synthesis = torch.compile(analysis_synthesis)


def make():
    torch.manual_seed(0)
    N, inc, fft_len = 64, 16, 64
    fft_c = ConvSTFT(N, inc, fft_len=fft_len, win_type='hanning', feature_type='complex')
    ifft_c = ConviSTFT(N, inc, fft_len=fft_len, win_type='hanning', feature_type='complex')
    fft_r = ConvSTFT(N, inc, fft_len=fft_len, win_type='hamming', feature_type='real')
    ifft_r = ConviSTFT(N, inc, fft_len=fft_len, win_type='hamming', feature_type='real')
    wav_2d = torch.randn(2, 800).clamp_(-1, 1)
    wav_3d = torch.randn(1, 1, 800).clamp_(-1, 1)
    return analysis_synthesis, [
        (fft_c, ifft_c, wav_2d),
        (fft_r, ifft_r, wav_3d),
    ]
