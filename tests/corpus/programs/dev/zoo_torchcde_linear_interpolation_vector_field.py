"""torchcde's LinearInterpolation inside a neural-CDE vector field: `torch.bucketize` locates the knot, the coefficients are gathered with tensor indices, and the vector field multiplies `func(z)` by `X.derivative(t)` (no data-dependent Python).

Source: patrick-kidger/torchcde@a7b8403a215d7433eb14abe647b39dc098b9933d:torchcde/interpolation_linear.py:163-213
Also: torchcde/solver.py@f0cbd7c858adb401eecd9a4e39077ed9d5ba3650 (_VectorField: `control_gradient = self.X.derivative(t)`,
`vector_field = self.func(t, z)`, `out = (vector_field @ control_gradient.unsqueeze(-1)).squeeze(-1)`).
Kept: LinearInterpolation's constructor, _interpret_t, evaluate and
derivative verbatim; the _VectorField forward shape.
Simplified: InterpolationBase is nn.Module; the CDE function is a two-layer
MLP; one explicit Euler step instead of torchdiffeq.
"""
import torch
from torch import nn


class LinearInterpolation(nn.Module):
    def __init__(self, coeffs, t=None, **kwargs):
        super(LinearInterpolation, self).__init__(**kwargs)

        if t is None:
            t = torch.linspace(0, coeffs.size(-2) - 1, coeffs.size(-2), dtype=coeffs.dtype, device=coeffs.device)

        derivs = (coeffs[..., 1:, :] - coeffs[..., :-1, :]) / (t[1:] - t[:-1]).unsqueeze(-1)

        self.register_buffer('_t', t)
        self.register_buffer('_coeffs', coeffs)
        self.register_buffer('_derivs', derivs)

    @property
    def grid_points(self):
        return self._t

    @property
    def interval(self):
        return torch.stack([self._t[0], self._t[-1]])

    def _interpret_t(self, t):
        t = torch.as_tensor(t, dtype=self._derivs.dtype, device=self._derivs.device)
        maxlen = self._derivs.size(-2) - 1
        # clamp because t may go outside of [t[0], t[-1]]; this is fine
        index = torch.bucketize(t.detach(), self._t.detach()).sub(1).clamp(0, maxlen)
        # will never access the last element of self._t; this is correct behaviour
        fractional_part = t - self._t[index]
        return fractional_part, index

    def evaluate(self, t):
        fractional_part, index = self._interpret_t(t)
        fractional_part = fractional_part.unsqueeze(-1)
        prev_coeff = self._coeffs[..., index, :]
        next_coeff = self._coeffs[..., index + 1, :]
        prev_t = self._t[index]
        next_t = self._t[index + 1]
        diff_t = next_t - prev_t
        return prev_coeff + fractional_part * (next_coeff - prev_coeff) / diff_t.unsqueeze(-1)

    def derivative(self, t):
        fractional_part, index = self._interpret_t(t)
        deriv = self._derivs[..., index, :]
        return deriv


class CDEFunc(nn.Module):
    def __init__(self, input_channels, hidden_channels):
        super().__init__()
        self.input_channels = input_channels
        self.hidden_channels = hidden_channels
        self.linear1 = nn.Linear(hidden_channels, 8)
        self.linear2 = nn.Linear(8, input_channels * hidden_channels)

    def forward(self, t, z):
        z = self.linear1(z).relu()
        z = self.linear2(z).tanh()
        return z.view(z.size(0), self.hidden_channels, self.input_channels)


class VectorField(nn.Module):
    def __init__(self, X, func):
        super().__init__()
        self.X = X
        self.func = func

    def forward(self, t, z):
        control_gradient = self.X.derivative(t)
        vector_field = self.func(t, z)
        out = (vector_field @ control_gradient.unsqueeze(-1)).squeeze(-1)
        return out


class NeuralCDEStep(nn.Module):
    def __init__(self, coeffs, hidden=4):
        super().__init__()
        self.X = LinearInterpolation(coeffs)
        self.initial = nn.Linear(coeffs.size(-1), hidden)
        self.field = VectorField(self.X, CDEFunc(coeffs.size(-1), hidden))

    def forward(self, t, dt):
        z0 = self.initial(self.X.evaluate(self.X.interval[0]))
        return z0 + dt * self.field(t, z0)


def make():
    torch.manual_seed(0)
    coeffs = torch.randn(2, 5, 3)
    model = NeuralCDEStep(coeffs)
    return model, [(torch.tensor(0.5), 0.1), (torch.tensor(3.7), 0.1), (torch.tensor(9.0), 0.2)]


def build(coeffs):
    return torch.compile(NeuralCDEStep(coeffs))
