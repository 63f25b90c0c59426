"""Open-Unmix multichannel Wiener filter: `expectation_maximization` walks frames in batches with `pos = int(t[-1]) + 1` inside `while pos < nb_frames`, and builds 2x2 complex covariances through `_mul_add`/`_invert` helpers.

Source: sigsep/open-unmix-pytorch@0445f62ddbe2a83f5bf183bfbed8fd5bf59031d8:openunmix/filtering.py:14-515
Kept: _norm, _mul_add, _mul, _inv, _invert, expectation_maximization, wiener
and _covariance verbatim (softmask/residual flags, iterations == 0 early
return, max_abs rescale, the per-source R[j] weighted update, the
cartesian_prod index loops with `index[0]` tensor indexing).
Simplified: docstrings trimmed; sizes: 3 frames, 2 bins, 2 channels, 2 sources,
batch_size 2 so the frame loop runs twice; float32 inputs (open-unmix's models run
in float32, and `y[t, ...] = torch.tensor(0.0)` fails on a float64 `y`).
"""
from typing import Optional

import torch


def _norm(x: torch.Tensor) -> torch.Tensor:
    return torch.abs(x[..., 0])**2 + torch.abs(x[..., 1])**2


def _mul_add(
    a: torch.Tensor,
    b: torch.Tensor,
    out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Element-wise multiplication of two complex Tensors described
    through their real and imaginary parts.
    The result is added to the `out` tensor"""

    # check `out` and allocate it if needed
    target_shape = torch.Size([
        max(sa, sb) for (sa, sb) in zip(a.shape, b.shape)])
    if out is None or out.shape != target_shape:
        out = torch.zeros(target_shape, dtype=a.dtype, device=a.device)
    if out is a:
        real_a = a[..., 0]
        out[..., 0] = out[..., 0] + (
            real_a * b[..., 0] - a[..., 1] * b[..., 1])
        out[..., 1] = out[..., 1] + (
            real_a * b[..., 1] + a[..., 1] * b[..., 0])
    else:
        out[..., 0] = out[..., 0] + (
            a[..., 0] * b[..., 0] - a[..., 1] * b[..., 1])
        out[..., 1] = out[..., 1] + (
            a[..., 0] * b[..., 1] + a[..., 1] * b[..., 0])
    return out


def _mul(
    a: torch.Tensor,
    b: torch.Tensor,
    out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    target_shape = torch.Size([
        max(sa, sb) for (sa, sb) in zip(a.shape, b.shape)])
    if out is None or out.shape != target_shape:
        out = torch.zeros(target_shape, dtype=a.dtype, device=a.device)
    if out is a:
        real_a = a[..., 0]
        out[..., 0] = real_a * b[..., 0] - a[..., 1] * b[..., 1]
        out[..., 1] = real_a * b[..., 1] + a[..., 1] * b[..., 0]
    else:
        out[..., 0] = a[..., 0] * b[..., 0] - a[..., 1] * b[..., 1]
        out[..., 1] = a[..., 0] * b[..., 1] + a[..., 1] * b[..., 0]
    return out


def _inv(
    z: torch.Tensor,
    out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    ez = _norm(z)
    if out is None or out.shape != z.shape:
        out = torch.zeros_like(z)
    out[..., 0] = z[..., 0] / ez
    out[..., 1] = -z[..., 1] / ez
    return out


def _conj(
    z,
    out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    if out is None or out.shape != z.shape:
        out = torch.zeros_like(z)
    out[..., 0] = z[..., 0]
    out[..., 1] = -z[..., 1]
    return out


def _invert(
    M: torch.Tensor,
    out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    nb_channels = M.shape[-2]

    if out is None or out.shape != M.shape:
        out = torch.empty_like(M)

    if nb_channels == 1:
        # scalar case
        out = _inv(M, out)
    elif nb_channels == 2:
        # two channels case: analytical expression

        # first compute the determinent
        det = _mul(M[..., 0, 0, :], M[..., 1, 1, :])
        det = det - _mul(M[..., 0, 1, :], M[..., 1, 0, :])
        # invert it
        invDet = _inv(det)

        # then fill out the matrix with the inverse
        out[..., 0, 0, :] = _mul(invDet, M[..., 1, 1, :], out[..., 0, 0, :])
        out[..., 1, 0, :] = _mul(-invDet, M[..., 1, 0, :], out[..., 1, 0, :])
        out[..., 0, 1, :] = _mul(-invDet, M[..., 0, 1, :], out[..., 0, 1, :])
        out[..., 1, 1, :] = _mul(invDet, M[..., 0, 0, :], out[..., 1, 1, :])
    else:
        raise Exception('Only 2 channels are supported for the torch version.')
    return out


def expectation_maximization(
    y: torch.Tensor,
    x: torch.Tensor,
    iterations: int = 2,
    eps: float = 1e-10,
    batch_size: int = 200
):
    # dimensions
    (nb_frames, nb_bins, nb_channels) = x.shape[:-1]
    nb_sources = y.shape[-1]

    regularization = torch.cat(
        (
            torch.eye(nb_channels, dtype=x.dtype, device=x.device)[..., None],
            torch.zeros(
                (nb_channels, nb_channels, 1),
                dtype=x.dtype,
                device=x.device
            )
        ),
        dim=2
    )
    regularization = torch.sqrt(torch.as_tensor(eps))*(
        regularization[None, None, ...].expand(
                            (-1, nb_bins, -1, -1, -1))
    )

    # allocate the spatial covariance matrices
    R = [
        torch.zeros(
            (nb_bins, nb_channels, nb_channels, 2),
            dtype=x.dtype, device=x.device
        )
        for j in range(nb_sources)
    ]
    weight: torch.Tensor = torch.zeros(
        (nb_bins,),
        dtype=x.dtype, device=x.device
    )

    v: torch.Tensor = torch.zeros(
        (nb_frames, nb_bins, nb_sources),
        dtype=x.dtype,
        device=x.device
    )
    for it in range(iterations):
        # constructing the mixture covariance matrix. Doing it with a loop
        # to avoid storing anytime in RAM the whole 6D tensor

        # update the PSD as the average spectrogram over channels
        v = torch.mean(
            torch.abs(y[..., 0, :])**2 + torch.abs(y[..., 1, :])**2,
            dim=-2
        )

        # update spatial covariance matrices (weighted update)
        for j in range(nb_sources):
            R[j] = torch.tensor(0.0, device=x.device)
            weight = torch.tensor(eps, device=x.device)
            pos: int = 0
            batch_size = batch_size if batch_size else nb_frames
            while pos < nb_frames:
                t = torch.arange(pos, min(nb_frames, pos+batch_size))
                pos = int(t[-1]) + 1

                R[j] = R[j] + torch.sum(
                    _covariance(y[t, ..., j]),
                    dim=0
                )
                weight = weight + torch.sum(v[t, ..., j], dim=0)
            R[j] = R[j] / weight[..., None, None, None]
            weight = torch.zeros_like(weight)

        # cloning y if we track gradient, because we're going to update it
        if y.requires_grad:
            y = y.clone()

        pos = 0
        while pos < nb_frames:
            t = torch.arange(pos, min(nb_frames, pos+batch_size))
            pos = int(t[-1]) + 1

            y[t, ...] = torch.tensor(0.0, device=x.device)

            # compute mix covariance matrix
            Cxx = regularization
            for j in range(nb_sources):
                Cxx = Cxx + (
                    v[t, ..., j, None, None, None]
                    * R[j][None, ...].clone()
                )

            # invert it
            inv_Cxx = _invert(Cxx)

            # separate the sources
            for j in range(nb_sources):

                # create a wiener gain for this source
                gain = torch.zeros_like(inv_Cxx)

                # computes multichannel Wiener gain as v_j R_j inv_Cxx
                indices = torch.cartesian_prod(
                    torch.arange(nb_channels),
                    torch.arange(nb_channels),
                    torch.arange(nb_channels)
                )
                for index in indices:
                    gain[:, :, index[0], index[1], :] = _mul_add(
                            R[j][None, :, index[0], index[2], :].clone(),
                            inv_Cxx[:, :, index[2], index[1], :],
                            gain[:, :, index[0], index[1], :]
                    )
                gain = gain * v[t, ..., None, None, None, j]

                # apply it to the mixture
                for i in range(nb_channels):
                    y[t, ..., j] = _mul_add(
                        gain[..., i, :],
                        x[t, ..., i, None, :],
                        y[t, ..., j]
                    )

    return y, v, R


def wiener(
    targets_spectrograms: torch.Tensor,
    mix_stft: torch.Tensor,
    iterations: int = 1,
    softmask: bool = False,
    residual: bool = False,
    scale_factor: float = 10.0,
    eps: float = 1e-10
):
    if softmask:
        # if we use softmask, we compute the ratio mask for all targets and
        # multiply by the mix stft
        y = mix_stft[..., None] * (
            targets_spectrograms /
            (
                eps +
                torch.sum(
                    targets_spectrograms, dim=-1, keepdim=True
                ).to(mix_stft.dtype)
            )
        )[..., None, :]
    else:
        # otherwise, we just multiply the targets spectrograms with mix phase
        # we tacitly assume that we have magnitude estimates.
        angle = torch.atan2(mix_stft[..., 1], mix_stft[..., 0])[..., None]
        nb_sources = targets_spectrograms.shape[-1]
        y = torch.zeros(
            mix_stft.shape + (nb_sources,),
            dtype=mix_stft.dtype,
            device=mix_stft.device
        )
        y[..., 0, :] = targets_spectrograms * torch.cos(angle)
        y[..., 1, :] = targets_spectrograms * torch.sin(angle)

    if residual:
        # if required, adding an additional target as the mix minus
        # available targets
        y = torch.cat(
            [y, mix_stft[..., None] - y.sum(dim=-1, keepdim=True)],
            dim=-1
        )

    if iterations == 0:
        return y

    # we need to refine the estimates. Scales down the estimates for
    # numerical stability
    max_abs = torch.max(
        torch.as_tensor(1., dtype=mix_stft.dtype, device=mix_stft.device),
        torch.sqrt(_norm(mix_stft)).max()/scale_factor
    )

    mix_stft = mix_stft / max_abs
    y = y / max_abs

    # call expectation maximization
    y = expectation_maximization(y, mix_stft, iterations, eps=eps, batch_size=2)[0]

    # scale estimates up again
    y = y * max_abs
    return y


def _covariance(y_j):
    (nb_frames, nb_bins, nb_channels) = y_j.shape[:-1]
    Cj = torch.zeros((nb_frames, nb_bins, nb_channels, nb_channels, 2),
                     dtype=y_j.dtype,
                     device=y_j.device)
    indices = torch.cartesian_prod(
        torch.arange(nb_channels),
        torch.arange(nb_channels)
    )
    for index in indices:
        Cj[:, :, index[0], index[1], :] = _mul_add(
            y_j[:, :, index[0], :],
            _conj(y_j[:, :, index[1], :]),
            Cj[:, :, index[0], index[1], :]
        )
    return Cj


compiled_wiener = torch.compile(wiener, dynamic=False)


def make():
    torch.manual_seed(0)
    spectrograms = torch.rand(3, 2, 2, 2)
    mix_stft = torch.randn(3, 2, 2, 2)
    return wiener, [
        (spectrograms, mix_stft, 1, False, False),
        (spectrograms, mix_stft, 1, True, True),
        (spectrograms, mix_stft, 0, False, False),
    ]
