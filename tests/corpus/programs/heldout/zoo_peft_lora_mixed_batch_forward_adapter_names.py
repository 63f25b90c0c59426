"""PEFT LoRA Linear: `adapter_names=[...]` routes each sample to its adapter through `set(adapter_names)`, per-adapter index lists and indexed `+=` on the base output; otherwise loops over active adapters.

Source: huggingface/peft@5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40:src/peft/tuners/lora/layer.py:51,163-204,789-860
Also: src/peft/tuners/tuners_utils.py:1926-1954 (merged, disable_adapters,
active_adapter(s) properties), 2176-2191 (_cast_input_dtype).
Kept: Linear.forward verbatim (the _check_forward_args validation, the
VARIANT_KWARG_KEYS pop, the disable/mixed/merged/plain chain, the
active-adapter loop with the lora_variant dispatch), _check_forward_args
(length check, merged check, the DoRA set comprehension),
_mixed_batch_forward verbatim ("__base__" skipping, sub-batch indexing,
`result[idx] += lora_output`).
Simplified: update_layer is reduced to building the ModuleDicts and the
scaling/use_dora/lora_variant dicts for two adapters ("a", "b"); no
merge/unmerge code; the model is two wrapped Linear layers with a ReLU;
hidden 8, rank 2.
"""
from typing import Any

import torch
from torch import nn

VARIANT_KWARG_KEYS = ["alora_offsets"]


class LoraLayer:
    adapter_layer_names = ("lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B")

    def __init__(self, base_layer: nn.Module, **kwargs) -> None:
        self.base_layer = base_layer
        self.r = {}
        self.lora_alpha = {}
        self.scaling = {}
        self.lora_dropout = nn.ModuleDict({})
        self.lora_A = nn.ModuleDict({})
        self.lora_B = nn.ModuleDict({})
        self.use_dora: dict[str, bool] = {}
        self.lora_variant: dict[str, Any] = {}
        self._disable_adapters = False
        self.merged_adapters = []
        self._active_adapter = "default"
        self.in_features = base_layer.in_features
        self.out_features = base_layer.out_features

    @property
    def merged(self) -> bool:
        return bool(self.merged_adapters)

    @property
    def disable_adapters(self) -> bool:
        # use a property to ensure that disable_adapters is not set directly, instead use the enable_adapters method
        return self._disable_adapters

    @property
    def active_adapter(self):
        # use a property to ensure that active_adapter is not set directly, instead use the set_adapter method
        return self._active_adapter

    @property
    def active_adapters(self):
        if isinstance(self.active_adapter, str):
            return [self.active_adapter]
        # is already a list of str
        return self.active_adapter

    def update_layer(self, adapter_name, r, lora_alpha, lora_dropout):
        self.r[adapter_name] = r
        self.lora_alpha[adapter_name] = lora_alpha
        lora_dropout_layer = nn.Dropout(p=lora_dropout) if lora_dropout > 0.0 else nn.Identity()
        self.lora_dropout.update(nn.ModuleDict({adapter_name: lora_dropout_layer}))
        self.lora_A[adapter_name] = nn.Linear(self.in_features, r, bias=False)
        self.lora_B[adapter_name] = nn.Linear(r, self.out_features, bias=False)
        self.scaling[adapter_name] = lora_alpha / r
        self.use_dora[adapter_name] = False
        nn.init.normal_(self.lora_B[adapter_name].weight, std=0.1)

    def _cast_input_dtype(self, x, dtype: torch.dtype):
        if x is None:  # useful e.g. if x is the bias, which can be None
            return None

        cast_input_dtype_enabled = getattr(self, "cast_input_dtype_enabled", True)
        if (not cast_input_dtype_enabled) or (x.dtype == dtype):
            return x
        return x.to(dtype=dtype)

    def _check_forward_args(self, x, *args, **kwargs):
        """Check if the arguments are compatible with the configs and state of the model"""
        adapter_names = kwargs.get("adapter_names", None)
        if adapter_names is None:
            return

        if len(x) != len(adapter_names):
            msg = (
                "Length of `adapter_names` should be the same as the number of inputs, but got "
                f"{len(adapter_names)} and {len(x)} respectively."
            )
            raise ValueError(msg)

        if self.merged:
            # It is unclear what would be the right thing to do if users pass adapter_names and there are merged
            # adapters. Therefore, it is better to raise an error in this case.
            msg = "Cannot pass `adapter_names` when there are merged adapters, please call `unmerge_adapter` first."
            raise ValueError(msg)

        # DoRA is not supported (yet), check that it's not being used. Don't check "__base__", as this is the
        # placeholder for the base model.
        unique_adapters = {name for name in adapter_names if name != "__base__"}
        for adapter_name in unique_adapters:
            if self.use_dora.get(adapter_name, False):
                msg = "Cannot pass `adapter_names` when DoRA is enabled."
                raise ValueError(msg)

    def _mixed_batch_forward(
        self, x: torch.Tensor, *args: Any, adapter_names: list[str], **kwargs: Any
    ) -> torch.Tensor:
        # This is a special method that handles the case when users pass the argument `adapter_names`. This is an
        # extra argument that allows mixing different adapters in the same batch at inference time.
        variant_kwargs = {k: kwargs.pop(k, None) for k in VARIANT_KWARG_KEYS}  # don't pass these to base_layer
        result = self.base_layer(x, *args, **kwargs)
        torch_result_dtype = result.dtype

        unique_adapters = set(adapter_names)
        sub_batch_indices_list = []
        for adapter in unique_adapters:
            sub_batch_indices_list.append([index for index, item in enumerate(adapter_names) if item == adapter])
        alora_offsets = variant_kwargs.get("alora_offsets", None)
        for i, active_adapter in enumerate(unique_adapters):
            if active_adapter == "__base__":
                continue
            if active_adapter not in self.lora_A.keys():
                continue

            lora_A = self.lora_A[active_adapter]
            lora_B = self.lora_B[active_adapter]
            dropout = self.lora_dropout[active_adapter]
            scaling = self.scaling[active_adapter]

            # getting the sub-batch, passing it to LoRA layers and updating the corresponding indices of the linear
            # layer output
            sub_batch = x[sub_batch_indices_list[i]].to(lora_A.weight.dtype)
            if active_adapter not in self.lora_variant:  # vanilla LoRA
                lora_output = lora_B(lora_A(dropout(sub_batch))) * scaling
                result[sub_batch_indices_list[i]] += lora_output.to(torch_result_dtype)
            else:
                if alora_offsets is not None:
                    variant_kwargs["alora_offsets"] = [alora_offsets[j] for j in sub_batch_indices_list[i]]
                lora_output = self.lora_variant[active_adapter].forward(
                    self,
                    active_adapter=active_adapter,
                    x=sub_batch,
                    result=result[sub_batch_indices_list[i]],
                    **variant_kwargs,
                    **kwargs,
                )
                result[sub_batch_indices_list[i]] = lora_output.to(torch_result_dtype)

        return result


class Linear(nn.Module, LoraLayer):
    # Lora implemented in a dense layer
    def __init__(self, base_layer, adapter_names, r: int = 2, lora_alpha: int = 4, lora_dropout: float = 0.0):
        super().__init__()
        LoraLayer.__init__(self, base_layer)
        for adapter_name in adapter_names:
            self.update_layer(adapter_name, r, lora_alpha, lora_dropout)
        self._active_adapter = adapter_names[0]

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        self._check_forward_args(x, *args, **kwargs)
        adapter_names = kwargs.pop("adapter_names", None)
        variant_kwargs = {k: kwargs.pop(k, None) for k in VARIANT_KWARG_KEYS}  # don't pass these to base_layer

        if self.disable_adapters:
            if self.merged:
                self.unmerge()
            result = self.base_layer(x, *args, **kwargs)
        elif adapter_names is not None:
            result = self._mixed_batch_forward(x, *args, adapter_names=adapter_names, **variant_kwargs, **kwargs)
        elif self.merged:
            result = self.base_layer(x, *args, **kwargs)
        else:
            result = self.base_layer(x, *args, **kwargs)
            torch_result_dtype = result.dtype

            lora_A_keys = self.lora_A.keys()
            for active_adapter in self.active_adapters:
                if active_adapter not in lora_A_keys:
                    continue

                lora_A = self.lora_A[active_adapter]
                lora_B = self.lora_B[active_adapter]
                dropout = self.lora_dropout[active_adapter]
                scaling = self.scaling[active_adapter]
                x = self._cast_input_dtype(x, lora_A.weight.dtype)
                if active_adapter not in self.lora_variant:  # vanilla LoRA
                    result = result + lora_B(lora_A(dropout(x))) * scaling
                else:
                    result = self.lora_variant[active_adapter].forward(
                        self,
                        active_adapter=active_adapter,
                        x=x,
                        result=result,
                        **variant_kwargs,
                        **kwargs,
                    )

            result = result.to(torch_result_dtype)

        return result


class TwoLayerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear(nn.Linear(8, 8), ["a", "b"])
        self.fc2 = Linear(nn.Linear(8, 4), ["a", "b"])

    def forward(self, x, adapter_names=None):
        kwargs = {} if adapter_names is None else {"adapter_names": adapter_names}
        return self.fc2(torch.relu(self.fc1(x, **kwargs)), **kwargs)


peft_model = TwoLayerModel().eval()
peft_model = torch.compile(peft_model)


def make():
    torch.manual_seed(0)
    model = TwoLayerModel().eval()
    x = torch.randn(4, 8)
    return model, [(x,), (x, ["a", "__base__", "b", "a"])]
