"""normflows' ActNorm: the first batch initialises the scale and shift, gated by `if not self.data_dep_init_done > 0.0` on a registered buffer; AffineConstFlow's batch_dims come from `torch.nonzero(...).tolist()` in the constructor.

Source: VincentStimper/normalizing-flows@3b48cfe6e102e85dce7b9b1ce05a4e5c5ee664e4:normflows/flows/normalization.py:7-39
Also: normflows/flows/affine/coupling.py@063c8a6f50579432f3ab816fa01f59354b850bfc:10-52 (AffineConstFlow).
Kept: ActNorm.forward/inverse and AffineConstFlow verbatim (including the
np.prod over batch dims and the buffer reassignment).
Simplified: Flow base class reduced to nn.Module; a three-layer stack sums
log-determinants; make() loads one ActNorm's buffer as if from a checkpoint.
"""
import numpy as np
import torch
from torch import nn


class Flow(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, z):
        raise NotImplementedError("Forward pass has not been implemented.")

    def inverse(self, z):
        raise NotImplementedError("This flow has no algebraic inverse.")


class AffineConstFlow(Flow):
    def __init__(self, shape, scale=True, shift=True):
        super().__init__()
        if scale:
            self.s = nn.Parameter(torch.zeros(shape)[None])
        else:
            self.register_buffer('s', torch.zeros(shape)[None])
        if shift:
            self.t = nn.Parameter(torch.zeros(shape)[None])
        else:
            self.register_buffer('t', torch.zeros(shape)[None])
        self.n_dim = self.s.dim()
        self.batch_dims = torch.nonzero(torch.tensor(self.s.shape) == 1, as_tuple=False)[:, 0].tolist()

    def forward(self, z):
        z_ = z * torch.exp(self.s) + self.t
        if len(self.batch_dims) > 1:
            prod_batch_dims = np.prod([z.size(i) for i in self.batch_dims[1:]])
        else:
            prod_batch_dims = 1
        log_det = prod_batch_dims * torch.sum(self.s)
        return z_, log_det

    def inverse(self, z):
        z_ = (z - self.t) * torch.exp(-self.s)
        if len(self.batch_dims) > 1:
            prod_batch_dims = np.prod([z.size(i) for i in self.batch_dims[1:]])
        else:
            prod_batch_dims = 1
        log_det = -prod_batch_dims * torch.sum(self.s)
        return z_, log_det


class ActNorm(AffineConstFlow):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.data_dep_init_done_cpu = torch.tensor(0.0)
        self.register_buffer("data_dep_init_done", self.data_dep_init_done_cpu)

    def forward(self, z):
        # first batch is used for initialization, c.f. batchnorm
        if not self.data_dep_init_done > 0.0:
            assert self.s is not None and self.t is not None
            s_init = -torch.log(z.std(dim=self.batch_dims, keepdim=True) + 1e-6)
            self.s.data = s_init.data
            self.t.data = (
                -z.mean(dim=self.batch_dims, keepdim=True) * torch.exp(self.s)
            ).data
            self.data_dep_init_done = torch.tensor(1.0)
        return super().forward(z)


class FlowStack(nn.Module):
    def __init__(self, shape=(3, 1, 1)):
        super().__init__()
        self.flows = nn.ModuleList([ActNorm(shape), ActNorm(shape), AffineConstFlow(shape)])

    def forward(self, z):
        log_det_tot = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        for flow in self.flows:
            z, log_det = flow(z)
            log_det_tot += log_det
        return z, log_det_tot


def make():
    torch.manual_seed(0)
    model = FlowStack()
    # the second ActNorm comes from a checkpoint (its buffer is already 1.0),
    # so one call takes both sides of the data_dep_init_done test
    state = model.state_dict()
    state["flows.1.data_dep_init_done"] = torch.tensor(1.0)
    model.load_state_dict(state)
    z = torch.randn(4, 3, 2, 2)
    return model, [(z,), (z * 2.0,)]


flow = torch.compile(FlowStack())
