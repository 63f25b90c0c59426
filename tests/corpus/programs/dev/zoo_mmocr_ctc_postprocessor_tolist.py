"""MMOCR's CRNN decoder predict(): the softmaxed logits go to CTCPostProcessor, which reads `data_sample.get('valid_ratio', 1)`, loops `for t in range(decode_len)` with `max_idx[t].item()` and `max_value[t].item()`, and collapses repeats against the padding/ignore indexes into Python lists.

Source: open-mmlab/mmocr@966296f26ac34cf0e96d40ab4a0a94c9a697909a:mmocr/models/textrecog/postprocessors/ctc_postprocessor.py:13-51
Also: mmocr/models/textrecog/postprocessors/base.py (BaseTextRecogPostprocessor __init__
and __call__), mmocr/models/textrecog/decoders/crnn_decoder.py (CRNNDecoder, conv
variant), mmocr/models/textrecog/decoders/base.py:117-175 (predict, forward),
mmocr/models/common/dictionary/dictionary.py:93-154 (char2idx, idx2str).
Kept: get_single_prediction and both __call__s verbatim, the ignore_chars
mapping in the base __init__, CRNNDecoder's forward_train/forward_test, the
base decoder's predict/forward (self.training dispatch).
Simplified: mmengine's LabelData / TextRecogDataSample are small classes with
the attributes and `get` used here; the Dictionary keeps only padding (the CTC
blank) over the characters "0123456789"; no module_loss (eval only);
mmengine.is_list_of is an inline check; feature maps are 2x8x1x12.
"""
import math
import warnings
from typing import Dict, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn


class LabelData:
    pass


class TextRecogDataSample:
    def __init__(self, **metainfo):
        self._metainfo = dict(metainfo)

    def get(self, key, default=None):
        return self._metainfo.get(key, default)


class Dictionary:
    def __init__(self, characters: str, with_padding: bool = True) -> None:
        self._dict = list(characters)
        self.padding_idx = None
        self.end_idx = None
        self.unknown_idx = None
        self.with_unknown = False
        if with_padding:
            self._dict.append('<PAD>')
            self.padding_idx = len(self._dict) - 1
        self._char2idx = {char: idx for idx, char in enumerate(self._dict)}

    @property
    def num_classes(self) -> int:
        return len(self._dict)

    def char2idx(self, char: str, strict: bool = True) -> int:
        char_idx = self._char2idx.get(char, None)
        if char_idx is None:
            if self.with_unknown:
                return self.unknown_idx
            elif not strict:
                return None
            else:
                raise Exception(f'Chararcter: {char} not in dict,'
                                ' please check gt_label and use'
                                ' custom dict file,'
                                ' or set "with_unknown=True"')
        return char_idx

    def idx2str(self, index: Sequence[int]) -> str:
        assert isinstance(index, (list, tuple))
        string = ''
        for i in index:
            assert i < len(self._dict), f'Index: {i} out of range! Index ' \
                                        f'must be less than {len(self._dict)}'
            string += self._dict[i]
        return string


class BaseTextRecogPostprocessor:
    def __init__(self,
                 dictionary: Union[Dictionary, Dict],
                 max_seq_len: int = 40,
                 ignore_chars: Sequence[str] = ['padding'],
                 **kwargs) -> None:
        if isinstance(dictionary, Dictionary):
            self.dictionary = dictionary
        else:
            raise TypeError(
                'The type of dictionary should be `Dictionary` or dict, '
                f'but got {type(dictionary)}')
        self.max_seq_len = max_seq_len
        mapping_table = {
            'padding': self.dictionary.padding_idx,
            'end': self.dictionary.end_idx,
            'unknown': self.dictionary.unknown_idx,
        }
        if not (isinstance(ignore_chars, list) and all(isinstance(c, str) for c in ignore_chars)):
            raise TypeError('ignore_chars must be list of str')
        ignore_indexes = list()
        for ignore_char in ignore_chars:
            index = mapping_table.get(
                ignore_char,
                self.dictionary.char2idx(ignore_char, strict=False))
            if index is None or (index == self.dictionary.unknown_idx
                                 and ignore_char != 'unknown'):
                warnings.warn(
                    f'{ignore_char} does not exist in the dictionary',
                    UserWarning)
                continue
            ignore_indexes.append(index)
        self.ignore_indexes = ignore_indexes

    def __call__(
        self, probs: torch.Tensor, data_samples: Sequence[TextRecogDataSample]
    ) -> Sequence[TextRecogDataSample]:
        batch_size = probs.size(0)
        for idx in range(batch_size):
            index, score = self.get_single_prediction(probs[idx, :, :],
                                                      data_samples[idx])
            text = self.dictionary.idx2str(index)
            pred_text = LabelData()
            pred_text.score = score
            pred_text.item = text
            data_samples[idx].pred_text = pred_text
        return data_samples


# TODO support beam search
class CTCPostProcessor(BaseTextRecogPostprocessor):
    """PostProcessor for CTC."""

    def get_single_prediction(self, probs: torch.Tensor,
                              data_sample: TextRecogDataSample
                              ) -> Tuple[Sequence[int], Sequence[float]]:
        feat_len = probs.size(0)
        max_value, max_idx = torch.max(probs, -1)
        valid_ratio = data_sample.get('valid_ratio', 1)
        decode_len = min(feat_len, math.ceil(feat_len * valid_ratio))
        index = []
        score = []

        prev_idx = self.dictionary.padding_idx
        for t in range(decode_len):
            tmp_value = max_idx[t].item()
            if tmp_value not in (prev_idx, *self.ignore_indexes):
                index.append(tmp_value)
                score.append(max_value[t].item())
            prev_idx = tmp_value
        return index, score

    def __call__(
        self, outputs: torch.Tensor,
        data_samples: Sequence[TextRecogDataSample]
    ) -> Sequence[TextRecogDataSample]:
        outputs = outputs.cpu().detach()
        return super().__call__(outputs, data_samples)


class CRNNDecoder(nn.Module):
    def __init__(self,
                 in_channels: int,
                 dictionary: Dictionary,
                 rnn_flag: bool = False,
                 module_loss: Dict = None,
                 **kwargs):
        super().__init__()
        self.dictionary = dictionary
        self.module_loss = module_loss
        self.postprocessor = CTCPostProcessor(dictionary=dictionary)
        self.rnn_flag = rnn_flag
        self.decoder = nn.Conv2d(
            in_channels,
            self.dictionary.num_classes,
            kernel_size=1,
            stride=1)
        self.softmax = nn.Softmax(dim=-1)

    def forward_train(
        self,
        feat: torch.Tensor,
        out_enc: Optional[torch.Tensor] = None,
        data_samples: Optional[Sequence[TextRecogDataSample]] = None
    ) -> torch.Tensor:
        assert feat.size(2) == 1, 'feature height must be 1'
        if self.rnn_flag:
            x = feat.squeeze(2)  # [N, C, W]
            x = x.permute(2, 0, 1)  # [W, N, C]
            x = self.decoder(x)  # [W, N, C]
            outputs = x.permute(1, 0, 2).contiguous()
        else:
            x = self.decoder(feat)
            x = x.permute(0, 3, 1, 2).contiguous()
            n, w, c, h = x.size()
            outputs = x.view(n, w, c * h)
        return outputs

    def forward_test(
        self,
        feat: Optional[torch.Tensor] = None,
        out_enc: Optional[torch.Tensor] = None,
        data_samples: Optional[Sequence[TextRecogDataSample]] = None
    ) -> torch.Tensor:
        return self.softmax(self.forward_train(feat, out_enc, data_samples))

    def predict(
        self,
        feat: Optional[torch.Tensor] = None,
        out_enc: Optional[torch.Tensor] = None,
        data_samples: Optional[Sequence[TextRecogDataSample]] = None
    ) -> Sequence[TextRecogDataSample]:
        out_dec = self(feat, out_enc, data_samples)
        return self.postprocessor(out_dec, data_samples)

    def forward(
        self,
        feat: Optional[torch.Tensor] = None,
        out_enc: Optional[torch.Tensor] = None,
        data_samples: Optional[Sequence[TextRecogDataSample]] = None
    ) -> torch.Tensor:
        if self.training:
            if getattr(self, 'module_loss') is not None:
                data_samples = self.module_loss.get_targets(data_samples)
            return self.forward_train(feat, out_enc, data_samples)
        else:
            return self.forward_test(feat, out_enc, data_samples)


def build_decoder():
    return CRNNDecoder(in_channels=8, dictionary=Dictionary("0123456789")).eval()


decoder = build_decoder()
predict = torch.compile(decoder.predict)


def make():
    torch.manual_seed(0)
    dec = build_decoder()
    feat = torch.randn(2, 8, 1, 12)
    full = [TextRecogDataSample(), TextRecogDataSample(valid_ratio=1.0)]
    cropped = [TextRecogDataSample(valid_ratio=0.5), TextRecogDataSample(valid_ratio=0.25)]
    return dec.predict, [(feat, None, full), (feat, None, cropped)]
