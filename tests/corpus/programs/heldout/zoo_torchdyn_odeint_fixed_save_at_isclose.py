"""torchdyn's functional odeint with a fixed-step solver: `if t_span[1] < t_span[0]` flips time, `_fixed_odeint` asserts `all(torch.isclose(t, save_at).sum() == 1 for t in save_at)`, keeps a step only `if torch.isclose(t, save_at).sum()`, and returns `torch.Tensor(save_at)`.

Source: DiffEqML/torchdyn@9f5054aa12d547f8545efb0c8a219cce7e63dec9:torchdyn/numerics/odeint.py:29-88,295-327
Also: torchdyn/numerics/solvers/ode.py@0b12ef84fd82f92e1b0ee2ff2f8e3a4da0c3319b:28-66,170-180 (SolverTemplate,
Euler, SOLVER_DICT, str_to_solver).
Kept: odeint (fixed-step path, string solver lookup, the reversed-time
lambda, the interpolator checks), _fixed_odeint verbatim; SolverTemplate
and Euler verbatim.
Simplified: Euler.step takes the `args` keyword that this odeint passes;
adaptive stepping, Tsitouras45 and interpolators are not reached (the
isinstance check stays against a stub class); a NeuralODE-style module
holds the vector field.
"""
from typing import Callable, Dict, List, Tuple, Union
from warnings import warn

import torch
import torch.nn as nn
from torch import Tensor


class SolverTemplate(nn.Module):
    def __init__(self, order, min_factor: float = 0.2, max_factor: float = 10, safety: float = 0.9):
        super().__init__()
        self.order = order
        self.min_factor = torch.tensor([min_factor])
        self.max_factor = torch.tensor([max_factor])
        self.safety = torch.tensor([safety])
        self.tableau = None

    def sync_device_dtype(self, x, t_span):
        "Ensures `x`, `t_span`, `tableau` and other solver tensors are on the same device with compatible dtypes"
        device = x.device
        if self.tableau is not None:
            c, a, bsol, berr = self.tableau
            self.tableau = c.to(x), [a.to(x) for a in a], bsol.to(x), berr.to(x)
        t_span = t_span.to(device)
        self.safety = self.safety.to(device)
        self.min_factor = self.min_factor.to(device)
        self.max_factor = self.max_factor.to(device)
        return x, t_span

    def step(self, f, x, t, dt, k1=None):
        pass


class Euler(SolverTemplate):
    def __init__(self, dtype=torch.float32):
        """Explicit Euler ODE stepper, order 1"""
        super().__init__(order=1)
        self.dtype = dtype
        self.stepping_class = 'fixed'

    def step(self, f, x, t, dt, k1=None, args=None):
        if k1 == None: k1 = f(t, x)
        x_sol = x + dt * k1
        return None, x_sol, None


class Tsitouras45(SolverTemplate):
    """Stub: only the isinstance check in odeint reaches it."""


SOLVER_DICT = {'euler': Euler}


def str_to_solver(solver_name, dtype=torch.float32):
    "Transforms string specifying desired solver into an instance of the Solver class."
    solver = SOLVER_DICT[solver_name]
    return solver(dtype)


def odeint(f: Callable, x: Tensor, t_span: Union[List, Tensor], solver: Union[str, nn.Module], atol: float = 1e-3, rtol: float = 1e-3,
           t_stops: Union[List, Tensor, None] = None, verbose: bool = False, interpolator: Union[str, Callable, None] = None, return_all_eval: bool = False,
           save_at: Union[List, Tensor] = (), args: Dict = {}, seminorm: Tuple[bool, Union[int, None]] = (False, None)) -> Tuple[Tensor, Tensor]:
    if t_span[1] < t_span[0]:  # time is reversed
        if verbose: warn("You are integrating on a reversed time domain, adjusting the vector field automatically")
        f_ = lambda t, x: -f(-t, x)
        t_span = -t_span
    else: f_ = f

    if type(t_span) == list: t_span = torch.cat(t_span)
    # instantiate the solver in case the user has specified preference via a `str` and ensure compatibility of device ~ dtype
    if type(solver) == str:
        solver = str_to_solver(solver, x.dtype)
    x, t_span = solver.sync_device_dtype(x, t_span)
    stepping_class = solver.stepping_class

    # instantiate the interpolator similar to the solver steps above
    if isinstance(solver, Tsitouras45):
        if verbose: warn("Running interpolation not yet implemented for `tsit5`")
        interpolator = None

    # access parallel integration routines with different t_spans for each sample in `x`.
    if len(t_span.shape) > 1:
        raise NotImplementedError("Parallel routines not implemented yet, check experimental versions of `torchdyn`")
    # odeint routine with a single t_span for all samples
    elif len(t_span.shape) == 1:
        if stepping_class == 'fixed':
            if atol != odeint.__defaults__[0] or rtol != odeint.__defaults__[1]:
                warn("Setting tolerances has no effect on fixed-step methods")
            return _fixed_odeint(f_, x, t_span, solver, save_at=save_at, args=args)
        else:
            raise NotImplementedError("adaptive stepping is not part of this program")


def _fixed_odeint(f, x, t_span, solver, save_at=(), args={}):
    """Solves IVPs with same `t_span`, using fixed-step methods"""
    if len(save_at) == 0: save_at = t_span
    assert all(torch.isclose(t, save_at).sum() == 1 for t in save_at),\
        "each element of save_at [torch.Tensor] must be contained in t_span [torch.Tensor] once and only once"

    t, T, dt = t_span[0], t_span[-1], t_span[1] - t_span[0]

    sol = []
    if torch.isclose(t, save_at).sum():
        sol = [x]

    steps = 1
    while steps <= len(t_span) - 1:
        _, x, _ = solver.step(f, x, t, dt, k1=None, args=args)
        t = t + dt

        if torch.isclose(t, save_at).sum():
            sol.append(x)
        if steps < len(t_span) - 1: dt = t_span[steps+1] - t
        steps += 1

    if isinstance(sol[0], dict):
        final_out = {k: [v] for k, v in sol[0].items()}
        _ = [final_out[k].append(x[k]) for k in x.keys() for x in sol[1:]]
        final_out = {k: torch.stack(v) for k, v in final_out.items()}
    elif isinstance(sol[0], torch.Tensor):
        final_out = torch.stack(sol)
    else:
        raise NotImplementedError(f"{type(x)} is not supported as the state variable")

    return torch.Tensor(save_at), final_out


class VectorField(nn.Module):
    def __init__(self, dim=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 8), nn.Tanh(), nn.Linear(8, dim))

    def forward(self, t, x):
        return self.net(x)


class NeuralODE(nn.Module):
    def __init__(self, vector_field, solver='euler'):
        super().__init__()
        self.vf = vector_field
        self.solver = solver

    def forward(self, x, t_span, save_at=()):
        t_eval, sol = odeint(self.vf, x, t_span, self.solver, save_at=save_at)
        return t_eval, sol


def make():
    torch.manual_seed(0)
    x0 = torch.randn(2, 3)
    t_span = torch.linspace(0, 1, 5)
    return NeuralODE(VectorField()), [
        (x0, t_span),
        (x0, t_span.flip(0)),
        (x0, t_span, t_span[::2]),
    ]


model = torch.compile(NeuralODE(VectorField()))
