"""DCCRN training loss: `DCCRN.loss` dispatching on a `loss_mode` string, the MSE mode zeroing the DC and Nyquist rows of the labels in place, the SI-SNR mode via `si_snr` / `l2_norm`.

Source: huyanxin/DeepComplexCRN@035cbe899d75ebb07d4d8fc87fef4eb9cd3a4968:dc_crn.py:253-290
Kept: `loss` verbatim (MSE / SI-SNR / MAE branches), remove_dc, l2_norm, si_snr, and
the ConvSTFT the class holds as `self.stft` (conv_stft.py@2e20e12).
Simplified: complexnn (ComplexConv2d, NavieComplexLSTM, ...) is not in the source
snapshot, so the class keeps only the parts of __init__ the loss touches (fft
settings and the stft/istft modules); the network output is given as input;
scipy get_window replaced by a numpy periodic window; window 64, hop 16, fft 64.
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


class DCCRN(nn.Module):

    def __init__(
                    self,
                    win_len=400,
                    win_inc=100,
                    fft_len=512,
                    win_type='hanning',
                    masking_mode='E',
                ):
        super(DCCRN, self).__init__()

        # for fft
        self.win_len = win_len
        self.win_inc = win_inc
        self.fft_len = fft_len
        self.win_type = win_type
        self.masking_mode = masking_mode

        fix=True
        self.fix = fix
        self.stft = ConvSTFT(self.win_len, self.win_inc, fft_len, self.win_type, 'complex', fix=fix)
        self.istft = ConviSTFT(self.win_len, self.win_inc, fft_len, self.win_type, 'complex', fix=fix)

    def loss(self, inputs, labels, loss_mode='SI-SNR'):

        if loss_mode == 'MSE':
            b, d, t = inputs.shape
            labels[:,0,:]=0
            labels[:,d//2,:]=0
            return F.mse_loss(inputs, labels, reduction='mean')*d

        elif loss_mode == 'SI-SNR':
            #return -torch.mean(si_snr(inputs, labels))
            return -(si_snr(inputs, labels))
        elif loss_mode == 'MAE':
            gth_spec, gth_phase = self.stft(labels)
            b,d,t = inputs.shape
            return torch.mean(torch.abs(inputs-gth_spec))*d

def remove_dc(data):
    mean = torch.mean(data, -1, keepdim=True)
    data = data - mean
    return data
def l2_norm(s1, s2):
    #norm = torch.sqrt(torch.sum(s1*s2, 1, keepdim=True))
    #norm = torch.norm(s1*s2, 1, keepdim=True)

    norm = torch.sum(s1*s2, -1, keepdim=True)
    return norm

def si_snr(s1, s2, eps=1e-8):
    #s1 = remove_dc(s1)
    #s2 = remove_dc(s2)
    s1_s2_norm = l2_norm(s1, s2)
    s2_s2_norm = l2_norm(s2, s2)
    s_target =  s1_s2_norm/(s2_s2_norm+eps)*s2
    e_nosie = s1 - s_target
    target_norm = l2_norm(s_target, s_target)
    noise_norm = l2_norm(e_nosie, e_nosie)
    snr = 10*torch.log10((target_norm)/(noise_norm+eps)+eps)
    return torch.mean(snr)


def build_loss():
    net = DCCRN(win_len=64, win_inc=16, fft_len=64, masking_mode='E')
    return net, torch.compile(net.loss)


def make():
    torch.manual_seed(0)
    net = DCCRN(win_len=64, win_inc=16, fft_len=64, masking_mode='E')
    outputs = torch.randn(2, 800).clamp_(-1, 1)
    labels = torch.randn(2, 800).clamp_(-1, 1)
    spec_out = torch.randn(2, 66, 12)
    spec_lab = torch.randn(2, 66, 12)
    return net.loss, [
        (outputs, labels),
        (outputs, labels, 'SI-SNR'),
        (spec_out, spec_lab, 'MSE'),
    ]
