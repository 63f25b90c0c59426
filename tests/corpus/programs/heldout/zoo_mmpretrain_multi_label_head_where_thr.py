"""mmpretrain multi-label linear head prediction: per sample `label = torch.where(score >= self.thr)[0]` (or `score.topk(self.topk)`), stored through DataSample.set_pred_score/set_pred_label, whose format_label/format_score check `value.ndim` and types.

Source: open-mmlab/mmpretrain@ee7f2e88501f61aa95c742dd5f429f039935ee90:mmpretrain/models/heads/multi_label_cls_head.py:32-155; mmpretrain/models/heads/multi_label_linear_head.py:31-66; mmpretrain/structures/utils.py:24-77; mmpretrain/structures/data_sample.py:98-114
Kept: MultiLabelClsHead.__init__ (thr/topk defaults), predict and _get_predictions;
MultiLabelLinearClsHead pre_logits/forward; format_label, format_score and the two
DataSample setters verbatim (docstrings trimmed).
Simplified: the loss module is not built; mmengine's BaseDataElement.set_field is a dict
store with a metainfo dict; is_str is isinstance(str); the compiled entry is the head's
`predict`, reached through a small classifier wrapper; 6 classes from 8-d features.
"""
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn

LABEL_TYPE = Union[torch.Tensor, np.ndarray, Sequence, int]
SCORE_TYPE = Union[torch.Tensor, np.ndarray, Sequence]


def is_str(x):
    return isinstance(x, str)


def format_label(value: LABEL_TYPE) -> torch.Tensor:
    # Handle single number
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 0:
        value = int(value.item())

    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value).to(torch.long)
    elif isinstance(value, Sequence) and not is_str(value):
        value = torch.tensor(value).to(torch.long)
    elif isinstance(value, int):
        value = torch.LongTensor([value])
    elif not isinstance(value, torch.Tensor):
        raise TypeError(f'Type {type(value)} is not an available label type.')
    assert value.ndim == 1, \
        f'The dims of value should be 1, but got {value.ndim}.'

    return value


def format_score(value: SCORE_TYPE) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value).float()
    elif isinstance(value, Sequence) and not is_str(value):
        value = torch.tensor(value).float()
    elif not isinstance(value, torch.Tensor):
        raise TypeError(f'Type {type(value)} is not an available label type.')
    assert value.ndim == 1, \
        f'The dims of value should be 1, but got {value.ndim}.'

    return value


class DataSample:
    def __init__(self):
        self._data_fields = {}
        self._metainfo_fields = {}

    def set_field(self, value, name, dtype=None, field_type='data'):
        if dtype is not None:
            assert isinstance(value, dtype), f'{value} should be a {dtype} but got {type(value)}'
        if field_type == 'metainfo':
            self._metainfo_fields[name] = value
        else:
            self._data_fields[name] = value

    def __getattr__(self, name):
        for store in ('_data_fields', '_metainfo_fields'):
            fields = self.__dict__.get(store, {})
            if name in fields:
                return fields[name]
        raise AttributeError(name)

    def set_pred_label(self, value: LABEL_TYPE) -> 'DataSample':
        """Set ``pred_label``."""
        self.set_field(format_label(value), 'pred_label', dtype=torch.Tensor)
        return self

    def set_pred_score(self, value: SCORE_TYPE):
        """Set ``pred_label``."""
        score = format_score(value)
        self.set_field(score, 'pred_score', dtype=torch.Tensor)
        if hasattr(self, 'num_classes'):
            assert len(score) == self.num_classes, \
                f'The length of score {len(score)} should be '\
                f'equal to the num_classes {self.num_classes}.'
        else:
            self.set_field(
                name='num_classes', value=len(score), field_type='metainfo')
        return self


class MultiLabelClsHead(nn.Module):
    def __init__(self,
                 loss: dict = dict(type='CrossEntropyLoss', use_sigmoid=True),
                 thr: Optional[float] = None,
                 topk: Optional[int] = None,
                 init_cfg: Optional[dict] = None):
        super(MultiLabelClsHead, self).__init__()

        if thr is None and topk is None:
            thr = 0.5

        self.thr = thr
        self.topk = topk

    def pre_logits(self, feats: Tuple[torch.Tensor]) -> torch.Tensor:
        # The MultiLabelClsHead doesn't have other module, just return after
        # unpacking.
        return feats[-1]

    def forward(self, feats: Tuple[torch.Tensor]) -> torch.Tensor:
        """The forward process."""
        pre_logits = self.pre_logits(feats)
        # The MultiLabelClsHead doesn't have the final classification head,
        # just return the unpacked inputs.
        return pre_logits

    def predict(self,
                feats: Tuple[torch.Tensor],
                data_samples: List[DataSample] = None) -> List[DataSample]:
        # The part can be traced by torch.fx
        cls_score = self(feats)

        # The part can not be traced by torch.fx
        predictions = self._get_predictions(cls_score, data_samples)
        return predictions

    def _get_predictions(self, cls_score: torch.Tensor,
                         data_samples: List[DataSample]):
        """Post-process the output of head.

        Including softmax and set ``pred_label`` of data samples.
        """
        pred_scores = torch.sigmoid(cls_score)

        if data_samples is None:
            data_samples = [DataSample() for _ in range(cls_score.size(0))]

        for data_sample, score in zip(data_samples, pred_scores):
            if self.thr is not None:
                # a label is predicted positive if larger than thr
                label = torch.where(score >= self.thr)[0]
            else:
                # top-k labels will be predicted positive for any example
                _, label = score.topk(self.topk)
            data_sample.set_pred_score(score).set_pred_label(label)

        return data_samples


class MultiLabelLinearClsHead(MultiLabelClsHead):
    def __init__(self,
                 num_classes: int,
                 in_channels: int,
                 loss: dict = dict(type='CrossEntropyLoss', use_sigmoid=True),
                 thr: Optional[float] = None,
                 topk: Optional[int] = None,
                 init_cfg: Optional[dict] = dict(
                     type='Normal', layer='Linear', std=0.01)):
        super(MultiLabelLinearClsHead, self).__init__(
            loss=loss, thr=thr, topk=topk, init_cfg=init_cfg)

        assert num_classes > 0, f'num_classes ({num_classes}) must be a ' \
            'positive integer.'

        self.in_channels = in_channels
        self.num_classes = num_classes

        self.fc = nn.Linear(self.in_channels, self.num_classes)

    def pre_logits(self, feats: Tuple[torch.Tensor]) -> torch.Tensor:
        # The obtain the MultiLabelLinearClsHead doesn't have other module,
        # just return after unpacking.
        return feats[-1]

    def forward(self, feats: Tuple[torch.Tensor]) -> torch.Tensor:
        """The forward process."""
        pre_logits = self.pre_logits(feats)
        # The final classification head.
        cls_score = self.fc(pre_logits)
        return cls_score


class ImageClassifier(nn.Module):
    def __init__(self, head: dict):
        super().__init__()
        self.head = MultiLabelLinearClsHead(**head)

    def forward(self, feats, data_samples=None, mode='predict'):
        samples = self.head.predict((feats,), data_samples)
        return [(s.pred_score, s.pred_label) for s in samples]


def build_classifier(**head_kwargs):
    return ImageClassifier(dict(num_classes=6, in_channels=8, **head_kwargs))


classifier = torch.compile(build_classifier(thr=0.5).eval())


def make():
    torch.manual_seed(0)
    feats = torch.randn(3, 8) * 3
    return build_classifier(thr=0.5).eval(), [(feats,), (feats[:1] * 0.1,)]
