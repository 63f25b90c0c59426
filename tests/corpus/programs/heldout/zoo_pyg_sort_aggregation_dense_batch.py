"""PyG's SortAggregation (DGCNN readout): `Aggregation.__call__` infers `dim_size` with `int(index.max())`, `assert_sorted_index` branches on `torch.all(...)`, and `to_dense_batch` sizes the dense batch with `int(num_nodes.max())`.

Source: pyg-team/pytorch_geometric@5c6461b2305ad068a6d61165b3c55852a11aaa41:torch_geometric/nn/aggr/sort.py:1-80
Also: torch_geometric/nn/aggr/base.py (Aggregation.__call__, assert_* helpers,
to_dense_batch), torch_geometric/utils/_to_dense_batch.py, torch_geometric/utils/_scatter.py
(scatter, broadcast; the 'sum' path), torch_geometric/utils/functions.py (cumsum),
torch_geometric/experimental.py (disable_dynamic_shapes and its flag dict).
Kept: the disable_dynamic_shapes decorator on both `__call__` and `forward`
(inspect.getfullargspec at decoration time, the experimental flag lookup at
call time), `__call__`'s dim_size inference and its try/except that re-checks
`int(index.max())`, the three assert helpers, to_dense_batch's trash-slot
scatter, SortAggregation.forward with both sides of `if N >= self.k`.
Simplified: only the `sum` reduction of scatter; the module around the readout
is a Linear before and a Linear after (as in DGCNN's head); 3 features.
"""
import functools
import inspect
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch import Tensor

__experimental_flag__: Dict[str, bool] = {
    'disable_dynamic_shapes': False,
}


def is_experimental_mode_enabled(options=None) -> bool:
    if torch.jit.is_scripting() or torch.jit.is_tracing():
        return False
    if options is None:
        options = list(__experimental_flag__.keys())
    if isinstance(options, str):
        options = [options]
    return all([__experimental_flag__[option] for option in options])


def disable_dynamic_shapes(required_args: List[str]) -> Callable:
    def decorator(func: Callable) -> Callable:
        spec = inspect.getfullargspec(func)

        required_args_pos: Dict[str, int] = {}
        for arg_name in required_args:
            if arg_name not in spec.args:
                raise ValueError(f"The function '{func}' does not have a "
                                 f"'{arg_name}' argument")
            required_args_pos[arg_name] = spec.args.index(arg_name)

        num_args = len(spec.args)
        num_default_args = 0 if spec.defaults is None else len(spec.defaults)
        num_positional_args = num_args - num_default_args

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not is_experimental_mode_enabled('disable_dynamic_shapes'):
                return func(*args, **kwargs)

            for required_arg in required_args:
                index = required_args_pos[required_arg]

                value: Optional[Any] = None
                if index < len(args):
                    value = args[index]
                elif required_arg in kwargs:
                    value = kwargs[required_arg]
                elif num_default_args > 0:
                    value = spec.defaults[index - num_positional_args]

                if value is None:
                    raise ValueError(f"Dynamic shapes disabled. Argument "
                                     f"'{required_arg}' needs to be set")

            return func(*args, **kwargs)

        return wrapper

    return decorator


def cumsum(x: Tensor, dim: int = 0) -> Tensor:
    size = x.size()[:dim] + (x.size(dim) + 1, ) + x.size()[dim + 1:]
    out = x.new_empty(size)

    out.narrow(dim, 0, 1).zero_()
    torch.cumsum(x, dim=dim, out=out.narrow(dim, 1, x.size(dim)))

    return out


def broadcast(src: Tensor, ref: Tensor, dim: int) -> Tensor:
    dim = ref.dim() + dim if dim < 0 else dim
    size = ((1, ) * dim) + (-1, ) + ((1, ) * (ref.dim() - dim - 1))
    return src.view(size).expand_as(ref)


def scatter(src: Tensor, index: Tensor, dim: int = 0,
            dim_size: Optional[int] = None, reduce: str = 'sum') -> Tensor:
    if isinstance(index, Tensor) and index.dim() != 1:
        raise ValueError(f"The `index` argument must be one-dimensional "
                         f"(got {index.dim()} dimensions)")

    dim = src.dim() + dim if dim < 0 else dim

    if isinstance(src, Tensor) and (dim < 0 or dim >= src.dim()):
        raise ValueError(f"The `dim` argument must lay between 0 and "
                         f"{src.dim() - 1} (got {dim})")

    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0

    size = src.size()[:dim] + (dim_size, ) + src.size()[dim + 1:]

    if reduce == 'sum' or reduce == 'add':
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_add_(dim, index, src)

    raise ValueError(f"Encountered invalid `reduce` argument '{reduce}'")


@disable_dynamic_shapes(required_args=['batch_size', 'max_num_nodes'])
def to_dense_batch(
    x: Tensor,
    batch: Optional[Tensor] = None,
    fill_value: float = 0.0,
    max_num_nodes: Optional[int] = None,
    batch_size: Optional[int] = None,
) -> Tuple[Tensor, Tensor]:
    if batch is None and max_num_nodes is None:
        mask = torch.ones(1, x.size(0), dtype=torch.bool, device=x.device)
        return x.unsqueeze(0), mask

    if batch is None:
        batch = x.new_zeros(x.size(0), dtype=torch.long)

    if batch_size is None:
        batch_size = int(batch.max()) + 1

    num_nodes = scatter(batch.new_ones(x.size(0)), batch, dim=0,
                        dim_size=batch_size, reduce='sum')
    cum_nodes = cumsum(num_nodes)

    if max_num_nodes is None:
        max_num_nodes = int(num_nodes.max())

    tmp = torch.arange(batch.size(0), device=x.device) - cum_nodes[batch]
    idx = tmp + (batch * max_num_nodes)

    # Redirect overflow rows to a "trash" slot at the end of the flat buffer.
    valid = tmp < max_num_nodes
    trash_idx = batch_size * max_num_nodes
    idx = torch.where(valid, idx, trash_idx)

    flat_size = batch_size * max_num_nodes + 1
    size = [flat_size] + list(x.size())[1:]
    out = torch.as_tensor(fill_value, device=x.device, dtype=x.dtype)
    out = out.repeat(size)
    out[idx] = x
    out = out[:batch_size * max_num_nodes]
    out = out.view([batch_size, max_num_nodes] + list(x.size())[1:])

    mask = torch.zeros(flat_size, dtype=torch.bool, device=x.device)
    mask[idx] = 1
    mask = mask[:batch_size * max_num_nodes]
    mask = mask.view(batch_size, max_num_nodes)

    return out, mask


class Aggregation(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self._deterministic = (
            torch.are_deterministic_algorithms_enabled()
            or torch.is_deterministic_algorithms_warn_only_enabled())

    @disable_dynamic_shapes(required_args=['dim_size'])
    def __call__(
        self,
        x: Tensor,
        index: Optional[Tensor] = None,
        ptr: Optional[Tensor] = None,
        dim_size: Optional[int] = None,
        dim: int = -2,
        **kwargs,
    ) -> Tensor:

        if dim >= x.dim() or dim < -x.dim():
            raise ValueError(f"Encountered invalid dimension '{dim}' of "
                             f"source tensor with {x.dim()} dimensions")

        if index is None and ptr is None:
            index = x.new_zeros(x.size(dim), dtype=torch.long)

        if ptr is not None:
            if dim_size is None:
                dim_size = ptr.numel() - 1
            elif dim_size != ptr.numel() - 1:
                raise ValueError(f"Encountered invalid 'dim_size' (got "
                                 f"'{dim_size}' but expected "
                                 f"'{ptr.numel() - 1}')")

        if index is not None and dim_size is None:
            dim_size = int(index.max()) + 1 if index.numel() > 0 else 0

        try:
            return super().__call__(x, index=index, ptr=ptr, dim_size=dim_size,
                                    dim=dim, **kwargs)
        except (IndexError, RuntimeError) as e:
            if index is not None:
                if index.numel() > 0 and dim_size <= int(index.max()):
                    raise ValueError(f"Encountered invalid 'dim_size' (got "
                                     f"'{dim_size}' but expected "
                                     f">= '{int(index.max()) + 1}')") from e
            raise e

    def assert_index_present(self, index: Optional[Tensor]):
        if index is None:
            raise NotImplementedError(
                "Aggregation requires 'index' to be specified")

    def assert_sorted_index(self, index: Optional[Tensor]):
        if index is not None and not torch.all(index[:-1] <= index[1:]):
            raise ValueError("Can not perform aggregation since the 'index' "
                             "tensor is not sorted. Specifically, if you use "
                             "this aggregation as part of 'MessagePassing`, "
                             "ensure that 'edge_index' is sorted by "
                             "destination nodes, e.g., by calling "
                             "`data.sort(sort_by_row=False)`")

    def assert_two_dimensional_input(self, x: Tensor, dim: int):
        if x.dim() != 2:
            raise ValueError(f"Aggregation requires two-dimensional inputs "
                             f"(got '{x.dim()}')")

        if dim not in [-2, 0]:
            raise ValueError(f"Aggregation needs to perform aggregation in "
                             f"first dimension (got '{dim}')")

    def to_dense_batch(
        self,
        x: Tensor,
        index: Optional[Tensor] = None,
        ptr: Optional[Tensor] = None,
        dim_size: Optional[int] = None,
        dim: int = -2,
        fill_value: float = 0.0,
        max_num_elements: Optional[int] = None,
    ) -> Tuple[Tensor, Tensor]:

        self.assert_index_present(index)
        self.assert_sorted_index(index)
        self.assert_two_dimensional_input(x, dim)

        return to_dense_batch(
            x,
            index,
            batch_size=dim_size,
            fill_value=fill_value,
            max_num_nodes=max_num_elements,
        )


class SortAggregation(Aggregation):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    @disable_dynamic_shapes(required_args=['dim_size', 'max_num_elements'])
    def forward(
        self,
        x: Tensor,
        index: Optional[Tensor] = None,
        ptr: Optional[Tensor] = None,
        dim_size: Optional[int] = None,
        dim: int = -2,
        max_num_elements: Optional[int] = None,
    ) -> Tensor:

        fill_value = x.detach().min() - 1
        batch_x, _ = self.to_dense_batch(x, index, ptr, dim_size, dim,
                                         fill_value=fill_value,
                                         max_num_elements=max_num_elements)
        B, N, D = batch_x.size()

        _, perm = batch_x[:, :, -1].sort(dim=-1, descending=True)
        arange = torch.arange(B, dtype=torch.long, device=perm.device) * N
        perm = perm + arange.view(-1, 1)

        batch_x = batch_x.view(B * N, D)
        batch_x = batch_x[perm]
        batch_x = batch_x.view(B, N, D)

        if N >= self.k:
            batch_x = batch_x[:, :self.k].contiguous()
        else:
            expand_batch_x = batch_x.new_full((B, self.k - N, D), fill_value)
            batch_x = torch.cat([batch_x, expand_batch_x], dim=1)

        batch_x[batch_x == fill_value] = 0
        x = batch_x.view(B, self.k * D)

        return x


class DGCNNReadout(torch.nn.Module):
    def __init__(self, in_channels: int, hidden: int, k: int, out_channels: int):
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, hidden)
        self.pool = SortAggregation(k)
        self.head = torch.nn.Linear(k * hidden, out_channels)

    def forward(self, x: Tensor, batch: Tensor) -> Tensor:
        x = self.lin(x).relu()
        x = self.pool(x, batch)
        return self.head(x)


model = torch.compile(DGCNNReadout(3, 4, k=3, out_channels=2), dynamic=False)


def make():
    torch.manual_seed(0)
    x = torch.randn(7, 3)
    many = torch.tensor([0, 0, 0, 0, 1, 1, 1])     # largest graph has 4 >= k nodes
    few = torch.tensor([0, 0, 1, 1, 1, 2, 2])      # largest graph has 3 == k nodes
    tiny = torch.tensor([0, 1, 1, 2, 3, 3, 4])     # largest graph has 2 < k nodes
    unsorted = torch.tensor([1, 0, 0, 1, 1, 0, 1])
    return DGCNNReadout(3, 4, k=3, out_channels=2), [(x, many), (x, few), (x, tiny), (x, unsorted)]


RAISING_INPUTS = {3: "ValueError"}
