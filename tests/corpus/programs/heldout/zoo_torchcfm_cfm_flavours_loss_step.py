"""torchcfm 2D training step: `sample_8gaussians` (MultivariateNormal noise, `torch.multinomial` centres picked in a Python loop over the batch), then one of three flow-matcher flavours' `sample_location_and_conditional_flow` (`pad_t_like_x` with its `isinstance(t, float)` check, sigma as float or tensor) and the MLP's MSE loss on `torch.cat([xt, t[:, None]], dim=-1)`.

Source: atong01/conditional-flow-matching@014ce47aef427797ca89b56295520041435ffd8f:torchcfm/conditional_flow_matching.py:1-579
Also: torchcfm/utils.py:11-41 (eight_normal_sample, sample_8gaussians) at 0c6f59ac;
torchcfm/models/models.py:1-21 (MLP) at 2c1bbcd5; the loop body of
examples/CFM_flavours_between_8_gaussians_to_2_moons.py:39-50 (with the
`t[:, None]` of the later examples).
Kept: ConditionalFlowMatcher, TargetConditionalFlowMatcher and
VariancePreservingConditionalFlowMatcher (methods verbatim, docstrings cut),
pad_t_like_x, eight_normal_sample, MLP verbatim.
Simplified: the OT flavours (POT) are left out; sample_moons (torchdyn) is the
x1 argument; loss.backward()/optimizer.step() stay outside the compiled step;
batch 16, MLP width 16.
"""
import math

import numpy as np
import torch


def pad_t_like_x(t, x):
    """Function to reshape the time vector t by the number of dimensions of x."""
    if isinstance(t, float):
        return t
    return t.reshape(-1, *([1] * (x.dim() - 1)))


class ConditionalFlowMatcher:
    """Base class for conditional flow matching methods."""

    def __init__(self, sigma: float = 0.0):
        self.sigma = sigma

    def compute_mu_t(self, x0, x1, t):
        t = pad_t_like_x(t, x0)
        return t * x1 + (1 - t) * x0

    def compute_sigma_t(self, t):
        del t
        return self.sigma

    def sample_xt(self, x0, x1, t, epsilon):
        mu_t = self.compute_mu_t(x0, x1, t)
        sigma_t = self.compute_sigma_t(t)
        sigma_t = pad_t_like_x(sigma_t, x0)
        return mu_t + sigma_t * epsilon

    def compute_conditional_flow(self, x0, x1, t, xt):
        del t, xt
        return x1 - x0

    def sample_noise_like(self, x):
        return torch.randn_like(x)

    def sample_location_and_conditional_flow(self, x0, x1, return_noise=False):
        t = torch.rand(x0.shape[0]).type_as(x0)
        eps = self.sample_noise_like(x0)
        xt = self.sample_xt(x0, x1, t, eps)
        ut = self.compute_conditional_flow(x0, x1, t, xt)
        if return_noise:
            return t, xt, ut, eps
        else:
            return t, xt, ut

    def compute_lambda(self, t):
        sigma_t = self.compute_sigma_t(t)
        return 2 * sigma_t / (self.sigma**2 + 1e-8)


class TargetConditionalFlowMatcher(ConditionalFlowMatcher):
    """Lipman et al. 2023 style target OT conditional flow matching."""

    def compute_mu_t(self, x0, x1, t):
        del x0
        t = pad_t_like_x(t, x1)
        return t * x1

    def compute_sigma_t(self, t):
        return 1 - (1 - self.sigma) * t

    def compute_conditional_flow(self, x0, x1, t, xt):
        del x0
        t = pad_t_like_x(t, x1)
        return (x1 - (1 - self.sigma) * xt) / (1 - (1 - self.sigma) * t)


class VariancePreservingConditionalFlowMatcher(ConditionalFlowMatcher):
    """Albergo et al. 2023 trigonometric interpolants class."""

    def compute_mu_t(self, x0, x1, t):
        t = pad_t_like_x(t, x0)
        return torch.cos(math.pi / 2 * t) * x0 + torch.sin(math.pi / 2 * t) * x1

    def compute_conditional_flow(self, x0, x1, t, xt):
        del xt
        t = pad_t_like_x(t, x0)
        return math.pi / 2 * (torch.cos(math.pi / 2 * t) * x1 - torch.sin(math.pi / 2 * t) * x0)


class MLP(torch.nn.Module):
    def __init__(self, dim, out_dim=None, w=64, time_varying=False):
        super().__init__()
        self.time_varying = time_varying
        if out_dim is None:
            out_dim = dim
        self.net = torch.nn.Sequential(
            torch.nn.Linear(dim + (1 if time_varying else 0), w),
            torch.nn.SELU(),
            torch.nn.Linear(w, w),
            torch.nn.SELU(),
            torch.nn.Linear(w, w),
            torch.nn.SELU(),
            torch.nn.Linear(w, out_dim),
        )

    def forward(self, x):
        return self.net(x)


def eight_normal_sample(n, dim, scale=1, var=1):
    m = torch.distributions.multivariate_normal.MultivariateNormal(
        torch.zeros(dim), math.sqrt(var) * torch.eye(dim)
    )
    centers = [
        (1, 0),
        (-1, 0),
        (0, 1),
        (0, -1),
        (1.0 / np.sqrt(2), 1.0 / np.sqrt(2)),
        (1.0 / np.sqrt(2), -1.0 / np.sqrt(2)),
        (-1.0 / np.sqrt(2), 1.0 / np.sqrt(2)),
        (-1.0 / np.sqrt(2), -1.0 / np.sqrt(2)),
    ]
    centers = torch.tensor(centers) * scale
    noise = m.sample((n,))
    multi = torch.multinomial(torch.ones(8), n, replacement=True)
    data = []
    for i in range(n):
        data.append(centers[multi[i]] + noise[i])
    data = torch.stack(data)
    return data


def sample_8gaussians(n):
    return eight_normal_sample(n, 2, scale=5, var=0.1).float()


def train_step(model, FM, x1, batch_size):
    x0 = sample_8gaussians(batch_size)

    t, xt, ut = FM.sample_location_and_conditional_flow(x0, x1)

    vt = model(torch.cat([xt, t[:, None]], dim=-1))
    loss = torch.mean((vt - ut) ** 2)
    return loss


compiled_step = torch.compile(train_step)


def make():
    torch.manual_seed(0)
    sigma = 0.1
    dim = 2
    batch_size = 16
    model = MLP(dim=dim, w=16, time_varying=True)
    x1 = torch.randn(batch_size, dim) * 3 - 1
    return train_step, [
        (model, ConditionalFlowMatcher(sigma=sigma), x1, batch_size),
        (model, TargetConditionalFlowMatcher(sigma=sigma), x1, batch_size),
        (model, VariancePreservingConditionalFlowMatcher(sigma=sigma), x1, batch_size),
    ]
