"""lightly NTXentLoss with a memory bank: the MemoryBankModule base lazily builds its bank, then `_dequeue_and_enqueue` reads `ptr = int(self.bank_ptr)` and branches on `ptr + batch_size >= self.size[0]`.

Source: lightly-ai/lightly@00283d72a429b1d471e09fc04ad56ed1c35673c2:lightly/loss/ntx_ent_loss.py:14-180
Also: lightly/models/modules/memory_bank.py@18ba2492a9de612576ce36ec14e01d34f99a13f2:16-177 (MemoryBankModule).
Kept: MemoryBankModule verbatim (size tuple, buffers, @torch.no_grad init and
enqueue, dim_first transpose, `update` flag) and NTXentLoss.forward verbatim
(memory-bank branch and the in-batch branch with `logits_00[~diag_mask]`).
Simplified: lightly.utils.dist is a single-process stand-in and the
multi-process gather branch (dist.gather, eye_rank) raises instead; bank of
8 entries of dim 4.
"""
import warnings
from typing import Sequence, Union

import torch
from torch import Tensor
from torch import distributed as torch_dist
from torch import nn
from torch.nn import Module


class dist:
    """lightly.utils.dist in a single process."""

    @staticmethod
    def world_size() -> int:
        return 1

    @staticmethod
    def rank() -> int:
        return 0


def concat_all_gather(x: Tensor) -> Tensor:
    return x


class MemoryBankModule(Module):
    def __init__(
        self,
        size: Union[int, Sequence[int]] = 65536,
        gather_distributed: bool = False,
        dim_first: bool = True,
    ):
        super().__init__()
        size_tuple = (size,) if isinstance(size, int) else tuple(size)

        if any(x < 0 for x in size_tuple):
            raise ValueError(
                f"Illegal memory bank size {size}, all entries must be non-negative."
            )

        self.size = size_tuple
        self.gather_distributed = gather_distributed
        self.dim_first = dim_first
        self.register_buffer(
            "bank",
            tensor=torch.empty(size=self.size, dtype=torch.float),
            persistent=False,
        )
        self.register_buffer(
            "bank_ptr",
            tensor=torch.empty(1, dtype=torch.long),
            persistent=False,
        )

        if isinstance(size, int) and size > 0:
            warnings.warn(
                (
                    f"Memory bank size 'size={size}' does not specify feature "
                    "dimension. It is recommended to set the feature dimension with "
                    "'size=(n, dim)' when creating the memory bank. Distributed "
                    "training might fail if the feature dimension is not set."
                ),
                UserWarning,
            )
        else:
            self._init_memory_bank(dim=None)

    @torch.no_grad()
    def _init_memory_bank(self, dim: Union[Sequence[int], None]):
        if dim is None:
            # Feature dimension has been specified when initializing the memory bank.
            size = self.size
        else:
            # Feature dimension was inferred from batch.
            size = (self.size[0], *dim)
        self.bank = torch.randn(size).type_as(self.bank)
        self.bank = torch.nn.functional.normalize(self.bank, dim=-1)
        self.bank_ptr = torch.zeros(1).type_as(self.bank_ptr)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, batch: Tensor):
        if self.gather_distributed:
            batch = concat_all_gather(batch)

        batch_size = batch.shape[0]
        ptr = int(self.bank_ptr)
        if ptr + batch_size >= self.size[0]:
            self.bank[ptr:] = batch[: self.size[0] - ptr].detach()
            self.bank_ptr[0] = 0
        else:
            self.bank[ptr : ptr + batch_size] = batch.detach()
            self.bank_ptr[0] = ptr + batch_size

    def forward(
        self,
        output: Tensor,
        labels: Union[Tensor, None] = None,
        update: bool = False,
    ):
        # no memory bank, return the output
        if self.size[0] == 0:
            return output, None

        # initialize the memory bank if it is not already done
        if self.bank.ndim == 1:
            dim = output.shape[1:]
            self._init_memory_bank(dim)

        # query and update memory bank
        bank = self.bank.clone().detach()
        if self.dim_first:
            # swap bank size and feature dimension for backwards compatibility
            bank = bank.transpose(0, -1)

        # only update memory bank if we later do backward pass (gradient)
        if update:
            self._dequeue_and_enqueue(output)

        return output, bank


class NTXentLoss(MemoryBankModule):
    def __init__(
        self,
        temperature: float = 0.5,
        memory_bank_size: Union[int, Sequence[int]] = 0,
        gather_distributed: bool = False,
    ):
        super(NTXentLoss, self).__init__(
            size=memory_bank_size, gather_distributed=gather_distributed
        )
        self.temperature = temperature
        self.gather_distributed = gather_distributed
        self.cross_entropy = nn.CrossEntropyLoss(reduction="mean")
        self.eps = 1e-8

        if abs(self.temperature) < self.eps:
            raise ValueError(
                "Illegal temperature: abs({}) < 1e-8".format(self.temperature)
            )
        if gather_distributed and not torch_dist.is_available():
            raise ValueError(
                "gather_distributed is True but torch.distributed is not available. "
                "Please set gather_distributed=False or install a torch version with "
                "distributed support."
            )

    def forward(self, out0: torch.Tensor, out1: torch.Tensor):
        device = out0.device
        batch_size, _ = out0.shape

        # normalize the output to length 1
        out0 = nn.functional.normalize(out0, dim=1)
        out1 = nn.functional.normalize(out1, dim=1)

        out1, negatives = super(NTXentLoss, self).forward(
            out1, update=out0.requires_grad
        )

        if negatives is not None:
            # use negatives from memory bank
            negatives = negatives.to(device)

            sim_pos = torch.einsum("nc,nc->n", out0, out1).unsqueeze(-1)

            sim_neg = torch.einsum("nc,ck->nk", out0, negatives)

            logits = torch.cat([sim_pos, sim_neg], dim=1) / self.temperature
            labels = torch.zeros(logits.shape[0], device=device, dtype=torch.long)

        else:
            if self.gather_distributed and dist.world_size() > 1:
                raise NotImplementedError("multi-process gather is not part of this program")
            else:
                # single process
                out0_large = out0
                out1_large = out1
                diag_mask = torch.eye(batch_size, device=out0.device, dtype=torch.bool)

            logits_00 = torch.einsum("nc,mc->nm", out0, out0_large) / self.temperature
            logits_01 = torch.einsum("nc,mc->nm", out0, out1_large) / self.temperature
            logits_10 = torch.einsum("nc,mc->nm", out1, out0_large) / self.temperature
            logits_11 = torch.einsum("nc,mc->nm", out1, out1_large) / self.temperature

            # remove simliarities between same views of the same image
            logits_00 = logits_00[~diag_mask].view(batch_size, -1)
            logits_11 = logits_11[~diag_mask].view(batch_size, -1)

            logits_0100 = torch.cat([logits_01, logits_00], dim=1)
            logits_1011 = torch.cat([logits_10, logits_11], dim=1)
            logits = torch.cat([logits_0100, logits_1011], dim=0)

            # create labels
            labels = torch.arange(batch_size, device=device, dtype=torch.long)
            if self.gather_distributed:
                labels = labels + dist.rank() * batch_size
            labels = labels.repeat(2)

        loss = self.cross_entropy(logits, labels)

        return loss


class MoCoCriterion(nn.Module):
    """The MoCo example's criterion, compiled once for the training loop."""

    def __init__(self):
        super().__init__()
        self.criterion = NTXentLoss(temperature=0.1, memory_bank_size=(8, 4))

    def forward(self, query, key):
        return self.criterion(query, key)


def make():
    torch.manual_seed(0)
    crit = MoCoCriterion()
    q = torch.randn(3, 4, requires_grad=True)
    k = torch.randn(3, 4)
    q_full = torch.randn(8, 4, requires_grad=True)
    k_full = torch.randn(8, 4)
    return crit, [(q, k), (q_full, k_full), (q.detach(), k)]


def train_setup():
    return torch.compile(MoCoCriterion())
