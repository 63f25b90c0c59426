"""mmsegmentation's OHEMPixelSampler: hard pixels are picked with boolean-mask reads (`seg_weight[valid_mask]`, `seg_prob[valid_mask].sort()`), a threshold taken from `sort_prob[min(...)]` and `max(min_threshold, self.thresh)`.

Source: open-mmlab/mmsegmentation@230246f5576997c5822b16e7a32d66f9005d5135:mmseg/structures/sampler/ohem_pixel_sampler.py:10-85 (BaseDecodeHead.loss_by_feat/_stack_batch_gt from mmseg/models/decode_heads/decode_head.py, accuracy from mmseg/models/losses/accuracy.py, CrossEntropyLoss/weight_reduce_loss from mmseg/models/losses, resize from mmseg/models/utils/wrappers.py, EncoderDecoder.loss from mmseg/models/segmentors/encoder_decoder.py)
Kept: the sampler's two modes (confidence threshold, loss ranking over
context.loss_decode), the decode head's loss_by_feat with resize, sampler,
per-loss-module dict and acc_seg, the segmentor's decode + auxiliary heads
with add_prefix.
Simplified: no registry/config builders; heads are a 1x1 conv; the data
samples carry gt_sem_seg.data; 3 classes on 4x4 labels.
"""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


def resize(input,
           size=None,
           scale_factor=None,
           mode='nearest',
           align_corners=None,
           warning=True):
    if warning:
        if size is not None and align_corners:
            input_h, input_w = tuple(int(x) for x in input.shape[2:])
            output_h, output_w = tuple(int(x) for x in size)
            if output_h > input_h or output_w > output_h:
                if ((output_h > 1 and output_w > 1 and input_h > 1
                     and input_w > 1) and (output_h - 1) % (input_h - 1)
                        and (output_w - 1) % (input_w - 1)):
                    warnings.warn(
                        f'When align_corners={align_corners}, '
                        'the output would more aligned if '
                        f'input size {(input_h, input_w)} is `x+1` and '
                        f'out size {(output_h, output_w)} is `nx+1`')
    return F.interpolate(input, size, scale_factor, mode, align_corners)


def reduce_loss(loss, reduction):
    reduction_enum = F._Reduction.get_enum(reduction)
    # none: 0, elementwise_mean:1, sum: 2
    if reduction_enum == 0:
        return loss
    elif reduction_enum == 1:
        return loss.mean()
    elif reduction_enum == 2:
        return loss.sum()


def weight_reduce_loss(loss, weight=None, reduction='mean', avg_factor=None):
    # if weight is specified, apply element-wise weight
    if weight is not None:
        assert weight.dim() == loss.dim()
        if weight.dim() > 1:
            assert weight.size(1) == 1 or weight.size(1) == loss.size(1)
        loss = loss * weight

    # if avg_factor is not specified, just reduce the loss
    if avg_factor is None:
        loss = reduce_loss(loss, reduction)
    else:
        # if reduction is mean, then average the loss by avg_factor
        if reduction == 'mean':
            eps = torch.finfo(torch.float32).eps
            loss = loss.sum() / (avg_factor + eps)
        # if reduction is 'none', then do nothing, otherwise raise an error
        elif reduction != 'none':
            raise ValueError('avg_factor can not be used with reduction="sum"')
    return loss


class CrossEntropyLoss(nn.Module):

    def __init__(self, reduction='mean', loss_weight=1.0, loss_name='loss_ce'):
        super().__init__()
        self.reduction = reduction
        self.loss_weight = loss_weight
        self._loss_name = loss_name

    def forward(self, cls_score, label, weight=None, avg_factor=None, reduction_override=None,
                ignore_index=-100, **kwargs):
        assert reduction_override in (None, 'none', 'mean', 'sum')
        reduction = (
            reduction_override if reduction_override else self.reduction)
        loss = F.cross_entropy(cls_score, label, reduction='none', ignore_index=ignore_index)
        if weight is not None:
            weight = weight.float()
        loss = weight_reduce_loss(loss, weight=weight, reduction=reduction, avg_factor=avg_factor)
        return self.loss_weight * loss

    @property
    def loss_name(self):
        return self._loss_name


def accuracy(pred, target, topk=1, thresh=None, ignore_index=None):
    """Calculate accuracy according to the prediction and target."""
    assert isinstance(topk, (int, tuple))
    if isinstance(topk, int):
        topk = (topk, )
        return_single = True
    else:
        return_single = False

    maxk = max(topk)
    if pred.size(0) == 0:
        accu = [pred.new_tensor(0.) for i in range(len(topk))]
        return accu[0] if return_single else accu
    assert pred.ndim == target.ndim + 1
    assert pred.size(0) == target.size(0)
    assert maxk <= pred.size(1), \
        f'maxk {maxk} exceeds pred dimension {pred.size(1)}'
    pred_value, pred_label = pred.topk(maxk, dim=1)
    # transpose to shape (maxk, N, ...)
    pred_label = pred_label.transpose(0, 1)
    correct = pred_label.eq(target.unsqueeze(0).expand_as(pred_label))
    if thresh is not None:
        # Only prediction values larger than thresh are counted as correct
        correct = correct & (pred_value > thresh).t()
    if ignore_index is not None:
        correct = correct[:, target != ignore_index]
    res = []
    eps = torch.finfo(torch.float32).eps
    for k in topk:
        # Avoid causing ZeroDivisionError when all pixels
        # of an image are ignored
        correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True) + eps
        if ignore_index is not None:
            total_num = target[target != ignore_index].numel() + eps
        else:
            total_num = target.numel() + eps
        res.append(correct_k.mul_(100.0 / total_num))
    return res[0] if return_single else res


class OHEMPixelSampler:
    """Online Hard Example Mining Sampler for segmentation."""

    def __init__(self, context, thresh=None, min_kept=100000):
        super().__init__()
        self.context = context
        assert min_kept > 1
        self.thresh = thresh
        self.min_kept = min_kept

    def sample(self, seg_logit, seg_label):
        """Sample pixels that have high loss or with low prediction confidence."""
        with torch.no_grad():
            assert seg_logit.shape[2:] == seg_label.shape[2:]
            assert seg_label.shape[1] == 1
            seg_label = seg_label.squeeze(1).long()
            batch_kept = self.min_kept * seg_label.size(0)
            valid_mask = seg_label != self.context.ignore_index
            seg_weight = seg_logit.new_zeros(size=seg_label.size())
            valid_seg_weight = seg_weight[valid_mask]
            if self.thresh is not None:
                seg_prob = F.softmax(seg_logit, dim=1)

                tmp_seg_label = seg_label.clone().unsqueeze(1)
                tmp_seg_label[tmp_seg_label == self.context.ignore_index] = 0
                seg_prob = seg_prob.gather(1, tmp_seg_label).squeeze(1)
                sort_prob, sort_indices = seg_prob[valid_mask].sort()

                if sort_prob.numel() > 0:
                    min_threshold = sort_prob[min(batch_kept,
                                                  sort_prob.numel() - 1)]
                else:
                    min_threshold = 0.0
                threshold = max(min_threshold, self.thresh)
                valid_seg_weight[seg_prob[valid_mask] < threshold] = 1.
            else:
                if not isinstance(self.context.loss_decode, nn.ModuleList):
                    losses_decode = [self.context.loss_decode]
                else:
                    losses_decode = self.context.loss_decode
                losses = 0.0
                for loss_module in losses_decode:
                    losses += loss_module(
                        seg_logit,
                        seg_label,
                        weight=None,
                        ignore_index=self.context.ignore_index,
                        reduction_override='none')

                # faster than topk according to https://github.com/pytorch/pytorch/issues/22812  # noqa
                _, sort_indices = losses[valid_mask].sort(descending=True)
                valid_seg_weight[sort_indices[:batch_kept]] = 1.

            seg_weight[valid_mask] = valid_seg_weight

            return seg_weight


class PixelData:
    def __init__(self, data):
        self.data = data


class SegDataSample:
    def __init__(self, gt_sem_seg):
        self.gt_sem_seg = PixelData(gt_sem_seg)


class FCNHead(nn.Module):
    """A decode head: 1x1 conv classifier plus BaseDecodeHead's loss."""

    def __init__(self, in_channels, num_classes, sampler=None, ignore_index=255, align_corners=False):
        super().__init__()
        self.conv_seg = nn.Conv2d(in_channels, num_classes, kernel_size=1)
        self.ignore_index = ignore_index
        self.align_corners = align_corners
        self.loss_decode = CrossEntropyLoss()
        if sampler is not None:
            self.sampler = OHEMPixelSampler(context=self, **sampler)
        else:
            self.sampler = None

    def forward(self, inputs):
        return self.conv_seg(inputs)

    def loss(self, inputs, batch_data_samples):
        seg_logits = self.forward(inputs)
        losses = self.loss_by_feat(seg_logits, batch_data_samples)
        return losses

    def _stack_batch_gt(self, batch_data_samples):
        gt_semantic_segs = [
            data_sample.gt_sem_seg.data for data_sample in batch_data_samples
        ]
        return torch.stack(gt_semantic_segs, dim=0)

    def loss_by_feat(self, seg_logits, batch_data_samples):
        seg_label = self._stack_batch_gt(batch_data_samples)
        loss = dict()
        seg_logits = resize(
            input=seg_logits,
            size=seg_label.shape[2:],
            mode='bilinear',
            align_corners=self.align_corners)
        if self.sampler is not None:
            seg_weight = self.sampler.sample(seg_logits, seg_label)
        else:
            seg_weight = None
        seg_label = seg_label.squeeze(1)

        if not isinstance(self.loss_decode, nn.ModuleList):
            losses_decode = [self.loss_decode]
        else:
            losses_decode = self.loss_decode
        for loss_decode in losses_decode:
            if loss_decode.loss_name not in loss:
                loss[loss_decode.loss_name] = loss_decode(
                    seg_logits,
                    seg_label,
                    weight=seg_weight,
                    ignore_index=self.ignore_index)
            else:
                loss[loss_decode.loss_name] += loss_decode(
                    seg_logits,
                    seg_label,
                    weight=seg_weight,
                    ignore_index=self.ignore_index)

        loss['acc_seg'] = accuracy(
            seg_logits, seg_label, ignore_index=self.ignore_index)
        return loss


def add_prefix(inputs, prefix):
    outputs = dict()
    for name, value in inputs.items():
        outputs[f'{prefix}.{name}'] = value
    return outputs


class EncoderDecoder(nn.Module):

    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU())
        self.decode_head = FCNHead(4, num_classes, sampler=dict(thresh=0.7, min_kept=3))
        self.auxiliary_head = FCNHead(4, num_classes, sampler=dict(min_kept=3))

    @property
    def with_auxiliary_head(self):
        return hasattr(self, 'auxiliary_head') and self.auxiliary_head is not None

    def forward(self, inputs, data_samples):
        x = self.backbone(inputs)
        losses = dict()
        loss_decode = self.decode_head.loss(x, data_samples)
        losses.update(add_prefix(loss_decode, 'decode'))
        if self.with_auxiliary_head:
            loss_aux = self.auxiliary_head.loss(x, data_samples)
            losses.update(add_prefix(loss_aux, 'aux'))
        return losses


segmentor = torch.compile(EncoderDecoder())


def make():
    torch.manual_seed(0)
    images = torch.randn(2, 3, 4, 4)
    labels = torch.randint(0, 3, (2, 1, 4, 4))
    labels[0, 0, 0] = 255
    ignored = torch.full((2, 1, 4, 4), 255)
    samples = [SegDataSample(labels[i]) for i in range(2)]
    all_ignored = [SegDataSample(ignored[i]) for i in range(2)]
    return EncoderDecoder(), [(images, samples), (images, all_ignored)]
