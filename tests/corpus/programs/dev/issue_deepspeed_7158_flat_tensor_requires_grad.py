"""DeepSpeed ZeRO-3 `_allgather_params`: `flat_tensor.requires_grad = False` on a fresh `torch.empty`
buffer under `@torch.no_grad()` (the PR removed the redundant line to avoid the break).

Source: https://github.com/deepspeedai/DeepSpeed/pull/7158 (deepspeed/runtime/zero/partition_parameters.py
`_allgather_params`)
Kept: the empty-list early return, partition/tensor sizes from `ds_numel`, the flat buffer, the
requires_grad assignment, the per-parameter copy into the buffer and the narrow/view back.
Simplified: one process (num_partitions 1), no all-gather collective; parameters carry `ds_tensor`.
"""
import torch


class PartitionedParams:
    def __init__(self, num_partitions=1):
        self.num_partitions = num_partitions
        self.local_device = torch.device("cpu")

    @torch.no_grad()
    def _allgather_params(self, param_list, ds_tensors):
        if len(param_list) == 0:
            return

        partition_size = sum([t.numel() for t in ds_tensors])

        tensor_size = partition_size * self.num_partitions
        flat_tensor = torch.empty(tensor_size, dtype=ds_tensors[0].dtype, device=self.local_device)
        flat_tensor.requires_grad = False

        offset = 0
        for t in ds_tensors:
            flat_tensor.narrow(0, offset, t.numel()).copy_(t.view(-1))
            offset += t.numel()

        offset = 0
        for param, t in zip(param_list, ds_tensors):
            param.copy_(flat_tensor.narrow(0, offset, t.numel()).view(param.shape))
            offset += t.numel()
        return flat_tensor


gatherer = PartitionedParams()
compiled_gather = torch.compile(gatherer._allgather_params)


def make():
    torch.manual_seed(0)
    params = [torch.zeros(2, 2), torch.zeros(3)]
    shards = [torch.randn(4), torch.randn(3)]
    return PartitionedParams()._allgather_params, [(params, shards)]
