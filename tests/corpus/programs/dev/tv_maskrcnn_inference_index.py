"""torchvision maskrcnn_inference: sigmoid, advanced indexing by arange and cat'ed labels, split per image (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/detection/roi_heads.py:56-82
Kept: maskrcnn_inference verbatim and the mask-head postprocess loop that
writes each image's masks into its result dict.
Simplified: mask logits 3x4x2x2.
"""
import torch


def maskrcnn_inference(x, labels):
    mask_prob = x.sigmoid()
    num_masks = x.shape[0]
    boxes_per_image = [label.shape[0] for label in labels]
    labels = torch.cat(labels)
    index = torch.arange(num_masks, device=labels.device)
    mask_prob = mask_prob[index, labels][:, None]
    mask_prob = mask_prob.split(boxes_per_image, dim=0)
    return mask_prob


class MaskHeadPostprocess(torch.nn.Module):
    def forward(self, mask_logits, labels):
        masks_probs = maskrcnn_inference(mask_logits, labels)
        result = [{"labels": lbl} for lbl in labels]
        for mask_prob, r in zip(masks_probs, result):
            r["masks"] = mask_prob
        return result


postprocess = torch.compile(MaskHeadPostprocess())


def make():
    torch.manual_seed(0)
    return MaskHeadPostprocess(), [(torch.randn(3, 4, 2, 2), [torch.tensor([1, 3]), torch.tensor([2])])]
