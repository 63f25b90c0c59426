"""FFJORD ODEfunc.forward: the CNF dynamics count evaluations in a buffer (`self._num_evals += 1`), wrap `t` with `torch.tensor(t)`, lazily sample and cache the Hutchinson noise on `self._e`, force `requires_grad_` under `torch.set_grad_enabled(True)`, and take the divergence with `torch.autograd.grad` (Hutchinson estimate in training, a brute-force per-dimension loop for 2-D data in eval).

Source: rtqichen/ffjord@994864a:lib/layers/odefunc.py:13-60,83-173,255-313
Also: lib/layers/diffeq_layers/basic.py:76-85 (ConcatSquashLinear), lib/layers/cnf.py (the
odeint call that passes (z, logpz) states to the compiled function).
Kept: divergence_bf, divergence_approx, sample_rademacher_like, sample_gaussian_like,
NONLINEARITIES, ODEnet (linear branch: the layer-type table, the stride loop, forward's layer
loop), ODEfunc verbatim.
Simplified: ODEnet's conv layer table is dropped (conv=False path only; squeeze/unsqueeze are
unused with num_squeeze=0 and omitted); the toy 2-D setting (hidden 16-16, softplus); the
odeint solver is a fixed-step Euler loop stand-in.
"""
import copy
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def divergence_bf(dx, y, **unused_kwargs):
    sum_diag = 0.
    for i in range(y.shape[1]):
        sum_diag += torch.autograd.grad(dx[:, i].sum(), y, create_graph=True)[0].contiguous()[:, i].contiguous()
    return sum_diag.contiguous()


def divergence_approx(f, y, e=None):
    e_dzdx = torch.autograd.grad(f, y, e, create_graph=True)[0]
    e_dzdx_e = e_dzdx * e
    approx_tr_dzdx = e_dzdx_e.view(y.shape[0], -1).sum(dim=1)
    return approx_tr_dzdx


def sample_rademacher_like(y):
    return torch.randint(low=0, high=2, size=y.shape).to(y) * 2 - 1


def sample_gaussian_like(y):
    return torch.randn_like(y)


class ConcatSquashLinear(nn.Module):
    def __init__(self, dim_in, dim_out):
        super(ConcatSquashLinear, self).__init__()
        self._layer = nn.Linear(dim_in, dim_out)
        self._hyper_bias = nn.Linear(1, dim_out, bias=False)
        self._hyper_gate = nn.Linear(1, dim_out)

    def forward(self, t, x):
        return self._layer(x) * torch.sigmoid(self._hyper_gate(t.view(1, 1))) \
            + self._hyper_bias(t.view(1, 1))


class Swish(nn.Module):

    def __init__(self):
        super(Swish, self).__init__()
        self.beta = nn.Parameter(torch.tensor(1.0))

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


class Lambda(nn.Module):

    def __init__(self, f):
        super(Lambda, self).__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


NONLINEARITIES = {
    "tanh": nn.Tanh(),
    "relu": nn.ReLU(),
    "softplus": nn.Softplus(),
    "elu": nn.ELU(),
    "swish": Swish(),
    "square": Lambda(lambda x: x**2),
    "identity": Lambda(lambda x: x),
}


class ODEnet(nn.Module):
    """
    Helper class to make neural nets for use in continuous normalizing flows
    """

    def __init__(
        self, hidden_dims, input_shape, strides, conv, layer_type="concat", nonlinearity="softplus", num_squeeze=0
    ):
        super(ODEnet, self).__init__()
        self.num_squeeze = num_squeeze
        assert not conv
        strides = [None] * (len(hidden_dims) + 1)
        base_layer = {
            "concatsquash": ConcatSquashLinear,
        }[layer_type]

        # build layers and add them
        layers = []
        activation_fns = []
        hidden_shape = input_shape

        for dim_out, stride in zip(hidden_dims + (input_shape[0],), strides):
            if stride is None:
                layer_kwargs = {}
            else:
                raise ValueError('Unsupported stride: {}'.format(stride))

            layer = base_layer(hidden_shape[0], dim_out, **layer_kwargs)
            layers.append(layer)
            activation_fns.append(NONLINEARITIES[nonlinearity])

            hidden_shape = list(copy.copy(hidden_shape))
            hidden_shape[0] = dim_out

        self.layers = nn.ModuleList(layers)
        self.activation_fns = nn.ModuleList(activation_fns[:-1])

    def forward(self, t, y):
        dx = y
        for l, layer in enumerate(self.layers):
            dx = layer(t, dx)
            # if not last layer, use nonlinearity
            if l < len(self.layers) - 1:
                dx = self.activation_fns[l](dx)
        return dx


class ODEfunc(nn.Module):

    def __init__(self, diffeq, divergence_fn="approximate", residual=False, rademacher=False):
        super(ODEfunc, self).__init__()
        assert divergence_fn in ("brute_force", "approximate")

        # self.diffeq = diffeq_layers.wrappers.diffeq_wrapper(diffeq)
        self.diffeq = diffeq
        self.residual = residual
        self.rademacher = rademacher

        if divergence_fn == "brute_force":
            self.divergence_fn = divergence_bf
        elif divergence_fn == "approximate":
            self.divergence_fn = divergence_approx

        self.register_buffer("_num_evals", torch.tensor(0.))

    def before_odeint(self, e=None):
        self._e = e
        self._num_evals.fill_(0)

    def num_evals(self):
        return self._num_evals.item()

    def forward(self, t, states):
        assert len(states) >= 2
        y = states[0]

        # increment num evals
        self._num_evals += 1

        # convert to tensor
        t = torch.tensor(t).type_as(y)
        batchsize = y.shape[0]

        # Sample and fix the noise.
        if self._e is None:
            if self.rademacher:
                self._e = sample_rademacher_like(y)
            else:
                self._e = sample_gaussian_like(y)

        with torch.set_grad_enabled(True):
            y.requires_grad_(True)
            t.requires_grad_(True)
            for s_ in states[2:]:
                s_.requires_grad_(True)
            dy = self.diffeq(t, y, *states[2:])
            # Hack for 2D data to use brute force divergence computation.
            if not self.training and dy.view(dy.shape[0], -1).shape[1] == 2:
                divergence = divergence_bf(dy, y).view(batchsize, 1)
            else:
                divergence = self.divergence_fn(dy, y, e=self._e).view(batchsize, 1)
        if self.residual:
            dy = dy - y
            divergence -= torch.ones_like(divergence) * torch.tensor(np.prod(y.shape[1:]), dtype=torch.float32
                                                                     ).to(divergence)
        return tuple([dy, -divergence] + [torch.zeros_like(s_).requires_grad_(True) for s_ in states[2:]])


def build_odefunc():
    diffeq = ODEnet(hidden_dims=(16, 16), input_shape=(2,), strides=None, conv=False,
                    layer_type="concatsquash", nonlinearity="softplus")
    odefunc = ODEfunc(diffeq=diffeq, divergence_fn="approximate", residual=False, rademacher=False)
    odefunc.before_odeint()
    return odefunc


def odeint(func, states, t0=0.0, t1=0.5, steps=4):
    """Fixed-step Euler stand-in for torchdiffeq.odeint as called by CNF.forward."""
    h = (t1 - t0) / steps
    for k in range(steps):
        t = torch.tensor(t0 + k * h)
        d = func(t, states)
        states = tuple(s + h * ds for s, ds in zip(states, d))
    return states


def cnf_logprob(x):
    odefunc = torch.compile(build_odefunc())
    zero = torch.zeros(x.shape[0], 1).to(x)
    z, delta_logp = odeint(odefunc, (x, zero))
    return z, delta_logp


def make():
    torch.manual_seed(0)
    x = torch.randn(5, 2)
    logp = torch.zeros(5, 1)
    return build_odefunc().eval(), [(torch.tensor(0.25), (x, logp))]
