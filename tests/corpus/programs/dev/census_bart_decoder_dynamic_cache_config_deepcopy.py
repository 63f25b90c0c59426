"""BART decoder builds `DynamicCache(config=self.config)` in forward; the cache asks
`config.get_text_config(decoder=True)`, which `copy.deepcopy`s a flat encoder-decoder config.

Source: huggingface/transformers@v5.23.0:src/transformers/models/bart/modeling_bart.py:610-618,
src/transformers/cache_utils.py:2005-2020, src/transformers/configuration_utils.py:1519-1590
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): BartModel, MBartModel, MarianModel,
PegasusModel, T5Model, LEDModel ... eval+train: `configuration_utils.py:1231 config_to_return =
copy.deepcopy(config_to_return)` reached from `DynamicCache(config=self.config)` (copy.deepcopy is the
third most common break cause in the census). Torch 2.13 traces this deepcopy of a plain config object
and logs no break, so the program is a negative here.
Kept: the `use_cache and past_key_values is None` initialisation with EncoderDecoderCache/DynamicCache,
get_text_config's legacy flat-config path (deepcopy, decoder_ prefix remapping), the cache's layer setup.
Simplified: the cache stores nothing; one decoder Linear; the config is a plain class whose to_dict() is\n`copy.deepcopy(self.__dict__)` as in PreTrainedConfig.to_dict.
"""
import copy

import torch
from torch import nn


class BartConfig:
    def __init__(self):
        self.is_encoder_decoder = True
        self.use_cache = True
        self.d_model = 8
        self.decoder_layers = 2
        self.decoder_attention_heads = 2
        self.encoder_layers = 2

    def to_dict(self):
        output = copy.deepcopy(self.__dict__)
        return output

    def get_text_config(self, decoder=None, encoder=None):
        return_both = decoder == encoder
        config_to_return = self
        # handle legacy models with flat config structure, when we only want one of the configs
        if not return_both and config_to_return.is_encoder_decoder:
            config_to_return = copy.deepcopy(config_to_return)
            prefix_to_keep = "decoder" if decoder else "encoder"
            for key in config_to_return.to_dict():
                if key.startswith(prefix_to_keep):
                    if key == prefix_to_keep + "_layers":
                        new_key = "num_hidden_layers"
                    elif key == prefix_to_keep + "_attention_heads":
                        new_key = "num_attention_heads"
                    else:
                        new_key = key[len(prefix_to_keep) + 1 :]
                    setattr(config_to_return, new_key, getattr(config_to_return, key))
        return config_to_return


class DynamicCache:
    def __init__(self, config=None):
        self.layers = []
        if config is not None:
            decoder_config = config.get_text_config(decoder=True)
            self.layers = [[] for _ in range(decoder_config.num_hidden_layers)]


class EncoderDecoderCache:
    def __init__(self, self_attention_cache, cross_attention_cache):
        self.self_attention_cache = self_attention_cache
        self.cross_attention_cache = cross_attention_cache


class BartDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layer = nn.Linear(config.d_model, config.d_model)

    def forward(self, inputs_embeds, encoder_hidden_states=None, past_key_values=None, use_cache=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        # initialize `past_key_values`
        if use_cache and past_key_values is None:
            past_key_values = (
                EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
                if encoder_hidden_states is not None or self.config.is_encoder_decoder
                else DynamicCache(config=self.config)
            )
        hidden_states = self.layer(inputs_embeds)
        if encoder_hidden_states is not None:
            hidden_states = hidden_states + encoder_hidden_states.mean(dim=1, keepdim=True)
        return hidden_states, past_key_values


decoder = torch.compile(BartDecoder(BartConfig()))


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    return BartDecoder(BartConfig()), [(x,), (x, torch.randn(1, 2, 8)), (x, None, None, False)]
