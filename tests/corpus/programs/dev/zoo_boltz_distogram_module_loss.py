"""Boltz-1's distogram head and loss: the pair representation is symmetrised and projected to bins, and distogram_loss masks the diagonal with `torch.eye` and averages a masked cross-entropy (no data-dependent Python).

Source: jwohlwend/boltz@832486dafed7b80e1246a3fed895e9bb03976558:src/boltz/model/loss/distogram.py:1-47
Also: src/boltz/model/modules/trunk.py:656-688 (DistogramModule), same commit.
Kept: DistogramModule and distogram_loss verbatim, including the
output/feats dict plumbing.
Simplified: the Boltz1 model around them is reduced to a wrapper that runs
the head and the loss on a given pair representation.
"""
import torch
from torch import Tensor, nn


class DistogramModule(nn.Module):
    """Distogram Module."""

    def __init__(self, token_z: int, num_bins: int) -> None:
        super().__init__()
        self.distogram = nn.Linear(token_z, num_bins)

    def forward(self, z: Tensor) -> Tensor:
        z = z + z.transpose(1, 2)
        return self.distogram(z)


def distogram_loss(
    output: dict[str, Tensor],
    feats: dict[str, Tensor],
) -> tuple[Tensor, Tensor]:
    # Get predicted distograms
    pred = output["pdistogram"]

    # Compute target distogram
    target = feats["disto_target"]

    # Combine target mask and padding mask
    mask = feats["token_disto_mask"]
    mask = mask[:, None, :] * mask[:, :, None]
    mask = mask * (1 - torch.eye(mask.shape[1])[None]).to(pred)

    # Compute the distogram loss
    errors = -1 * torch.sum(
        target * torch.nn.functional.log_softmax(pred, dim=-1),
        dim=-1,
    )
    denom = 1e-5 + torch.sum(mask, dim=(-1, -2))
    mean = errors * mask
    mean = torch.sum(mean, dim=-1)
    mean = mean / denom[..., None]
    batch_loss = torch.sum(mean, dim=-1)
    global_loss = torch.mean(batch_loss)
    return global_loss, batch_loss


class DistogramTraining(nn.Module):
    def __init__(self, token_z=8, num_bins=6):
        super().__init__()
        self.distogram_module = DistogramModule(token_z, num_bins)

    def forward(self, z, feats):
        output = {"pdistogram": self.distogram_module(z)}
        return distogram_loss(output, feats)


def make():
    torch.manual_seed(0)
    z = torch.randn(2, 5, 5, 8)
    bins = torch.randint(0, 6, (2, 5, 5))
    feats = {
        "disto_target": torch.nn.functional.one_hot(bins, 6).float(),
        "token_disto_mask": torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0]]),
    }
    return DistogramTraining(), [(z, feats)]


def train_setup():
    model = DistogramTraining()
    model.compile()
    return model
