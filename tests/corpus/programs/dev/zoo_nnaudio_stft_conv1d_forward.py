"""nnAudio STFT layer forward: conv1d Fourier kernels, padding module built per call, output_format dispatch.

Source: KinWaiCheuk/nnAudio@2db9a49f1dac7babb1038f549dc9b0cc59bbc421:Installation/nnAudio/features/stft.py:68-356
Also: Installation/nnAudio/utils.py (broadcast_dim, create_fourier_kernels, overlap_add,
torch_window_sumsquare, extend_fbins; commit 05bcb88e).
Kept: STFT.__init__ (numpy kernels, buffers vs. trainable parameters) and
forward as written: `output_format or self.output_format`, self.num_samples
stored on the module, broadcast_dim's x.dim() dispatch, nn.ConstantPad1d /
nn.ReflectionPad1d constructed inside forward with the AssertionError for
short signals, conv1d STFT, and the Magnitude / Complex / Phase branches.
Simplified: n_fft 64, hop 16; scipy.signal.get_window("hann") and librosa's
pad_center are small numpy stand-ins; the verbose timing print is a fixed line.
"""
from time import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn.functional import conv1d, conv2d, fold


# ---- stand-ins for scipy.signal.get_window and librosa's pad_center ----
def get_window(window, Nx, fftbins=True):
    # scipy.signal.get_window("hann", Nx, fftbins=True): the periodic Hann window
    assert window == "hann"
    n = np.arange(Nx)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * n / Nx)


def pad_center(data, size, axis=-1, **kwargs):
    kwargs.setdefault("mode", "constant")
    n = data.shape[axis]
    lpad = int((size - n) // 2)
    lengths = [(0, 0)] * data.ndim
    lengths[axis] = (lpad, int(size - n - lpad))
    if lpad < 0:
        raise ValueError(("Target size ({:d}) must be " "at least input size ({:d})").format(size, n))
    return np.pad(data, lengths, **kwargs)


# ---- nnAudio/utils.py ----
def torch_window_sumsquare(w, n_frames, stride, n_fft, power=2):
    w_stacks = w.unsqueeze(-1).repeat((1, n_frames)).unsqueeze(0)
    # Window length + stride*(frames-1)
    output_len = w_stacks.shape[1] + stride * (w_stacks.shape[2] - 1)
    return fold(
        w_stacks ** power, (1, output_len), kernel_size=(1, n_fft), stride=stride
    )


def overlap_add(X, stride):
    n_fft = X.shape[1]
    output_len = n_fft + stride * (X.shape[2] - 1)

    return fold(X, (1, output_len), kernel_size=(1, n_fft), stride=stride).flatten(1)


def extend_fbins(X):
    """Extending the number of frequency bins from `n_fft//2+1` back to `n_fft` by
    reversing all bins except DC and Nyquist and append it on top of existing spectrogram"""
    X_upper = X[:, 1:-1].flip(1)
    X_upper[:, :, :, 1] = -X_upper[
        :, :, :, 1
    ]  # For the imaganinry part, it is an odd function
    return torch.cat((X[:, :, :], X_upper), 1)


def broadcast_dim(x):
    """
    Auto broadcast input so that it can fits into a Conv1d
    """

    if x.dim() == 2:
        x = x[:, None, :]
    elif x.dim() == 1:
        # If nn.DataParallel is used, this broadcast doesn't work
        x = x[None, None, :]
    elif x.dim() == 3:
        pass
    else:
        raise ValueError(
            "Only support input with shape = (batch, len) or shape = (len)"
        )
    return x


def create_fourier_kernels(
    n_fft,
    win_length=None,
    freq_bins=None,
    fmin=50,
    fmax=6000,
    sr=44100,
    freq_scale="linear",
    window="hann",
    verbose=True,
):
    if freq_bins == None:
        freq_bins = n_fft // 2 + 1
    if win_length == None:
        win_length = n_fft

    s = np.arange(0, n_fft, 1.0)
    wsin = np.empty((freq_bins, 1, n_fft))
    wcos = np.empty((freq_bins, 1, n_fft))
    start_freq = fmin
    end_freq = fmax
    bins2freq = []
    binslist = []

    window_mask = get_window(window, int(win_length), fftbins=True)
    window_mask = pad_center(window_mask, n_fft)

    if freq_scale == "linear":
        start_bin = start_freq * n_fft / sr
        scaling_ind = (end_freq - start_freq) * (n_fft / sr) / freq_bins

        for k in range(freq_bins):  # Only half of the bins contain useful info
            bins2freq.append((k * scaling_ind + start_bin) * sr / n_fft)
            binslist.append((k * scaling_ind + start_bin))
            wsin[k, 0, :] = np.sin(
                2 * np.pi * (k * scaling_ind + start_bin) * s / n_fft
            )
            wcos[k, 0, :] = np.cos(
                2 * np.pi * (k * scaling_ind + start_bin) * s / n_fft
            )

    elif freq_scale == "no":
        for k in range(freq_bins):  # Only half of the bins contain useful info
            bins2freq.append(k * sr / n_fft)
            binslist.append(k)
            wsin[k, 0, :] = np.sin(2 * np.pi * k * s / n_fft)
            wcos[k, 0, :] = np.cos(2 * np.pi * k * s / n_fft)
    else:
        print("Please select the correct frequency scale, 'linear' or 'log'")
    return (
        wsin.astype(np.float32),
        wcos.astype(np.float32),
        bins2freq,
        binslist,
        window_mask.astype(np.float32),
    )


# ---- nnAudio/features/stft.py ----
class STFTBase(nn.Module):
    """
    STFT and iSTFT share the same `inverse_stft` function
    """

    def inverse_stft(
        self, X, kernel_cos, kernel_sin, onesided=True, length=None, refresh_win=True
    ):
        # If the input spectrogram contains only half of the n_fft
        # Use extend_fbins function to get back another half
        if onesided:
            X = extend_fbins(X)  # extend freq
        X_real, X_imag = X[:, :, :, 0], X[:, :, :, 1]

        # broadcast dimensions to support 2D convolution
        X_real_bc = X_real.unsqueeze(1)
        X_imag_bc = X_imag.unsqueeze(1)
        a1 = conv2d(X_real_bc, kernel_cos, stride=(1, 1))
        b2 = conv2d(X_imag_bc, kernel_sin, stride=(1, 1))
        # compute real and imag part. signal lies in the real part
        real = a1 - b2
        real = real.squeeze(-2) * self.window_mask

        # Normalize the amplitude with n_fft
        real /= self.n_fft

        # Overlap and Add algorithm to connect all the frames
        real = overlap_add(real, self.stride)

        # Prepare the window sumsqure for division
        # Only need to create this window once to save time
        # Unless the input spectrograms have different time steps
        if hasattr(self, "w_sum") == False or refresh_win == True:
            self.w_sum = torch_window_sumsquare(
                self.window_mask.flatten(), X.shape[2], self.stride, self.n_fft
            ).flatten()
            self.nonzero_indices = self.w_sum > 1e-10
        else:
            pass
        real[:, self.nonzero_indices] = real[:, self.nonzero_indices].div(
            self.w_sum[self.nonzero_indices]
        )
        # Remove padding
        if length is None:
            if self.center:
                real = real[:, self.pad_amount : -self.pad_amount]

        else:
            if self.center:
                real = real[:, self.pad_amount : self.pad_amount + length]
            else:
                real = real[:, :length]

        return real


class STFT(STFTBase):
    def __init__(
        self,
        n_fft=2048,
        win_length=None,
        freq_bins=None,
        hop_length=None,
        window="hann",
        freq_scale="no",
        center=True,
        pad_mode="reflect",
        iSTFT=False,
        fmin=50,
        fmax=6000,
        sr=22050,
        trainable=False,
        output_format="Complex",
        verbose=True,
    ):

        super().__init__()

        # Trying to make the default setting same as librosa
        if win_length == None:
            win_length = n_fft
        if hop_length == None:
            hop_length = int(win_length // 4)

        self.output_format = output_format
        self.trainable = trainable
        self.stride = hop_length
        self.center = center
        self.pad_mode = pad_mode
        self.n_fft = n_fft
        self.freq_bins = freq_bins
        self.trainable = trainable
        self.pad_amount = self.n_fft // 2
        self.window = window
        self.win_length = win_length
        self.iSTFT = iSTFT
        self.trainable = trainable
        start = time()

        # Create filter windows for stft
        (
            kernel_sin,
            kernel_cos,
            self.bins2freq,
            self.bin_list,
            window_mask,
        ) = create_fourier_kernels(
            n_fft,
            win_length=win_length,
            freq_bins=freq_bins,
            window=window,
            freq_scale=freq_scale,
            fmin=fmin,
            fmax=fmax,
            sr=sr,
            verbose=verbose,
        )

        kernel_sin = torch.tensor(kernel_sin, dtype=torch.float)
        kernel_cos = torch.tensor(kernel_cos, dtype=torch.float)

        # In this way, the inverse kernel and the forward kernel do not share the same memory...
        kernel_sin_inv = torch.cat((kernel_sin, -kernel_sin[1:-1].flip(0)), 0)
        kernel_cos_inv = torch.cat((kernel_cos, kernel_cos[1:-1].flip(0)), 0)

        if iSTFT:
            self.register_buffer("kernel_sin_inv", kernel_sin_inv.unsqueeze(-1))
            self.register_buffer("kernel_cos_inv", kernel_cos_inv.unsqueeze(-1))

        # Applying window functions to the Fourier kernels
        window_mask = torch.tensor(window_mask)
        wsin = kernel_sin * window_mask
        wcos = kernel_cos * window_mask

        if self.trainable == False:
            self.register_buffer("wsin", wsin)
            self.register_buffer("wcos", wcos)

        if self.trainable == True:
            wsin = nn.Parameter(wsin, requires_grad=self.trainable)
            wcos = nn.Parameter(wcos, requires_grad=self.trainable)
            self.register_parameter("wsin", wsin)
            self.register_parameter("wcos", wcos)

            # Prepare the shape of window mask so that it can be used later in inverse
        self.register_buffer("window_mask", window_mask.unsqueeze(0).unsqueeze(-1))

        if verbose == True:
            print("STFT kernels created")
        else:
            pass

    def forward(self, x, output_format=None):
        output_format = output_format or self.output_format
        self.num_samples = x.shape[-1]

        x = broadcast_dim(x)
        if self.center:
            if self.pad_mode == "constant":
                padding = nn.ConstantPad1d(self.pad_amount, 0)

            elif self.pad_mode == "reflect":
                if self.num_samples < self.pad_amount:
                    raise AssertionError(
                        "Signal length shorter than reflect padding length (n_fft // 2)."
                    )
                padding = nn.ReflectionPad1d(self.pad_amount)

            x = padding(x)
        spec_imag = conv1d(x, self.wsin, stride=self.stride)
        spec_real = conv1d(
            x, self.wcos, stride=self.stride
        )  # Doing STFT by using conv1d

        # remove redundant parts
        spec_real = spec_real[:, : self.freq_bins, :]
        spec_imag = spec_imag[:, : self.freq_bins, :]

        if output_format == "Magnitude":
            spec = spec_real.pow(2) + spec_imag.pow(2)
            if self.trainable == True:
                return torch.sqrt(
                    spec + 1e-8
                )  # prevent Nan gradient when sqrt(0) due to output=0
            else:
                return torch.sqrt(spec)

        elif output_format == "Complex":
            return torch.stack(
                (spec_real, -spec_imag), -1
            )  # Remember the minus sign for imaginary part

        elif output_format == "Phase":
            return torch.atan2(
                -spec_imag + 0.0, spec_real
            )  # +0.0 removes -0.0 elements, which leads to error in calculating phase

    def inverse(self, X, onesided=True, length=None, refresh_win=True):
        if (hasattr(self, "kernel_sin_inv") != True) or (
            hasattr(self, "kernel_cos_inv") != True
        ):
            raise NameError(
                "Please activate the iSTFT module by setting `iSTFT=True` if you want to use `inverse`"
            )

        assert X.dim() == 4, (
            "Inverse iSTFT only works for complex number,"
            "make sure our tensor is in the shape of (batch, freq_bins, timesteps, 2)."
            "\nIf you have a magnitude spectrogram, please consider using Griffin-Lim."
        )
        return self.inverse_stft(
            X, self.kernel_cos_inv, self.kernel_sin_inv, onesided, length, refresh_win
        )


spec_layer = None


def get_spec_layer():
    global spec_layer
    spec_layer = torch.compile(STFT(n_fft=64, hop_length=16, sr=16000, output_format="Magnitude", verbose=False))
    return spec_layer


RAISING_INPUTS = {4: "AssertionError"}


def make():
    torch.manual_seed(0)
    layer = STFT(n_fft=64, hop_length=16, sr=16000, output_format="Magnitude", verbose=False)
    x = torch.randn(2, 400)
    return layer, [
        (x,),                      # (batch, len) -> Magnitude
        (x[0], "Complex"),         # (len,)
        (x[:, None, :], "Phase"),  # (batch, 1, len)
        (x, None),
        (x[:, :20],),              # shorter than n_fft // 2: reflect padding refuses
    ]
