"""accelerate evaluation step: `pad_across_processes` (through `recursively_apply` and the `chained_operation` / `verify_operation` wrappers) takes `max(s[dim] for s in sizes)` over the gathered size tensor and compares it with `tensor.shape[dim]`, then `gather` collects predictions and labels.

Source: huggingface/accelerate@01a1ffcd38fbdc065db5f23008c315498d149854:src/accelerate/utils/operations.py:60-130,300-380,520-565
Kept: is_torch_tensor, is_namedtuple, honor_type, recursively_apply,
verify_operation, chained_operation, gather, pad_across_processes verbatim
(nested-tensor warning included); the eval step follows the
examples/by_feature pattern (argmax, pad, gather).
Simplified: PartialState is a single-process stub (distributed_type NO, so
gather returns its input and verify_operation calls straight through); the
model is a Linear token classifier. With one process the gathered maximum
always equals the local size, so only the `return tensor` side of
`if max_size == tensor.shape[dim]` is reachable.
"""
import enum
import warnings
from functools import wraps
from typing import Mapping

import torch


class DistributedType(str, enum.Enum):
    NO = "NO"
    MULTI_GPU = "MULTI_GPU"
    TPU = "TPU"


TORCH_DISTRIBUTED_OPERATION_TYPES = [DistributedType.MULTI_GPU]


class PartialState:
    _shared_state = {"distributed_type": DistributedType.NO, "debug": False, "num_processes": 1}

    def __init__(self):
        self.__dict__ = self._shared_state


def is_torch_tensor(tensor):
    return isinstance(tensor, torch.Tensor)


def is_namedtuple(data):
    data_type = type(data)
    bases = data_type.__bases__
    if len(bases) != 1 or bases[0] != tuple:
        return False
    fields = getattr(data_type, "_fields", None)
    if not isinstance(fields, tuple):
        return False
    return all(isinstance(member, str) for member in fields)


def honor_type(obj, generator):
    """
    Cast a generator to the same type as obj (list, tuple, or namedtuple)
    """
    # Some objects may not be able to instantiate from a generator directly
    if is_namedtuple(obj):
        return type(obj)(*list(generator))
    else:
        return type(obj)(generator)


def recursively_apply(func, data, *args, test_type=is_torch_tensor, error_on_other_type=False, **kwargs):
    if isinstance(data, (tuple, list)):
        return honor_type(
            data,
            (
                recursively_apply(
                    func, o, *args, test_type=test_type, error_on_other_type=error_on_other_type, **kwargs
                )
                for o in data
            ),
        )
    elif isinstance(data, Mapping):
        return type(data)(
            {
                k: recursively_apply(
                    func, v, *args, test_type=test_type, error_on_other_type=error_on_other_type, **kwargs
                )
                for k, v in data.items()
            }
        )
    elif test_type(data):
        return func(data, *args, **kwargs)
    elif error_on_other_type:
        raise TypeError(
            f"Unsupported types ({type(data)}) passed to `{func.__name__}`. Only nested list/tuple/dicts of "
            f"objects that are valid for `{test_type.__name__}` should be passed."
        )
    return data


class DistributedOperationException(Exception):
    pass


def verify_operation(function):
    """
    Verifies that `tensor` is the same shape across all processes. Only ran if `PartialState().debug` is `True`.
    """

    @wraps(function)
    def wrapper(*args, **kwargs):
        if PartialState().distributed_type == DistributedType.NO or not PartialState().debug:
            return function(*args, **kwargs)
        raise NotImplementedError("multi-process verification needs torch.distributed")

    return wrapper


def chained_operation(function):
    """
    Checks that `verify_operation` failed and if so reports a more helpful error chaining the existing
    `DistributedOperationException`.
    """

    @wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except DistributedOperationException as e:
            operation = f"{function.__module__}.{function.__name__}"
            raise DistributedOperationException(
                f"Error found while calling `{operation}`. Please see the earlier error for more details."
            ) from e

    return wrapper


@verify_operation
def gather(tensor):
    if PartialState().distributed_type == DistributedType.TPU:
        raise NotImplementedError("TPU")
    elif PartialState().distributed_type in TORCH_DISTRIBUTED_OPERATION_TYPES:
        raise NotImplementedError("torch.distributed")
    else:
        return tensor


class CannotPadNestedTensorWarning(UserWarning):
    pass


@chained_operation
def pad_across_processes(tensor, dim=0, pad_index=0, pad_first=False):
    def _pad_across_processes(tensor, dim=0, pad_index=0, pad_first=False):
        if getattr(tensor, "is_nested", False):
            warnings.warn(
                "Cannot pad nested tensors without more information. Leaving unprocessed.",
                CannotPadNestedTensorWarning,
            )
            return tensor
        if dim >= len(tensor.shape):
            return tensor

        # Gather all sizes
        size = torch.tensor(tensor.shape, device=tensor.device)[None]
        sizes = gather(size).cpu()
        # Then pad to the maximum size
        max_size = max(s[dim] for s in sizes)
        if max_size == tensor.shape[dim]:
            return tensor

        old_size = tensor.shape
        new_size = list(old_size)
        new_size[dim] = max_size
        new_tensor = tensor.new_zeros(tuple(new_size)) + pad_index
        if pad_first:
            indices = tuple(
                slice(max_size - old_size[dim], max_size) if i == dim else slice(None) for i in range(len(new_size))
            )
        else:
            indices = tuple(slice(0, old_size[dim]) if i == dim else slice(None) for i in range(len(new_size)))
        new_tensor[indices] = tensor
        return new_tensor

    return recursively_apply(
        _pad_across_processes, tensor, error_on_other_type=True, dim=dim, pad_index=pad_index, pad_first=pad_first
    )


class TokenClassifier(torch.nn.Module):
    def __init__(self, hidden=6, num_labels=3):
        super().__init__()
        self.classifier = torch.nn.Linear(hidden, num_labels)

    def forward(self, inputs_embeds):
        return {"logits": self.classifier(inputs_embeds)}


def eval_step(model, batch):
    outputs = model(batch["inputs_embeds"])
    predictions = outputs["logits"].argmax(dim=-1)
    labels = batch["labels"]
    # Necessary to pad predictions and labels for being gathered
    predictions = pad_across_processes(predictions, dim=1, pad_index=-100)
    labels = pad_across_processes(labels, dim=1, pad_index=-100)

    predictions_gathered = gather(predictions)
    labels_gathered = gather(labels)
    return predictions_gathered, labels_gathered


compiled_eval_step = torch.compile(eval_step)


def make():
    torch.manual_seed(0)
    model = TokenClassifier().eval()
    batch = {"inputs_embeds": torch.randn(2, 5, 6), "labels": torch.randint(0, 3, (2, 5))}
    return eval_step, [(model, batch)]
