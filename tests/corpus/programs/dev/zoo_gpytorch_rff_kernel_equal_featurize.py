"""GPyTorch RFFKernel.forward: random weights registered lazily on the first call, `x1_eq_x2 = torch.equal(x1, x2)` choosing whether to featurize x2 and which low-rank operator to return.

Source: cornellius-gp/gpytorch@0a88d53c80bf56386d4950e9bb884050e9636150:gpytorch/kernels/rff_kernel.py:14-150
Kept: the constructor's optional num_dims, _init_weights with
`self._batch_shape` and register_buffer, forward's last_dim_is_batch
transpose, the `hasattr(self, "randn_weights")` lazy init, the torch.equal
test and both uses of it, the diag path, and _featurize.
Simplified: gpytorch's Kernel base is reduced to what RFFKernel reads (a
softplus-constrained raw_lengthscale, _batch_shape, __call__ -> forward);
linear_operator's RootLinearOperator / LowRankRootLinearOperator /
MatmulLinearOperator are replaced by small classes holding the factors;
prediction_strategy dropped. 3 input dims, 4 samples.
"""
import math
from typing import Optional

import torch
from torch import Tensor


class RootLinearOperator:
    def __init__(self, root: Tensor):
        self.root = root

    def to_dense(self) -> Tensor:
        return self.root @ self.root.transpose(-1, -2)


class LowRankRootLinearOperator(RootLinearOperator):
    pass


class MatmulLinearOperator:
    def __init__(self, left: Tensor, right: Tensor):
        self.left = left
        self.right = right

    def to_dense(self) -> Tensor:
        return self.left @ self.right


class Kernel(torch.nn.Module):
    has_lengthscale = False

    def __init__(self, ard_num_dims: Optional[int] = None, batch_shape: torch.Size = torch.Size([])):
        super().__init__()
        self._batch_shape = batch_shape
        if self.has_lengthscale:
            lengthscale_num_dims = 1 if ard_num_dims is None else ard_num_dims
            self.register_parameter(
                "raw_lengthscale",
                torch.nn.Parameter(torch.zeros(*self._batch_shape, 1, lengthscale_num_dims)),
            )

    @property
    def lengthscale(self) -> Tensor:
        return torch.nn.functional.softplus(self.raw_lengthscale)


class RFFKernel(Kernel):
    has_lengthscale = True

    def __init__(self, num_samples: int, num_dims: Optional[int] = None, **kwargs):
        super().__init__(**kwargs)
        self.num_samples = num_samples
        if num_dims is not None:
            self._init_weights(num_dims, num_samples)

    def _init_weights(
        self, num_dims: Optional[int] = None, num_samples: Optional[int] = None, randn_weights: Optional[Tensor] = None
    ):
        if num_dims is not None and num_samples is not None:
            d = num_dims
            D = num_samples
        if randn_weights is None:
            randn_shape = torch.Size([*self._batch_shape, d, D])
            randn_weights = torch.randn(
                randn_shape, dtype=self.raw_lengthscale.dtype, device=self.raw_lengthscale.device
            )
        self.register_buffer("randn_weights", randn_weights)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **kwargs) -> Tensor:
        if last_dim_is_batch:
            x1 = x1.transpose(-1, -2).unsqueeze(-1)
            x2 = x2.transpose(-1, -2).unsqueeze(-1)
        num_dims = x1.size(-1)
        if not hasattr(self, "randn_weights"):
            self._init_weights(num_dims, self.num_samples)
        x1_eq_x2 = torch.equal(x1, x2)
        z1 = self._featurize(x1, normalize=False)
        if not x1_eq_x2:
            z2 = self._featurize(x2, normalize=False)
        else:
            z2 = z1
        D = float(self.num_samples)
        if diag:
            return (z1 * z2).sum(-1) / D
        if x1_eq_x2:
            # Exploit low rank structure, if there are fewer features than data points
            if z1.size(-1) < z2.size(-2):
                return LowRankRootLinearOperator(z1 / math.sqrt(D))
            else:
                return RootLinearOperator(z1 / math.sqrt(D))
        else:
            return MatmulLinearOperator(z1 / D, z2.transpose(-1, -2))

    def _featurize(self, x: Tensor, normalize: bool = False) -> Tensor:
        # Recompute division each time to allow backprop through lengthscale
        # Transpose lengthscale to allow for ARD
        x = x.matmul(self.randn_weights / self.lengthscale.transpose(-1, -2))
        z = torch.cat([torch.cos(x), torch.sin(x)], dim=-1)
        if normalize:
            D = self.num_samples
            z = z / math.sqrt(D)
        return z


kernel = torch.compile(RFFKernel(num_samples=4))


def make():
    torch.manual_seed(0)
    x = torch.randn(10, 3)
    y = torch.randn(6, 3)
    return RFFKernel(num_samples=4), [(x, x), (x, y), (y, y, True), (x[:2], x[:2])]
