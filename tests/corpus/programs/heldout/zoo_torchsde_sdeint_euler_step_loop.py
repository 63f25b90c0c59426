"""torchsde's BaseSDESolver.integrate with the Euler method: `for out_t in ts[1:]: while curr_t < out_t:` steps with `next_t = min(curr_t + step_size, ts[-1])` on tensor times, and `interp.linear_interp` asserts `t0 <= t <= t1`.

Source: google-research/torchsde@eb3a00e31cbd56176270066ed2f62c394cf6acb7:torchsde/_core/base_solver.py (BaseSDESolver.__init__, integrate)
Also: torchsde/_core/methods/euler.py (Euler), torchsde/_core/interp.py (linear_interp),
torchsde/_core/base_sde.py (f_and_g_prod for diagonal noise), same commit.
Kept: integrate verbatim (adaptive and fixed branches), the constructor's
type checks, Euler.step and linear_interp verbatim.
Simplified: settings enums are plain strings; better_abc is dropped; the
Brownian motion is a fixed-increment stand-in (`sqrt(t1 - t0) * z`) so runs
are deterministic; in the adaptive branch (not reached: adaptive=False) the
adaptive_stepping.compute_error/update_step_size calls are replaced by an
inline RMS error estimate; a latent-SDE-style module owns drift and
diffusion networks.
"""
import warnings

import torch
from torch import nn


def linear_interp(t0, y0, t1, y1, t):
    assert t0 <= t <= t1, f"Incorrect time order for linear interpolation: t0={t0}, t={t}, t1={t1}."
    y = (t1 - t) / (t1 - t0) * y0 + (t - t0) / (t1 - t0) * y1
    return y


class FixedIncrementBrownian:
    levy_area_approximation = "none"

    def __init__(self, z):
        self.z = z
        self.shape = z.shape

    def __call__(self, ta, tb):
        return torch.sqrt(tb - ta) * self.z


class BaseSDESolver:
    """API for solvers with possibly adaptive time stepping."""

    def __init__(self, sde, bm, dt, adaptive, rtol, atol, dt_min, options, **kwargs):
        super(BaseSDESolver, self).__init__(**kwargs)
        if sde.sde_type != self.sde_type:
            raise ValueError(f"SDE is of type {sde.sde_type} but solver is for type {self.sde_type}")
        if sde.noise_type not in self.noise_types:
            raise ValueError(f"SDE has noise type {sde.noise_type} but solver only supports noise types "
                             f"{self.noise_types}")
        if bm.levy_area_approximation not in self.levy_area_approximations:
            raise ValueError(f"SDE solver requires one of {self.levy_area_approximations} set as the "
                             f"`levy_area_approximation` on the Brownian motion.")

        self.sde = sde
        self.bm = bm
        self.dt = dt
        self.adaptive = adaptive
        self.rtol = rtol
        self.atol = atol
        self.dt_min = dt_min
        self.options = options

    def init_extra_solver_state(self, t0, y0):
        return ()

    def step(self, t0, t1, y0, extra0):
        raise NotImplementedError

    def integrate(self, y0, ts, extra0):
        step_size = self.dt

        prev_t = curr_t = ts[0]
        prev_y = curr_y = y0
        curr_extra = extra0

        ys = [y0]
        prev_error_ratio = None

        for out_t in ts[1:]:
            while curr_t < out_t:
                next_t = min(curr_t + step_size, ts[-1])
                if self.adaptive:
                    # Take 1 full step.
                    next_y_full, _ = self.step(curr_t, next_t, curr_y, curr_extra)
                    # Take 2 half steps.
                    midpoint_t = 0.5 * (curr_t + next_t)
                    midpoint_y, midpoint_extra = self.step(curr_t, midpoint_t, curr_y, curr_extra)
                    next_y, next_extra = self.step(midpoint_t, next_t, midpoint_y, midpoint_extra)

                    # Estimate error based on difference between 1 full step and 2 half steps.
                    with torch.no_grad():
                        error_estimate = torch.sqrt(torch.mean(((next_y_full - next_y) / (self.atol + self.rtol * next_y.abs())) ** 2))
                        prev_error_ratio = error_estimate

                    if step_size < self.dt_min:
                        warnings.warn("Hitting minimum allowed step size in adaptive time-stepping.")
                        step_size = self.dt_min
                        prev_error_ratio = None

                    # Accept step.
                    if error_estimate <= 1 or step_size <= self.dt_min:
                        prev_t, prev_y = curr_t, curr_y
                        curr_t, curr_y, curr_extra = next_t, next_y, next_extra
                else:
                    prev_t, prev_y = curr_t, curr_y
                    curr_y, curr_extra = self.step(curr_t, next_t, curr_y, curr_extra)
                    curr_t = next_t
            ys.append(linear_interp(t0=prev_t, y0=prev_y, t1=curr_t, y1=curr_y, t=out_t))

        return torch.stack(ys, dim=0), curr_extra


class Euler(BaseSDESolver):
    weak_order = 1.0
    sde_type = "ito"
    noise_types = ("additive", "diagonal", "scalar", "general")
    levy_area_approximations = ("none", "space-time", "davie", "foster")

    def __init__(self, sde, **kwargs):
        self.strong_order = 1.0 if sde.noise_type == "additive" else 0.5
        super(Euler, self).__init__(sde=sde, **kwargs)

    def step(self, t0, t1, y0, extra0):
        del extra0
        dt = t1 - t0
        I_k = self.bm(t0, t1)

        f, g_prod = self.sde.f_and_g_prod(t0, y0, I_k)

        y1 = y0 + f * dt + g_prod
        return y1, ()


class LatentSDE(nn.Module):
    sde_type = "ito"
    noise_type = "diagonal"

    def __init__(self, dim=3):
        super().__init__()
        self.drift = nn.Sequential(nn.Linear(dim, 8), nn.Tanh(), nn.Linear(8, dim))
        self.diffusion = nn.Sequential(nn.Linear(dim, dim), nn.Sigmoid())

    def f(self, t, y):
        return self.drift(y)

    def g(self, t, y):
        return self.diffusion(y)

    def f_and_g_prod(self, t, y, v):
        return self.f(t, y), self.g(t, y) * v


class SDESampler(nn.Module):
    def __init__(self, dim=3):
        super().__init__()
        self.sde = LatentSDE(dim)

    def forward(self, y0, ts, z, dt=0.1):
        bm = FixedIncrementBrownian(z)
        solver = Euler(sde=self.sde, bm=bm, dt=dt, adaptive=False, rtol=1e-5, atol=1e-4,
                       dt_min=1e-5, options={})
        extra0 = solver.init_extra_solver_state(ts[0], y0)
        ys, _ = solver.integrate(y0, ts, extra0)
        return ys


def make():
    torch.manual_seed(0)
    y0 = torch.randn(2, 3)
    z = torch.randn(2, 3)
    ts = torch.tensor([0.0, 0.25, 0.5])
    return SDESampler(), [(y0, ts, z), (y0, ts, z, 0.2)]


sampler = torch.compile(SDESampler())
