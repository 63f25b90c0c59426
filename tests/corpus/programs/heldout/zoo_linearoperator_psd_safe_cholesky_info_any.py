"""linear_operator psd_safe_cholesky: `cholesky_ex` then `if settings.trace_mode.on() or not torch.any(info)`, a NaN check that raises with `.item()` in the message, and a jitter retry loop that warns and re-tests `torch.any(info)`.

Source: cornellius-gp/linear_operator@386cff780e1fc17317d3c1ce19604b5637736ca5:linear_operator/utils/cholesky.py:13-74
Also: linear_operator/settings.py:9-118,194-213,544-605 (_dtype_value_context,
_feature_flag, _value_context, cholesky_jitter, cholesky_max_tries, trace_mode,
verbose_linalg), linear_operator/utils/errors.py (NanError, NotPSDError),
linear_operator/utils/warnings.py (NumericalWarning); the caller follows gpytorch's
exact prediction: an RBF covariance (gpytorch/kernels/rbf_kernel.py postprocess_rbf),
observation noise on the diagonal, psd_safe_cholesky, cholesky_solve.
Kept: _psd_safe_cholesky and psd_safe_cholesky verbatim (the verbose_linalg logger
check, the `out` tuple, the jitter loop with `(info > 0) * ...` diagonal add and
NumericalWarning); settings classes with their classmethods (no context-manager
use); the errors' class names.
Simplified: the settings module becomes a namespace class; the kernel has a fixed
lengthscale; 5 training points of dimension 2.
"""
from __future__ import annotations

import logging
import warnings

import torch
from torch import nn


class NanError(RuntimeError):
    pass


class NotPSDError(RuntimeError):
    pass


class NumericalWarning(RuntimeWarning):
    """
    Warning thrown when convergence criteria are not met, or when comptuations require extra stability.
    """

    pass


class _dtype_value_context:
    _global_float_value = None
    _global_double_value = None
    _global_half_value = None

    @classmethod
    def value(cls, dtype):
        if torch.is_tensor(dtype):
            dtype = dtype.dtype
        if dtype == torch.float:
            return cls._global_float_value
        elif dtype == torch.double:
            return cls._global_double_value
        elif dtype == torch.half:
            return cls._global_half_value
        else:
            raise RuntimeError(f"Unsupported dtype for {cls.__name__}.")


class _feature_flag:
    _default = False
    _state = None

    @classmethod
    def is_default(cls):
        return cls._state is None

    @classmethod
    def on(cls):
        if cls.is_default():
            return cls._default
        return cls._state

    @classmethod
    def off(cls):
        return not cls.on()


class _value_context:
    _global_value = None

    @classmethod
    def value(cls):
        return cls._global_value


class settings:
    class cholesky_jitter(_dtype_value_context):
        _global_float_value = 1e-6
        _global_double_value = 1e-8

    class cholesky_max_tries(_value_context):
        _global_value = 3

    class trace_mode(_feature_flag):
        _default = False

    class verbose_linalg(_feature_flag):
        _default = False

        # Create a global logger
        logger = logging.getLogger("LinAlg (Verbose)")
        logger.setLevel(logging.DEBUG)


def _psd_safe_cholesky(A, out=None, jitter=None, max_tries=None):
    # Maybe log
    if settings.verbose_linalg.on():
        settings.verbose_linalg.logger.debug(f"Running Cholesky on a matrix of size {A.shape}.")

    if out is not None:
        out = (out, torch.empty(A.shape[:-2], dtype=torch.int32, device=out.device))

    L, info = torch.linalg.cholesky_ex(A, out=out)
    if settings.trace_mode.on() or not torch.any(info):
        return L

    isnan = torch.isnan(A)
    if isnan.any():
        raise NanError(f"cholesky_cpu: {isnan.sum().item()} of {A.numel()} elements of the {A.shape} tensor are NaN.")

    if jitter is None:
        jitter = settings.cholesky_jitter.value(A.dtype)
    if max_tries is None:
        max_tries = settings.cholesky_max_tries.value()
    Aprime = A.clone()
    jitter_prev = 0
    for i in range(max_tries):
        jitter_new = jitter * (10**i)
        # add jitter only where needed
        diag_add = ((info > 0) * (jitter_new - jitter_prev)).unsqueeze(-1).expand(*Aprime.shape[:-1])
        Aprime.diagonal(dim1=-1, dim2=-2).add_(diag_add)
        jitter_prev = jitter_new
        warnings.warn(
            f"A not p.d., added jitter of {jitter_new:.1e} to the diagonal",  # noqa: E231
            NumericalWarning,
        )
        L, info = torch.linalg.cholesky_ex(Aprime, out=out)
        if not torch.any(info):
            return L
    raise NotPSDError(
        f"Matrix not positive definite after repeatedly adding jitter up to {jitter_new:.1e}."  # noqa: E231
    )


def psd_safe_cholesky(A, upper=False, out=None, jitter=None, max_tries=None):
    L = _psd_safe_cholesky(A, out=out, jitter=jitter, max_tries=max_tries)
    if upper:
        if out is not None:
            out = out.transpose_(-1, -2)
        else:
            L = L.mT
    return L


def postprocess_rbf(dist_mat):
    return dist_mat.div_(-2).exp_()


class ExactGPPredictor(nn.Module):
    def __init__(self, lengthscale=0.7, noise=1e-4):
        super().__init__()
        self.register_buffer("lengthscale", torch.tensor(lengthscale))
        self.noise = noise

    def covar(self, x1, x2):
        x1_ = x1.div(self.lengthscale)
        x2_ = x2.div(self.lengthscale)
        return postprocess_rbf(torch.cdist(x1_, x2_).pow(2))

    def forward(self, train_x, train_y, test_x):
        train_train = self.covar(train_x, train_x)
        train_train = train_train + self.noise * torch.eye(train_x.shape[-2], dtype=train_x.dtype)
        L = psd_safe_cholesky(train_train)
        alpha = torch.cholesky_solve(train_y.unsqueeze(-1), L)
        test_train = self.covar(test_x, train_x)
        return (test_train @ alpha).squeeze(-1)


predictor = torch.compile(ExactGPPredictor(noise=0.0))

RAISING_INPUTS = {2: "NanError"}


def make():
    torch.manual_seed(0)
    train_x = torch.rand(5, 2)
    train_y = torch.sin(train_x.sum(-1))
    test_x = torch.rand(3, 2)
    # duplicated rows with zero noise make the covariance singular: the jitter loop runs
    dup_x = torch.cat([train_x[:3], train_x[:2]], 0)
    nan_x = train_x.clone()
    nan_x[1, 0] = float("nan")
    model = ExactGPPredictor(noise=0.0)
    return model, [
        (train_x, train_y, test_x),
        (dup_x, train_y, test_x),
        (nan_x, train_y, test_x),
    ]
