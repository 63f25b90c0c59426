"""accelerate `prepare_model` with mixed precision and a dynamo plugin: the forward is rebound as `convert_outputs_to_fp32(autocast(forward.__func__))` through `MethodType`, the `ConvertOutputsToFp32` object (built with `update_wrapper`) walks the output dict with `recursively_apply`, and the model is then `torch.compile`d.

Source: huggingface/accelerate@01a1ffcd38fbdc065db5f23008c315498d149854:src/accelerate/utils/operations.py:60-130,640-700
Also: src/accelerate/accelerator.py (prepare_model: `_original_forward`,
autocast_context(model_forward_func), MethodType rebinding, then
`torch.compile(model, **self.state.dynamo_plugin.to_kwargs())`).
Kept: is_torch_tensor, is_namedtuple, honor_type, recursively_apply,
convert_to_fp32, ConvertOutputsToFp32 and convert_outputs_to_fp32 verbatim;
prepare_model's forward rebinding.
Simplified: the autocast context is `torch.autocast("cpu", dtype=torch.bfloat16)`
(get_mixed_precision_context_manager for bf16 on CPU); the model is a small
sequence classifier returning a dict with logits and an optional loss.
"""
import pickle
from functools import update_wrapper
from types import MethodType
from typing import Mapping

import torch
import torch.nn as nn
import torch.nn.functional as F


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


def convert_to_fp32(tensor):
    def _convert_to_fp32(tensor):
        return tensor.float()

    def _is_fp16_bf16_tensor(tensor):
        return hasattr(tensor, "dtype") and tensor.dtype in (torch.float16, torch.bfloat16)

    return recursively_apply(_convert_to_fp32, tensor, test_type=_is_fp16_bf16_tensor)


class ConvertOutputsToFp32:
    def __init__(self, model_forward):
        self.model_forward = model_forward
        update_wrapper(self, model_forward)

    def __call__(self, *args, **kwargs):
        return convert_to_fp32(self.model_forward(*args, **kwargs))

    def __getstate__(self):
        raise pickle.PicklingError(
            "Cannot pickle a prepared model with automatic mixed precision, please unwrap the model with `Accelerator.unwrap_model(model)` before pickling it."
        )


def convert_outputs_to_fp32(model_forward):
    model_forward = ConvertOutputsToFp32(model_forward)

    def forward(*args, **kwargs):
        return model_forward(*args, **kwargs)

    # To act like a decorator so that it can be popped when doing `extract_model_from_parallel`
    forward.__wrapped__ = model_forward

    return forward


class SequenceClassifier(nn.Module):
    def __init__(self, vocab=16, hidden=8, num_labels=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, attention_mask=None, labels=None):
        h = torch.tanh(self.encoder(self.embed(input_ids)))
        if attention_mask is not None:
            h = h * attention_mask.unsqueeze(-1)
        logits = self.head(h.mean(1))
        outputs = {"logits": logits, "hidden_states": (h,)}
        if labels is not None:
            outputs["loss"] = F.cross_entropy(logits.float(), labels)
        return outputs


def prepare_model(model, mixed_precision="bf16", dynamo_kwargs=None):
    model._original_forward = model.forward
    model_forward_func = model.forward.__func__ if hasattr(model.forward, "__func__") else model.forward
    if mixed_precision == "bf16":
        autocast_context = torch.autocast("cpu", dtype=torch.bfloat16)
        new_forward = autocast_context(model_forward_func)
        if hasattr(model.forward, "__func__"):
            model.forward = MethodType(new_forward, model)
            model.forward = MethodType(convert_outputs_to_fp32(model.forward.__func__), model)
        else:
            model.forward = convert_outputs_to_fp32(new_forward)
    return model


def build():
    return prepare_model(SequenceClassifier())


model = torch.compile(build(), backend="inductor")


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 16, (2, 5))
    mask = torch.ones(2, 5)
    return build(), [(ids,), (ids, mask, torch.tensor([0, 2]))]
