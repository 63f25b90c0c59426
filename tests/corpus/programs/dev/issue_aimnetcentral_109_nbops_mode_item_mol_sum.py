"""AIMNet2-style forward over `aimnet.nbops` (pre-#109): `_nb_mode`/`_input_padded` `.item()` reads, data_ptr dedup, mol_sum.

Source: isayevlab/aimnetcentral#109 (https://github.com/isayevlab/aimnetcentral/pull/109)
The PR reports a compiled AIMNet2 forward splitting into 42 graphs / 41 breaks, almost all
`Tensor.item()` reads of mode flags (`get_nb_mode`, `_input_padded`), plus `mol_idx[-1].item()`
in mol_sum, the `data_ptr()`-keyed mask dedup and `torch.bincount` in calc_masks.
nbops code is the pre-PR version, isayevlab/aimnetcentral@2b089e2^:aimnet/nbops.py
(set_nb_mode, get_nb_mode, calc_masks, _calc_mask_ij_mode2, mask_ij_, mask_i_, get_ij,
mol_sum); `_prepare_dtype`/`prepare_input` from aimnet/models/base.py:221-238 and the
forward's pass loop with `if data["_input_padded"].item(): nbops.mask_i_(...)` from
aimnet/models/aimnet2.py:141-187.
Kept: the dict-in/dict-out data plumbing, both the dense (mode 0) and packed-neighbor
(mode 1) layouts, the eager `_num_mol` cache and the compiled-branch `.item()` in mol_sum.
Simplified: the AEV / charge-equilibration / output heads are replaced by a small
stand-in (Gaussian radial features summed over neighbours, one MLP pass, an energy head
through mol_sum); 8 features, up to 5 atoms.
"""
import torch
from torch import Tensor, nn


# ---- aimnet/nbops.py ----
def set_nb_mode(data: dict[str, Tensor]) -> dict[str, Tensor]:
    """Logic to guess and set the neighbor model."""
    if "nbmat" in data:
        if data["nbmat"].ndim == 2:
            data["_nb_mode"] = torch.tensor(1)
        elif data["nbmat"].ndim == 3:
            data["_nb_mode"] = torch.tensor(2)
        else:
            raise ValueError(f"Invalid neighbor matrix shape: {data['nbmat'].shape}")
    else:
        data["_nb_mode"] = torch.tensor(0)
    return data


def get_nb_mode(data: dict[str, Tensor]) -> int:
    """Get the neighbor model."""
    return int(data["_nb_mode"].item())


def calc_masks(data: dict[str, Tensor]) -> dict[str, Tensor]:
    """Calculate neighbor masks"""
    nb_mode = get_nb_mode(data)
    if nb_mode == 0:
        data["mask_i"] = data["numbers"] == 0
        data["mask_ij"] = torch.eye(
            data["numbers"].shape[1], device=data["numbers"].device, dtype=torch.bool
        ).unsqueeze(0)
        if data["mask_i"].any():
            data["_input_padded"] = torch.tensor(True)
            data["_natom"] = data["mask_i"].logical_not().sum(-1)
            data["mol_sizes"] = (~data["mask_i"]).sum(-1)
            data["mask_ij"] = data["mask_ij"] | (data["mask_i"].unsqueeze(-2) + data["mask_i"].unsqueeze(-1))
        else:
            data["_input_padded"] = torch.tensor(False)
            data["_natom"] = torch.tensor(data["numbers"].shape[1], device=data["numbers"].device)
            data["mol_sizes"] = torch.tensor(data["numbers"].shape[1], device=data["numbers"].device)
        data["mask_ij_lr"] = data["mask_ij"]
    elif nb_mode == 1:
        # padding must be the last atom
        data["mask_i"] = torch.zeros(data["numbers"].shape[0], device=data["numbers"].device, dtype=torch.bool)
        data["mask_i"][-1] = True
        # Track processed arrays by their data pointer to avoid redundant mask calculations
        processed: dict[int, str] = {}  # data_ptr -> mask_suffix
        for suffix in ("", "_lr", "_coulomb", "_dftd3"):
            nbmat_key = f"nbmat{suffix}"
            if nbmat_key in data:
                ptr = data[nbmat_key].data_ptr()
                if ptr in processed:
                    data[f"mask_ij{suffix}"] = data[f"mask_ij{processed[ptr]}"]
                    continue
                processed[ptr] = suffix
                data[f"mask_ij{suffix}"] = data[nbmat_key] == data["numbers"].shape[0] - 1
        data["_input_padded"] = torch.tensor(True)
        data["mol_sizes"] = torch.bincount(data["mol_idx"])
        # last atom is padding
        data["mol_sizes"][-1] -= 1
        if not torch.compiler.is_compiling():
            data["_num_mol"] = torch.tensor(data["mol_sizes"].shape[0])
    elif nb_mode == 2:
        data["mask_i"] = data["numbers"] == 0
        processed_nb2: dict[int, str] = {}  # data_ptr -> mask_suffix
        for suffix in ("", "_lr", "_coulomb", "_dftd3"):
            nbmat_key = f"nbmat{suffix}"
            if nbmat_key in data:
                ptr = data[nbmat_key].data_ptr()
                if ptr in processed_nb2:
                    data[f"mask_ij{suffix}"] = data[f"mask_ij{processed_nb2[ptr]}"]
                    continue
                processed_nb2[ptr] = suffix
                data[f"mask_ij{suffix}"] = _calc_mask_ij_mode2(data[nbmat_key], data["mask_i"])
        data["_input_padded"] = torch.tensor(True)
        data["mol_sizes"] = (~data["mask_i"]).sum(-1)
    else:
        raise ValueError(f"Invalid neighbor mode: {nb_mode}")

    return data


def _calc_mask_ij_mode2(nbmat: Tensor, mask_i: Tensor) -> Tensor:
    _, N = mask_i.shape
    local_idx = torch.arange(N, device=nbmat.device).view(1, 1, N)
    local_pad = (nbmat.unsqueeze(-1) == local_idx) & mask_i.to(device=nbmat.device).unsqueeze(1).unsqueeze(1)

    global_pad_idx = torch.where(mask_i.to(device=nbmat.device).flatten())[0]
    if global_pad_idx.numel():
        global_pad = torch.isin(nbmat, global_pad_idx)
    else:
        global_pad = torch.zeros_like(nbmat, dtype=torch.bool)

    center_pad = mask_i.to(device=nbmat.device).unsqueeze(-1)
    return center_pad | local_pad.any(dim=-1) | global_pad


def mask_ij_(
    x: Tensor,
    data: dict[str, Tensor],
    mask_value: float = 0.0,
    inplace: bool = True,
    suffix: str = "",
) -> Tensor:
    mask = data[f"mask_ij{suffix}"]
    for _i in range(x.ndim - mask.ndim):
        mask = mask.unsqueeze(-1)
    if inplace:
        x.masked_fill_(mask, mask_value)
    else:
        x = x.masked_fill(mask, mask_value)
    return x


def mask_i_(x: Tensor, data: dict[str, Tensor], mask_value: float = 0.0, inplace: bool = True) -> Tensor:
    nb_mode = get_nb_mode(data)
    if nb_mode == 0:
        if data["_input_padded"].item():
            mask = data["mask_i"]
            for _i in range(x.ndim - mask.ndim):
                mask = mask.unsqueeze(-1)
            if inplace:
                x.masked_fill_(mask, mask_value)
            else:
                x = x.masked_fill(mask, mask_value)
    elif nb_mode == 1:
        if inplace:
            x[-1] = mask_value
        else:
            x = torch.cat([x[:-1], torch.zeros_like(x[:1])], dim=0)
    elif nb_mode == 2:
        mask = data["mask_i"]
        for _i in range(x.ndim - mask.ndim):
            mask = mask.unsqueeze(-1)
        if inplace:
            x.masked_fill_(mask, mask_value)
        else:
            x = x.masked_fill(mask, mask_value)
    else:
        raise ValueError(f"Invalid neighbor mode: {nb_mode}")
    return x


def get_ij(x: Tensor, data: dict[str, Tensor], suffix: str = "") -> tuple[Tensor, Tensor]:
    nb_mode = get_nb_mode(data)
    if nb_mode == 0:
        x_i = x.unsqueeze(2)
        x_j = x.unsqueeze(1)
    elif nb_mode == 1:
        x_i = x.unsqueeze(1)
        idx = data[f"nbmat{suffix}"]
        x_j = torch.index_select(x, 0, idx.flatten()).unflatten(0, idx.shape)
    elif nb_mode == 2:
        x_i = x.unsqueeze(2)
        idx = data[f"nbmat{suffix}"]
        x_j = torch.index_select(x.flatten(0, 1), 0, idx.flatten()).unflatten(0, idx.shape)
    else:
        raise ValueError(f"Invalid neighbor mode: {nb_mode}")
    return x_i, x_j


def mol_sum(x: Tensor, data: dict[str, Tensor]) -> Tensor:
    nb_mode = get_nb_mode(data)
    if nb_mode in (0, 2):
        res = x.sum(dim=1)
    elif nb_mode == 1:
        assert x.ndim in (
            1,
            2,
        ), "Invalid tensor shape for mol_sum, ndim should be 1 or 2"
        idx = data["mol_idx"]
        if torch.compiler.is_compiling():
            # assuming mol_idx is sorted, replace with max if not
            out_size = int(idx[-1].item()) + 1
        else:
            if "_num_mol" not in data:
                # assuming mol_idx is sorted, replace with max if not
                data["_num_mol"] = torch.tensor(int(idx[-1].item()) + 1)
            out_size = int(data["_num_mol"].item())

        if x.ndim == 1:
            res = torch.zeros(out_size, device=x.device, dtype=x.dtype)
        else:
            idx = idx.unsqueeze(-1).expand(-1, x.shape[1])
            res = torch.zeros(out_size, x.shape[1], device=x.device, dtype=x.dtype)
        res.scatter_add_(0, idx, x)
    else:
        raise ValueError(f"Invalid neighbor mode: {nb_mode}")
    return res


# ---- aimnet/models/base.py + a reduced aimnet2.py forward ----
class AIMNet2Base(nn.Module):
    _required_keys = ["coord", "numbers", "charge"]
    _required_keys_dtype = [torch.float32, torch.int64, torch.float32]
    _optional_keys = ["mult", "nbmat", "nbmat_lr", "mol_idx", "shifts", "shifts_lr", "cell"]
    _optional_keys_dtype = [torch.float32, torch.int64, torch.int64, torch.int64,
                            torch.float32, torch.float32, torch.float32]

    def _prepare_dtype(self, data: dict[str, Tensor]) -> dict[str, Tensor]:
        for k, d in zip(self._required_keys, self._required_keys_dtype, strict=False):
            assert k in data, f"Key {k} is required"
            data[k] = data[k].to(d)
        for k, d in zip(self._optional_keys, self._optional_keys_dtype, strict=False):
            if k in data:
                data[k] = data[k].to(d)
        return data

    def prepare_input(self, data: dict[str, Tensor]) -> dict[str, Tensor]:
        """Common operations for input preparation."""
        data = self._prepare_dtype(data)
        data = set_nb_mode(data)
        data = calc_masks(data)

        assert data["charge"].ndim == 1, "Charge should be 1D tensor."
        if "mult" in data:
            assert data["mult"].ndim == 1, "Mult should be 1D tensor."
        return data


class AIMNet2Lite(AIMNet2Base):
    def __init__(self, nfeature=8, nshifts=4, npass=1):
        super().__init__()
        self.afv = nn.Embedding(10, nfeature, padding_idx=0)
        self.register_buffer("shifts", torch.linspace(0.5, 3.0, nshifts))
        self.mlps = nn.ModuleList(
            [nn.Sequential(nn.Linear(nfeature * nshifts, 16), nn.GELU(), nn.Linear(16, nfeature))
             for _ in range(npass)]
        )
        self.energy = nn.Linear(nfeature, 1)

    def aev(self, data):
        coord_i, coord_j = get_ij(data["coord"], data)
        d_ij = (coord_i - coord_j).norm(dim=-1)
        gs = torch.exp(-((d_ij.unsqueeze(-1) - self.shifts) ** 2))
        gs = mask_ij_(gs, data, mask_value=0.0)
        a_i, a_j = get_ij(data["a"], data)
        avf = (gs.unsqueeze(-1) * a_j.unsqueeze(-2)).sum(-3)
        data["avf"] = avf.flatten(-2)
        return data

    def forward(self, data: dict[str, Tensor]) -> dict[str, Tensor]:
        data = self.prepare_input(data)

        data["a"] = self.afv(data["numbers"])
        data["charge"] = data["charge"].unsqueeze(-1)
        data = self.aev(data)

        _npass = len(self.mlps)
        for ipass, mlp in enumerate(self.mlps):
            _out = mlp(data["avf"])
            if data["_input_padded"].item():
                _out = mask_i_(_out, data, mask_value=0.0)
            if ipass < _npass - 1:
                data["a"] = data["a"] + _out
                data = self.aev(data)
            else:
                data["aim"] = _out

        data["charge"] = data["charge"].squeeze(-1)
        e_i = self.energy(data["aim"]).squeeze(-1)
        data["energy"] = mol_sum(e_i, data)
        return data


model = torch.compile(AIMNet2Lite())


def make():
    torch.manual_seed(0)
    m = AIMNet2Lite()
    # dense layout, second molecule padded with a 0 atom
    dense_padded = {
        "coord": torch.randn(2, 4, 3),
        "numbers": torch.tensor([[1, 6, 8, 1], [1, 6, 1, 0]]),
        "charge": torch.zeros(2),
    }
    dense_full = {
        "coord": torch.randn(2, 4, 3),
        "numbers": torch.tensor([[1, 6, 8, 1], [7, 6, 1, 1]]),
        "charge": torch.zeros(2),
    }
    # packed layout: 4 real atoms in 2 molecules + 1 padding atom (index 4)
    packed = {
        "coord": torch.randn(5, 3),
        "numbers": torch.tensor([6, 1, 8, 1, 0]),
        "charge": torch.zeros(2),
        "mol_idx": torch.tensor([0, 0, 1, 1, 1]),
        "nbmat": torch.tensor([[1, 4], [0, 4], [3, 4], [2, 4], [4, 4]]),
    }
    return m, [(dense_padded,), (dense_full,), (packed,)]
