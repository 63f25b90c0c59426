"""Wav2Vec2 `_get_feature_vector_attention_mask`: conv output lengths via `torch.div(..., rounding_mode="floor")`
and an index-put at `(arange(b), output_lengths - 1)` followed by flip/cumsum/flip (tensor ops only; no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/wav2vec2/modeling_wav2vec2.py:950-990
Census: penguinwu/oss-model-graph-break-corpus: Wav2Vec2Model's listed breaks are the synced_gpus helper and the
train-only SpecAugment/requires_grad sites, not this mask computation.
Kept: `_get_feat_extract_output_lengths` (config kernel/stride loop, optional adapter) and
`_get_feature_vector_attention_mask` verbatim, called from a forward that masks conv features.
Simplified: one conv layer in the feature encoder.
"""
import torch
from torch import nn


class Wav2Vec2Config:
    conv_kernel = (4,)
    conv_stride = (2,)
    conv_dim = (4,)
    add_adapter = False
    num_adapter_layers = 1
    adapter_stride = 2


class Wav2Vec2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.feature_extractor = nn.Conv1d(1, config.conv_dim[0], config.conv_kernel[0], stride=config.conv_stride[0])

    def _get_feat_extract_output_lengths(self, input_lengths, add_adapter=None):
        """
        Computes the output length of the convolutional layers
        """
        add_adapter = self.config.add_adapter if add_adapter is None else add_adapter

        def _conv_out_length(input_length, kernel_size, stride):
            # 1D convolutional layer output length formula taken
            # from https://pytorch.org/docs/stable/generated/torch.nn.Conv1d.html
            return torch.div(input_length - kernel_size, stride, rounding_mode="floor") + 1

        for kernel_size, stride in zip(self.config.conv_kernel, self.config.conv_stride):
            input_lengths = _conv_out_length(input_lengths, kernel_size, stride)

        if add_adapter:
            for _ in range(self.config.num_adapter_layers):
                input_lengths = _conv_out_length(input_lengths, 1, self.config.adapter_stride)

        return input_lengths

    def _get_feature_vector_attention_mask(self, feature_vector_length, attention_mask, add_adapter=None):
        # Effectively attention_mask.sum(-1), but not inplace to be able to run
        # on inference mode.
        non_padded_lengths = attention_mask.cumsum(dim=-1)[:, -1]

        output_lengths = self._get_feat_extract_output_lengths(non_padded_lengths, add_adapter=add_adapter)
        output_lengths = output_lengths.to(torch.long)

        batch_size = attention_mask.shape[0]

        attention_mask = torch.zeros(
            (batch_size, feature_vector_length), dtype=attention_mask.dtype, device=attention_mask.device
        )
        # these two operations makes sure that all values before the output lengths idxs are attended to
        attention_mask[(torch.arange(attention_mask.shape[0], device=attention_mask.device), output_lengths - 1)] = 1
        attention_mask = attention_mask.flip([-1]).cumsum(-1).flip([-1]).bool()
        return attention_mask

    def forward(self, input_values, attention_mask=None):
        extract_features = self.feature_extractor(input_values[:, None]).transpose(1, 2)
        if attention_mask is not None:
            # compute reduced attention_mask corresponding to feature vectors
            attention_mask = self._get_feature_vector_attention_mask(
                extract_features.shape[1], attention_mask, add_adapter=False
            )
            extract_features = extract_features * attention_mask[..., None]
        return extract_features


model = torch.compile(Wav2Vec2Model(Wav2Vec2Config()))


def make():
    torch.manual_seed(0)
    values = torch.randn(2, 16)
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 10:] = 0
    return Wav2Vec2Model(Wav2Vec2Config()), [(values,), (values, mask)]
