"""neuraloperator IntegralTransform (GNO): `torch.repeat_interleave(x, num_reps)` with row-split differences as repeats, then the native segment_csr loops `for i, start in enumerate(indptr[:-1])` with `if start == src.shape[0]` and `range(n_nbrs[i])`.

Source: neuraloperator/neuraloperator@055b0e1e4fed24e4a2c587fcc207ed3a514197ab:neuralop/layers/integral_transform.py:9-201
Also: neuralop/layers/segment_csr.py (the use_scatter version, native branch verbatim),
neuralop/layers/mlp.py (MLPLinear).
Kept: IntegralTransform's transform_type validation, forward verbatim (batched/unbatched
f_y, weights, the reduction choice) and segment_csr's torch_scatter guard.
Simplified: MLPLinear is a two-layer stand-in; the neighbor CSR dict is built in
make() as NeighborSearch would; 6 points in 2-d, 4 channels. The weighted
input set raises, as the original does (see RAISING_INPUTS).
"""
import importlib
from typing import Literal

import torch
from torch import nn
import torch.nn.functional as F


def segment_csr(src: torch.Tensor, indptr: torch.Tensor, reduce: Literal['mean', 'sum'], use_scatter=True):
    """segment_csr reduces all entries of a CSR-formatted
    matrix by summing or averaging over neighbors.
    """
    if reduce not in ['mean', 'sum']:
        raise ValueError("reduce must be one of \'mean\', \'sum\'")

    if torch.backends.cuda.is_built() and importlib.find_loader('torch_scatter') and use_scatter:
        """only import torch_scatter when cuda is available"""
        import torch_scatter.segment_csr as scatter_segment_csr
        return scatter_segment_csr(src, indptr, reduce)

    else:
        n_nbrs = indptr[1:] - indptr[:-1]  # end indices - start indices
        output_shape = list(src.shape)
        output_shape[0] = indptr.shape[0] - 1

        out = torch.zeros(output_shape, device=src.device)

        for i, start in enumerate(indptr[:-1]):
            if start == src.shape[0]:  # if the last neighborhoods are empty, skip
                break
            for j in range(n_nbrs[i]):
                out[i] += src[start + j]
            if reduce == 'mean':
                out[i] /= n_nbrs[i]
        return out


class MLPLinear(torch.nn.Module):
    def __init__(self, layers, non_linearity=F.gelu, dropout=0.0):
        super().__init__()

        self.n_layers = len(layers) - 1

        assert self.n_layers >= 1

        self.fcs = nn.ModuleList()
        self.non_linearity = non_linearity

        for j in range(self.n_layers):
            self.fcs.append(nn.Linear(layers[j], layers[j + 1]))

    def forward(self, x):
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i < self.n_layers - 1:
                x = self.non_linearity(x)

        return x


class IntegralTransform(nn.Module):
    """Integral Kernel Transform (GNO)"""

    def __init__(
        self,
        mlp=None,
        mlp_layers=None,
        mlp_non_linearity=F.gelu,
        transform_type="linear",
        use_torch_scatter=True,
    ):
        super().__init__()

        assert mlp is not None or mlp_layers is not None

        self.transform_type = transform_type
        self.use_torch_scatter = use_torch_scatter

        if (
            self.transform_type != "linear_kernelonly"
            and self.transform_type != "linear"
            and self.transform_type != "nonlinear_kernelonly"
            and self.transform_type != "nonlinear"
        ):
            raise ValueError(
                f"Got transform_type={transform_type} but expected one of "
                "[linear_kernelonly, linear, nonlinear_kernelonly, nonlinear]"
            )

        if mlp is None:
            self.mlp = MLPLinear(layers=mlp_layers, non_linearity=mlp_non_linearity)
        else:
            self.mlp = mlp

    def forward(self, y, neighbors, x=None, f_y=None, weights=None):
        if x is None:
            x = y

        rep_features = y[neighbors["neighbors_index"]]

        # batching only matters if f_y (latent embedding) values are provided
        batched = False
        # f_y has a batch dim IFF batched=True
        if f_y is not None:
            if f_y.ndim == 3:
                batched = True
                batch_size = f_y.shape[0]
                in_features = f_y[:, neighbors["neighbors_index"], :]
            elif f_y.ndim == 2:
                batched = False
                in_features = f_y[neighbors["neighbors_index"]]

        num_reps = (
            neighbors["neighbors_row_splits"][1:]
            - neighbors["neighbors_row_splits"][:-1]
        )

        self_features = torch.repeat_interleave(x, num_reps, dim=0)

        agg_features = torch.cat([rep_features, self_features], dim=-1)
        if f_y is not None and (
            self.transform_type == "nonlinear_kernelonly"
            or self.transform_type == "nonlinear"
        ):
            if batched:
                # repeat agg features for every example in the batch
                agg_features = agg_features.repeat(
                    [batch_size] + [1] * agg_features.ndim
                )
            agg_features = torch.cat([agg_features, in_features], dim=-1)

        rep_features = self.mlp(agg_features)

        if f_y is not None and self.transform_type != "nonlinear_kernelonly":
            rep_features = rep_features * in_features

        if weights is not None:
            assert weights.ndim == 1, "Weights must be of dimension 1 in all cases"
            nbr_weights = weights[neighbors["neighbors_index"]]
            # repeat weights along batch dim if batched
            if batched:
                nbr_weights = nbr_weights.repeat(
                    [batch_size] + [1] * nbr_weights.ndim
                )
            rep_features = nbr_weights * rep_features
            reduction = "sum"
        else:
            reduction = "mean"

        splits = neighbors["neighbors_row_splits"]
        if batched:
            splits = splits.repeat([batch_size] + [1] * splits.ndim)

        out_features = segment_csr(rep_features, splits, reduce=reduction, use_scatter=self.use_torch_scatter)

        return out_features


def build_gno(transform_type="linear"):
    return IntegralTransform(mlp_layers=[4, 8, 4], transform_type=transform_type, use_torch_scatter=False)


gno = torch.compile(build_gno())

# At this commit the weights branch multiplies the (n_nbrs,) neighbor weights
# into the (n_nbrs, channels) features without unsqueeze(-1) (added upstream
# later), so any weighted call with channels != n_nbrs fails to broadcast:
# input set 1 raises in the original code too.
RAISING_INPUTS = {1: "RuntimeError"}


def make():
    torch.manual_seed(0)
    y = torch.rand(6, 2)
    f_y = torch.randn(6, 4)
    neighbors = {
        "neighbors_index": torch.tensor([0, 1, 1, 2, 3, 2, 4, 5, 4]),
        "neighbors_row_splits": torch.tensor([0, 2, 3, 5, 6, 9, 9]),
    }
    weights = torch.rand(6)
    return build_gno(), [
        (y, neighbors, None, f_y),
        (y, neighbors, None, f_y, weights),
    ]
