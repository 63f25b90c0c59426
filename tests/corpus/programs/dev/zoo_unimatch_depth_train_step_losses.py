"""UniMatch depth training losses: masked inverse-depth loss and gradient loss that return a python float when no pixel is valid, `isinstance(..., float)` / isnan checks, `.item()` metrics.

Source: autonomousvision/unimatch@943a990:main_depth.py:375-409
Also: loss/depth_loss.py (get_depth_grad_loss, depth_grad_loss_func, depth_loss_func), same commit.
Kept: the loss block of the training loop (loss = 0 accumulation, args.*_loss_weight > 0 gates,
`if not isinstance(depth_loss, float)` before `.item()`, `isinstance(loss, float)` and
torch.isnan(loss) skips, metrics dict), the three loss functions verbatim (valid > 0.5 masks,
`valid_bool.max() < 0.5` early outs returning 0., boolean-mask indexing of 1/depth, gamma weights).
Simplified: the model call is replaced by its output list `depth_preds`; the loop's `continue`
statements become `return None, metrics` in this per-batch function; backward/optimizer omitted.
"""
import argparse

import torch


def get_depth_grad_loss(depth_pred, depth_gt, valid, inverse_depth_loss=True):
    # default is on inverse depth
    # both: [B, H, W]
    assert depth_pred.dim() == 3 and depth_gt.dim() == 3 and valid.dim() == 3

    valid = valid > 0.5
    valid_x = valid[:, :, :-1] & valid[:, :, 1:]
    valid_y = valid[:, :-1, :] & valid[:, 1:, :]

    if valid_x.max() < 0.5 or valid_y.max() < 0.5:  # no valid pixel
        return 0.

    if inverse_depth_loss:
        grad_pred_x = torch.abs(1. / depth_pred[:, :, :-1][valid_x] - 1. / depth_pred[:, :, 1:][valid_x])
        grad_pred_y = torch.abs(1. / depth_pred[:, :-1, :][valid_y] - 1. / depth_pred[:, 1:, :][valid_y])

        grad_gt_x = torch.abs(1. / depth_gt[:, :, :-1][valid_x] - 1. / depth_gt[:, :, 1:][valid_x])
        grad_gt_y = torch.abs(1. / depth_gt[:, :-1, :][valid_y] - 1. / depth_gt[:, 1:, :][valid_y])
    else:
        grad_pred_x = torch.abs((depth_pred[:, :, :-1] - depth_pred[:, :, 1:])[valid_x])
        grad_pred_y = torch.abs((depth_pred[:, :-1, :] - depth_pred[:, 1:, :])[valid_y])

        grad_gt_x = torch.abs((depth_gt[:, :, :-1] - depth_gt[:, :, 1:])[valid_x])
        grad_gt_y = torch.abs((depth_gt[:, :-1, :] - depth_gt[:, 1:, :])[valid_y])

    loss_grad_x = torch.abs(grad_pred_x - grad_gt_x).mean()
    loss_grad_y = torch.abs(grad_pred_y - grad_gt_y).mean()

    return loss_grad_x + loss_grad_y


def depth_grad_loss_func(depth_preds, depth_gt, valid,
                         inverse_depth_loss=True,
                         gamma=0.9):
    num = len(depth_preds)
    loss = 0.

    for i in range(num):
        weight = gamma ** (num - i - 1)
        loss += weight * get_depth_grad_loss(depth_preds[i], depth_gt, valid,
                                             inverse_depth_loss=inverse_depth_loss)

    return loss


def depth_loss_func(depth_preds, depth_gt, valid, gamma=0.9,
                    ):
    """ loss function defined over multiple depth predictions """

    n_predictions = len(depth_preds)
    depth_loss = 0.0

    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)

        # inverse depth loss
        valid_bool = valid > 0.5
        if valid_bool.max() < 0.5:  # no valid pixel
            i_loss = 0.
        else:
            i_loss = (1. / depth_preds[i][valid_bool] - 1. / depth_gt[valid_bool]).abs().mean()

        depth_loss += i_weight * i_loss

    return depth_loss


args = argparse.Namespace(depth_loss_weight=20., depth_grad_loss_weight=20.)


@torch.compile
def depth_losses(depth_preds, gt_depth, valid_mask):
    loss = 0

    metrics = {}

    if args.depth_loss_weight > 0:
        depth_loss = depth_loss_func(depth_preds, gt_depth, valid_mask,
                                     gamma=0.9,
                                     )

        loss = loss + args.depth_loss_weight * depth_loss

        # no valid pixel
        if not isinstance(depth_loss, float):
            metrics.update({'depth_loss': depth_loss.item()})

    if args.depth_grad_loss_weight > 0:
        depth_grad_loss = depth_grad_loss_func(depth_preds, gt_depth,
                                               valid_mask,
                                               gamma=0.9)

        loss = loss + args.depth_grad_loss_weight * depth_grad_loss

        # no valid pixel
        if not isinstance(depth_grad_loss, float):
            metrics.update({'depth_grad_loss': depth_grad_loss.item()})

    if isinstance(loss, float):
        return None, metrics

    if torch.isnan(loss):
        return None, metrics

    metrics.update({'total_loss': loss.item()})
    return loss, metrics


def make():
    torch.manual_seed(0)
    depth_preds = [torch.rand(2, 8, 10) * 5 + 0.5 for _ in range(2)]
    for d in depth_preds:
        d.requires_grad_(True)
    gt_depth = torch.rand(2, 8, 10) * 5 + 0.5
    valid = (torch.rand(2, 8, 10) > 0.3).float()
    no_valid = torch.zeros(2, 8, 10)
    return depth_losses._torchdynamo_orig_callable, [
        (depth_preds, gt_depth, valid),
        (depth_preds, gt_depth, no_valid),
    ]
