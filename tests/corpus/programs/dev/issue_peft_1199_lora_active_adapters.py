"""PEFT LoRA Linear under torch.compile: per-forward adapter bookkeeping (active adapters, ModuleDict lookups, mixed-batch `adapter_names`).

Source: https://github.com/huggingface/peft/issues/1199 (the maintainer: "Because of support for
multiple adapters there is conditional logic present such as checking if an adapter is active.
Because of this fullgraph is never possible"; compile without fullgraph instead)
Kept: peft 0.21.2 src/peft/tuners/lora/layer.py Linear.forward, LoraLayer._check_forward_args and
_mixed_batch_forward verbatim, with BaseTunerLayer's merged / disable_adapters / active_adapters
properties and _cast_input_dtype (src/peft/tuners/tuners_utils.py).
Simplified: LoraLayer's constructor and update_layer keep only what vanilla LoRA uses (no
variants, DoRA, rslora, tied adapters or init schemes); a two-layer MLP with two adapters,
"default" active; the report's diffusers UNet is replaced by that MLP.
"""
from typing import Any

import torch
from torch import nn

VARIANT_KWARG_KEYS = ["alora_offsets"]


class LoraConfig:
    def __init__(self, r=4, lora_alpha=8, lora_dropout=0.1, fan_in_fan_out=False):
        self.r = r
        self.lora_alpha = lora_alpha
        self.lora_dropout = lora_dropout
        self.fan_in_fan_out = fan_in_fan_out


class LoraLayer:
    adapter_layer_names = ("lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B", "lora_magnitude_vector")

    def __init__(self, base_layer: nn.Module, **kwargs) -> None:
        self.base_layer = base_layer
        self.r = {}
        self.lora_alpha = {}
        self.scaling = {}
        self.lora_dropout = nn.ModuleDict({})
        self.lora_A = nn.ModuleDict({})
        self.lora_B = nn.ModuleDict({})
        self._disable_adapters = False
        self.merged_adapters = []
        self.use_dora: dict[str, bool] = {}
        self.lora_bias: dict[str, bool] = {}
        self.cast_input_dtype_enabled: bool = True
        self.lora_variant: dict[str, Any] = {}
        self.kwargs = kwargs
        self.in_features = base_layer.in_features
        self.out_features = base_layer.out_features

    def update_layer(self, adapter_name: str, r: int, lora_alpha: int, config: LoraConfig, **kwargs) -> None:
        if r <= 0:
            raise ValueError(f"`r` should be a positive integer value but the value passed is {r}")
        self.r[adapter_name] = r
        self.lora_alpha[adapter_name] = lora_alpha
        if config.lora_dropout > 0.0:
            lora_dropout_layer = nn.Dropout(p=config.lora_dropout)
        else:
            lora_dropout_layer = nn.Identity()
        self.lora_dropout.update(nn.ModuleDict({adapter_name: lora_dropout_layer}))
        self.lora_A[adapter_name] = nn.Linear(self.in_features, r, bias=False)
        self.lora_B[adapter_name] = nn.Linear(r, self.out_features, bias=False)
        nn.init.normal_(self.lora_B[adapter_name].weight, std=0.02)
        self.lora_bias[adapter_name] = False
        self.scaling[adapter_name] = lora_alpha / r

    @property
    def merged(self) -> bool:
        return bool(self.merged_adapters)

    @property
    def disable_adapters(self) -> bool:
        # use a property to ensure that disable_adapters is not set directly, instead use the enable_adapters method
        return self._disable_adapters

    @property
    def active_adapter(self) -> str | list[str]:
        # use a property to ensure that active_adapter is not set directly, instead use the set_adapter method
        return self._active_adapter

    @property
    def active_adapters(self):
        if isinstance(self.active_adapter, str):
            return [self.active_adapter]
        # is already a list of str
        return self.active_adapter

    def _cast_input_dtype(self, x, dtype: torch.dtype):
        if x is None:  # useful e.g. if x is the bias, which can be None
            return None

        cast_input_dtype_enabled = getattr(self, "cast_input_dtype_enabled", True)
        if (not cast_input_dtype_enabled) or (x.dtype == dtype):
            return x
        return x.to(dtype=dtype)

    def unmerge(self) -> None:
        self.merged_adapters = []

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
    def __init__(self, base_layer, adapter_name: str, config: LoraConfig, r: int = 0, lora_alpha: int = 1, **kwargs):
        super().__init__()
        LoraLayer.__init__(self, base_layer, **kwargs)
        self.fan_in_fan_out = config.fan_in_fan_out

        self._active_adapter = adapter_name
        self.update_layer(adapter_name, r, lora_alpha=lora_alpha, config=config, **kwargs)

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


class PeftMLP(nn.Module):
    """A base MLP whose two linears were replaced by LoRA layers, a second adapter loaded."""

    def __init__(self, config=None):
        super().__init__()
        config = config or LoraConfig()
        self.fc1 = Linear(nn.Linear(8, 16), "default", config, r=config.r, lora_alpha=config.lora_alpha)
        self.fc2 = Linear(nn.Linear(16, 4), "default", config, r=config.r, lora_alpha=config.lora_alpha)
        for layer in (self.fc1, self.fc2):
            layer.update_layer("other", config.r, config.lora_alpha, config)
        self.act = nn.GELU()

    def forward(self, x, adapter_names=None):
        if adapter_names is None:
            return self.fc2(self.act(self.fc1(x)))
        return self.fc2(self.act(self.fc1(x, adapter_names=adapter_names)), adapter_names=adapter_names)


def get_compiled_model():
    model = PeftMLP().eval()
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = PeftMLP().eval()
    x = torch.randn(3, 8)
    return model, [(x,), (x, ["default", "other", "__base__"])]
