"""fairchem UMA charge/spin embedding, `pos_emb` config: null spin zeroed through `torch.where(x == 0)[0]`.

Source: facebookresearch/fairchem#1907 (https://github.com/facebookresearch/fairchem/pull/1907)
The PR removes the graph break in `ChgSpinEmbedding`'s rand_emb path ("Before:
x.tolist() -> str(i) -> dict lookup -> torch.tensor([...])"). This program is the
pre-fix code: ChgSpinEmbedding (the target_dict version) and DatasetEmbedding
as they stood in fairchem's UMA model code before the PR, and the
backbone's `csd_embedding` (with its record_function block) plus the
charge/spin/dataset embedding plumbing of eSCNMDBackbone (uma/escn_md.py),
called the way its forward does (`data_dict.get("dataset", None)`).
This variant runs the same module under the `pos_emb` configuration (the
sinusoidal type UMA configs also use), whose spin path zeroes the null spin with
`emb[torch.where(x == 0)[0]] = 0`.
Kept: all three embedding types' code, the DatasetEmbedding "mptrj"/"salex"
remap, the SiLU(mix_csd(cat(...))) mix.
Simplified: only the embedding part of the backbone (no graph generation, no
blocks, no MOLE coefficients); sphere_channels 8; data_dict is a plain dict.
"""
from typing import Literal

import torch
import torch.nn as nn
from torch.profiler import record_function

EMB_TYPE = "pos_emb"




class ChgSpinEmbedding(nn.Module):
    def __init__(
        self,
        embedding_type: Literal["pos_emb", "lin_emb", "rand_emb"],
        embedding_target: Literal["charge", "spin"],
        embedding_size: int,
        grad: bool,
        scale: float = 1.0,
    ) -> None:
        super().__init__()
        assert embedding_type in ["pos_emb", "lin_emb", "rand_emb"]
        self.embedding_type = embedding_type
        assert embedding_target in ["charge", "spin"]
        self.embedding_target = embedding_target
        assert embedding_size % 2 == 0, f"{embedding_size=} must be even"

        if self.embedding_target == "charge":
            # 100 is a conservative upper bound
            self.target_dict = {str(x): x + 100 for x in range(-100, 101)}
        elif self.embedding_target == "spin":
            # 100 is a conservative upper bound
            self.target_dict = {str(x): x for x in range(101)}

        if self.embedding_type == "pos_emb":
            # dividing by 2 because x_proj multiplies by 2
            if not grad:
                self.W = nn.Parameter(
                    torch.randn(embedding_size // 2) * scale, requires_grad=False
                )
            else:
                self.W = nn.Parameter(
                    torch.randn(embedding_size // 2) * scale, requires_grad=True
                )
        elif self.embedding_type == "lin_emb":
            self.lin_emb = nn.Linear(in_features=1, out_features=embedding_size)
            if not grad:
                for param in self.lin_emb.parameters():
                    param.requires_grad = False
        elif self.embedding_type == "rand_emb":
            self.rand_emb = nn.Embedding(len(self.target_dict), embedding_size)
            if not grad:
                for param in self.rand_emb.parameters():
                    param.requires_grad = False

        else:
            raise ValueError(f"embedding type {self.embedding_type} not implemented")

    def forward(self, x):
        # null token for spin is 0
        # charge is default 0
        if self.embedding_type == "pos_emb":
            x_proj = x[:, None] * self.W[None, :] * 2 * torch.pi
            if self.embedding_target == "charge":
                return torch.cat([torch.sin(x_proj), torch.cos(x_proj)], dim=-1)
            elif self.embedding_target == "spin":
                zero_idxs = torch.where(x == 0)[0]
                emb = torch.cat([torch.sin(x_proj), torch.cos(x_proj)], dim=-1)
                # this sets the null spin embedding to zero
                emb[zero_idxs] = 0
                return emb
        elif self.embedding_type == "lin_emb":
            if self.embedding_target == "spin":
                x[x == 0] = -100
            return self.lin_emb(x.unsqueeze(-1).float())
        elif self.embedding_type == "rand_emb":
            return self.rand_emb(
                torch.tensor(
                    [self.target_dict[str(i)] for i in x.tolist()],
                    device=x.device,
                    dtype=torch.long,
                )
            )
        raise ValueError(f"embedding type {self.embedding_type} not implemented")


class DatasetEmbedding(nn.Module):
    def __init__(self, embedding_size, grad, dataset_list):
        super().__init__()
        self.embedding_size = embedding_size
        self.dataset_emb_dict = nn.ModuleDict({})
        for dataset in dataset_list:
            if dataset not in self.dataset_emb_dict:
                self.dataset_emb_dict[dataset] = nn.Embedding(1, embedding_size)
            if not grad:
                for param in self.dataset_emb_dict[dataset].parameters():
                    param.requires_grad = False

    def forward(self, dataset_list):
        device = list(self.parameters())[0].device
        emb_idx = torch.tensor(0, device=device, dtype=torch.long)

        # TODO: this is a hack to accomodate the MPA finetuning
        # emb_for_datasets = [
        #     self.dataset_emb_dict[dataset](emb_idx) for dataset in dataset_list
        # ]
        emb_for_datasets = [
            self.dataset_emb_dict["omat"](emb_idx)
            if dataset in ["mptrj", "salex"]
            else self.dataset_emb_dict[dataset](emb_idx)
            for dataset in dataset_list
        ]

        return torch.stack(emb_for_datasets, dim=0)


class UMABackboneEmbeddings(nn.Module):
    """The charge/spin/dataset part of eSCNMDBackbone (__init__ plumbing and csd_embedding)."""

    def __init__(self, sphere_channels=8, chg_spin_emb_type=EMB_TYPE, use_dataset_embedding=True,
                 dataset_list=("omat", "omol", "oc20")):
        super().__init__()
        self.sphere_channels = sphere_channels
        self.use_dataset_embedding = use_dataset_embedding
        self.charge_embedding = ChgSpinEmbedding(
            chg_spin_emb_type,
            "charge",
            self.sphere_channels,
            grad=True,
        )
        self.spin_embedding = ChgSpinEmbedding(
            chg_spin_emb_type,
            "spin",
            self.sphere_channels,
            grad=True,
        )
        if self.use_dataset_embedding:
            self.dataset_embedding = DatasetEmbedding(
                self.sphere_channels, grad=True, dataset_list=list(dataset_list)
            )
            self.mix_csd = nn.Linear(3 * self.sphere_channels, self.sphere_channels)
        else:
            self.mix_csd = nn.Linear(2 * self.sphere_channels, self.sphere_channels)

    def csd_embedding(self, charge, spin, dataset):
        with record_function("charge spin dataset embeddings"):
            # Add charge, spin, and dataset embeddings
            chg_emb = self.charge_embedding(charge)
            spin_emb = self.spin_embedding(spin)
            if self.use_dataset_embedding:
                assert dataset is not None
                dataset_emb = self.dataset_embedding(dataset)
                return torch.nn.SiLU()(
                    self.mix_csd(torch.cat((chg_emb, spin_emb, dataset_emb), dim=1))
                )
            return torch.nn.SiLU()(self.mix_csd(torch.cat((chg_emb, spin_emb), dim=1)))

    def forward(self, data_dict):
        csd_mixed_emb = self.csd_embedding(
            charge=data_dict["charge"],
            spin=data_dict["spin"],
            dataset=data_dict.get("dataset", None),
        )
        return csd_mixed_emb


def make():
    torch.manual_seed(0)
    data_a = {
        "charge": torch.tensor([0.0, 1.0]),
        "spin": torch.tensor([1.0, 2.0]),
        "dataset": ["omol", "mptrj"],
    }
    data_b = {
        "charge": torch.tensor([-1.0, 0.0, 2.0]),
        "spin": torch.tensor([0.0, 1.0, 3.0]),
        "dataset": ["omat", "oc20", "salex"],
    }
    model = UMABackboneEmbeddings()
    return model, [(data_a,), (data_b,)]


backbone = torch.compile(UMABackboneEmbeddings())
