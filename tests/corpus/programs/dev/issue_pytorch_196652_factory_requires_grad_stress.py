"""Interatomic-potential inference step: a strain created with `torch.zeros(3, 3, requires_grad=True)` inside the compiled region, symmetric displacement of positions and cell, one `torch.autograd.grad(E, (pos, eps))` for forces and stress.

Source: https://github.com/pytorch/pytorch/pull/196652
(the description: compiling the inference step of a machine-learned
interatomic potential; energy from positions, forces = -dE/dpos, stress =
dE/deps for a symmetric strain applied inside the same step, written as
`eps = torch.zeros(3, 3, requires_grad=True)` and one
`torch.autograd.grad(E, (pos, eps))`; that factory kwarg is reported as an
unconditional graph break).
Kept: that step as described, with the usual strain plumbing
(`0.5 * (eps + eps.T)`, positions and cell displaced by it, stress divided
by the cell volume).
Simplified: the potential is a smooth pair energy over all pairs of 4 atoms
with a learnable per-pair scale; no neighbour list, no periodic images.
"""
import torch
from torch import nn


class PairPotential(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(1.5))
        self.width = nn.Parameter(torch.tensor(0.8))

    def forward(self, pos, cell):
        diff = pos[:, None, :] - pos[None, :, :]
        dist2 = (diff * diff).sum(-1) + torch.eye(pos.shape[0], dtype=pos.dtype)
        pair = self.scale * torch.exp(-dist2 / self.width) / dist2
        pair = pair * (1 - torch.eye(pos.shape[0], dtype=pos.dtype))
        return 0.5 * pair.sum() + 1e-3 * cell.diagonal().sum()


def compute_energy_forces_stress(model, pos, cell):
    pos = pos.detach().requires_grad_(True)
    eps = torch.zeros(3, 3, dtype=pos.dtype, requires_grad=True)
    symmetric_eps = 0.5 * (eps + eps.T)
    strained_pos = pos + pos @ symmetric_eps
    strained_cell = cell + cell @ symmetric_eps
    energy = model(strained_pos, strained_cell)
    grad_pos, grad_eps = torch.autograd.grad(energy, (pos, eps))
    forces = -grad_pos
    volume = torch.linalg.det(cell).abs()
    stress = grad_eps / volume
    return energy.detach(), forces, stress


step = torch.compile(compute_energy_forces_stress, fullgraph=False)


def make():
    torch.manual_seed(0)
    pos = torch.rand(4, 3) * 2.0
    cell = torch.eye(3) * 3.0
    return compute_energy_forces_stress, [(PairPotential(), pos, cell)]
