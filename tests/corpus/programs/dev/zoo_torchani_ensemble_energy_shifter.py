"""TorchANI energy head: an Ensemble of ANIModels (per-species networks applied to the atoms found by
`mask.nonzero()`, skipped when `midx.shape[0] == 0`, results put back with masked_scatter_) followed
by EnergyShifter's self-energy lookup with padding atoms (-1) zeroed, chained by torchani.nn.Sequential.

Source: aiqm/torchani@2fcc6486d9d97eaa1aee8653d091f6bd4ba64e87 (tag 2.2):torchani/nn.py:1-101,
torchani/utils.py:140-191
Kept: SpeciesEnergies, ANIModel (ModuleDict, ensureOrderedDict, the per-species loop), Ensemble
(`sum_ += x(species_input)[1]`), Sequential (cell/pbc keywords passed through), EnergyShifter
(double self energies, `self_energies[species == torch.tensor(-1, ...)] = ...`) as written.
Simplified: the atomic networks are Linear(24, 16)-CELU(0.1)-Linear(16, 1) instead of the
neurochem-loaded ones; 4 species, 2 ensemble members, AEVs given directly (as in torchani's
cached-AEV training), made-up self energies.
"""
from collections import OrderedDict
from typing import NamedTuple, Optional, Tuple

import torch
from torch import Tensor


class SpeciesEnergies(NamedTuple):
    species: Tensor
    energies: Tensor


class ANIModel(torch.nn.ModuleDict):
    """ANI model that compute energies from species and AEVs."""

    @staticmethod
    def ensureOrderedDict(modules):
        if isinstance(modules, OrderedDict):
            return modules
        od = OrderedDict()
        for i, m in enumerate(modules):
            od[str(i)] = m
        return od

    def __init__(self, modules):
        super(ANIModel, self).__init__(self.ensureOrderedDict(modules))

    def forward(self, species_aev: Tuple[Tensor, Tensor],
                cell: Optional[Tensor] = None,
                pbc: Optional[Tensor] = None) -> SpeciesEnergies:
        species, aev = species_aev
        species_ = species.flatten()
        aev = aev.flatten(0, 1)

        output = aev.new_zeros(species_.shape)

        for i, (_, m) in enumerate(self.items()):
            mask = (species_ == i)
            midx = mask.nonzero().flatten()
            if midx.shape[0] > 0:
                input_ = aev.index_select(0, midx)
                output.masked_scatter_(mask, m(input_).flatten())
        output = output.view_as(species)
        return SpeciesEnergies(species, torch.sum(output, dim=1))


class Ensemble(torch.nn.ModuleList):
    """Compute the average output of an ensemble of modules."""

    def __init__(self, modules):
        super().__init__(modules)
        self.size = len(modules)

    def forward(self, species_input: Tuple[Tensor, Tensor],
                cell: Optional[Tensor] = None,
                pbc: Optional[Tensor] = None) -> SpeciesEnergies:
        sum_ = 0
        for x in self:
            sum_ += x(species_input)[1]
        species, _ = species_input
        return SpeciesEnergies(species, sum_ / self.size)


class Sequential(torch.nn.ModuleList):
    """Modified Sequential module that accept Tuple type as input"""

    def __init__(self, *modules):
        super(Sequential, self).__init__(modules)

    def forward(self, input_: Tuple[Tensor, Tensor],
                cell: Optional[Tensor] = None,
                pbc: Optional[Tensor] = None):
        for module in self:
            input_ = module(input_, cell=cell, pbc=pbc)
        return input_


class EnergyShifter(torch.nn.Module):
    """Helper class for adding and subtracting self atomic energies"""

    def __init__(self, self_energies, fit_intercept=False):
        super(EnergyShifter, self).__init__()

        self.fit_intercept = fit_intercept
        if self_energies is not None:
            self_energies = torch.tensor(self_energies, dtype=torch.double)

        self.register_buffer('self_energies', self_energies)

    def sae(self, species):
        intercept = 0.0
        if self.fit_intercept:
            intercept = self.self_energies[-1]

        self_energies = self.self_energies[species]
        self_energies[species == torch.tensor(-1, device=species.device)] = torch.tensor(0, device=species.device, dtype=torch.double)
        return self_energies.sum(dim=1) + intercept

    def forward(self, species_energies: Tuple[Tensor, Tensor],
                cell: Optional[Tensor] = None,
                pbc: Optional[Tensor] = None) -> SpeciesEnergies:
        species, energies = species_energies
        sae = self.sae(species)
        return SpeciesEnergies(species, energies + sae)


AEV_DIM = 24


def atomic_network():
    return torch.nn.Sequential(
        torch.nn.Linear(AEV_DIM, 16),
        torch.nn.CELU(0.1),
        torch.nn.Linear(16, 1),
    )


def build_model():
    members = [ANIModel([atomic_network() for _ in range(4)]) for _ in range(2)]
    energy_shifter = EnergyShifter([-0.60, -38.08, -54.71, -75.19])
    return Sequential(Ensemble(members), energy_shifter)


model = torch.compile(build_model())


def make():
    torch.manual_seed(0)
    net = build_model()
    species = torch.tensor([[0, 1, 2, 3, 0], [1, 0, 0, 3, -1]])
    aevs = torch.randn(2, 5, AEV_DIM)
    # second input: no atom of species 2 (its network is skipped)
    species_no_n = torch.tensor([[0, 1, 1, 3, 0], [1, 0, 0, -1, -1]])
    return net, [((species, aevs),), ((species_no_n, aevs),)]
