"""minDiffusion DDIM.sample: reverse loop with `if i > 1 else 0` noise, 0-d schedule indexing and `.repeat` timesteps.

Source: cloneofsimo/minDiffusion@00a3c8066d25a34d3d472ef6c87c7b6b238ea444:mindiffusion/ddim.py:1-37
(DDPM base and ddpm_schedules from mindiffusion/ddpm.py@a2acee308f78f060eaa87017dfca774e2186eef2:9-80)
Kept: DDIM subclassing DDPM (`super(DDIM, self).__init__`), schedules
registered as buffers in a loop, `self.eta`, and DDIM.sample as written:
`torch.randn(n_sample, *size).to(device)`, the `range(self.n_T, 1, -1)`
loop, `z = ... if i > 1 else 0`, `torch.tensor(i / self.n_T).to(device)
.repeat(n_sample, 1)`, x0 prediction and the c1/c2 coefficients from
`self.alphabar_t[i]` scalars.
Simplified: the NaiveUnet eps model is replaced by a two-conv model taking
(x, t) with t added as a per-sample bias; 1x8x8 images, n_T 6. The sampler
method is what gets compiled (`torch.compile(ddim.sample)`), in eval mode.
"""
from typing import Dict, Tuple

import torch
import torch.nn as nn


def ddpm_schedules(beta1: float, beta2: float, T: int) -> Dict[str, torch.Tensor]:
    """
    Returns pre-computed schedules for DDPM sampling, training process.
    """
    assert beta1 < beta2 < 1.0, "beta1 and beta2 must be in (0, 1)"

    beta_t = (beta2 - beta1) * torch.arange(0, T + 1, dtype=torch.float32) / T + beta1
    sqrt_beta_t = torch.sqrt(beta_t)
    alpha_t = 1 - beta_t
    log_alpha_t = torch.log(alpha_t)
    alphabar_t = torch.cumsum(log_alpha_t, dim=0).exp()

    sqrtab = torch.sqrt(alphabar_t)
    oneover_sqrta = 1 / torch.sqrt(alpha_t)

    sqrtmab = torch.sqrt(1 - alphabar_t)
    mab_over_sqrtmab_inv = (1 - alpha_t) / sqrtmab

    return {
        "alpha_t": alpha_t,
        "oneover_sqrta": oneover_sqrta,
        "sqrt_beta_t": sqrt_beta_t,
        "alphabar_t": alphabar_t,
        "sqrtab": sqrtab,
        "sqrtmab": sqrtmab,
        "mab_over_sqrtmab": mab_over_sqrtmab_inv,
    }


class TinyEpsModel(nn.Module):
    def __init__(self, n_channel: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(n_channel, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, n_channel, 3, padding=1)

    def forward(self, x, t) -> torch.Tensor:
        h = torch.relu(self.conv1(x) + t.view(-1, 1, 1, 1))
        return self.conv2(h)


class DDPM(nn.Module):
    def __init__(
        self,
        eps_model: nn.Module,
        betas: Tuple[float, float],
        n_T: int,
        criterion: nn.Module = nn.MSELoss(),
    ) -> None:
        super(DDPM, self).__init__()
        self.eps_model = eps_model
        self.vars = ddpm_schedules(betas[0], betas[1], n_T)
        # register
        for k, v in self.vars.items():
            self.register_buffer(k, v)

        self.n_T = n_T
        self.criterion = criterion


# https://arxiv.org/abs/2010.02502
class DDIM(DDPM):
    def __init__(
            self,
            eps_model: nn.Module,
            betas: Tuple[float, float],
            eta: float,
            n_T: int,
            criterion: nn.Module = nn.MSELoss(),
    ) -> None:
        super(DDIM, self).__init__(eps_model, betas, n_T, criterion)
        self.eta = eta

    # modified from https://github.com/ermongroup/ddim/blob/51cb290f83049e5381b09a4cc0389f16a4a02cc9/functions/denoising.py#L10-L32
    def sample(self, n_sample: int, size, device) -> torch.Tensor:
        x_i = torch.randn(n_sample, *size).to(device)  # x_T ~ N(0, 1)

        for i in range(self.n_T, 1, -1):
            z = torch.randn(n_sample, *size).to(device) if i > 1 else 0
            eps = self.eps_model(x_i, torch.tensor(i / self.n_T).to(device).repeat(n_sample, 1))
            x0_t = (x_i - eps * (1 - self.alphabar_t[i]).sqrt()) / self.alphabar_t[i].sqrt()
            c1 = self.eta * ((1 - self.alphabar_t[i] / self.alphabar_t[i - 1]) * (1 - self.alphabar_t[i - 1]) / (
                    1 - self.alphabar_t[i])).sqrt()
            c2 = ((1 - self.alphabar_t[i - 1]) - c1 ** 2).sqrt()
            x_i = self.alphabar_t[i - 1].sqrt() * x0_t + c1 * z + c2 * eps

        return x_i


def sampler(device="cpu"):
    ddim = DDIM(eps_model=TinyEpsModel(1), betas=(1e-4, 0.02), eta=0.5, n_T=6)
    ddim.to(device)
    ddim.eval()
    return torch.compile(ddim.sample)


def make():
    torch.manual_seed(0)
    ddim = DDIM(eps_model=TinyEpsModel(1), betas=(1e-4, 0.02), eta=0.5, n_T=6)
    ddim.eval()
    return ddim.sample, [(4, (1, 8, 8), "cpu"), (2, (1, 8, 8), torch.device("cpu"))]
