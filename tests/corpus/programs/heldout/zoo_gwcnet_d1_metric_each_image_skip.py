"""GwcNet test_sample: masked smooth-L1 loss, per-image D1/EPE/Thres metrics, tensor2float.

Source: xy-guo/GwcNet@1167dcb794905389413ae7e01ebd6d9893227ad7:main.py:169-192 (test_sample)
Also: xy-guo/GwcNet@6b8f506591b2f57aa2b22edae3f73577a14f01bc:utils/metrics.py:14-65,
models/loss.py:4-9; utils/experiment.py@1167dcb:13-46 (make_iterative_func,
make_nograd_func, tensor2float).
Kept: the mask (disp_gt < maxdisp) & (disp_gt > 0), model_loss over the disparity list,
compute_metric_for_each_image (per-image loop, isinstance over nargs, the ratio test that
prints and skips, the empty-results fallback), the stacked decorators, tensor2float's
recursive .item() over the scalar dict.
Simplified: the model call is outside (disp_ests are inputs), no .cuda(), no image outputs
(disp_error_image_func is a visualisation helper), args.maxdisp is a module constant.
"""
import torch
import torch.nn.functional as F
from torch import Tensor

MAXDISP = 16


def make_iterative_func(func):
    def wrapper(vars):
        if isinstance(vars, list):
            return [wrapper(x) for x in vars]
        elif isinstance(vars, tuple):
            return tuple([wrapper(x) for x in vars])
        elif isinstance(vars, dict):
            return {k: wrapper(v) for k, v in vars.items()}
        else:
            return func(vars)

    return wrapper


def make_nograd_func(func):
    def wrapper(*f_args, **f_kwargs):
        with torch.no_grad():
            ret = func(*f_args, **f_kwargs)
        return ret

    return wrapper


@make_iterative_func
def tensor2float(vars):
    if isinstance(vars, float):
        return vars
    elif isinstance(vars, torch.Tensor):
        return vars.data.item()
    else:
        raise NotImplementedError("invalid input type for tensor2float")


def model_loss(disp_ests, disp_gt, mask):
    weights = [0.5, 0.5, 0.7, 1.0]
    all_losses = []
    for disp_est, weight in zip(disp_ests, weights):
        all_losses.append(weight * F.smooth_l1_loss(disp_est[mask], disp_gt[mask], reduction='mean'))
    return sum(all_losses)


def check_shape_for_metric_computation(*vars):
    assert isinstance(vars, tuple)
    for var in vars:
        assert len(var.size()) == 3
        assert var.size() == vars[0].size()


def compute_metric_for_each_image(metric_func):
    def wrapper(D_ests, D_gts, masks, *nargs):
        check_shape_for_metric_computation(D_ests, D_gts, masks)
        bn = D_gts.shape[0]  # batch size
        results = []  # a list to store results for each image
        # compute result one by one
        for idx in range(bn):
            # if tensor, then pick idx, else pass the same value
            cur_nargs = [x[idx] if isinstance(x, Tensor) else x for x in nargs]
            if masks[idx].float().mean() / (D_gts[idx] > 0).float().mean() < 0.1:
                print("masks[idx].float().mean() too small, skip")
            else:
                ret = metric_func(D_ests[idx], D_gts[idx], masks[idx], *cur_nargs)
                results.append(ret)
        if len(results) == 0:
            print("masks[idx].float().mean() too small for all images in this batch, return 0")
            return torch.tensor(0, dtype=torch.float32, device=D_gts.device)
        else:
            return torch.stack(results).mean()
    return wrapper


@make_nograd_func
@compute_metric_for_each_image
def D1_metric(D_est, D_gt, mask):
    D_est, D_gt = D_est[mask], D_gt[mask]
    E = torch.abs(D_gt - D_est)
    err_mask = (E > 3) & (E / D_gt.abs() > 0.05)
    return torch.mean(err_mask.float())


@make_nograd_func
@compute_metric_for_each_image
def Thres_metric(D_est, D_gt, mask, thres):
    assert isinstance(thres, (int, float))
    D_est, D_gt = D_est[mask], D_gt[mask]
    E = torch.abs(D_gt - D_est)
    err_mask = E > thres
    return torch.mean(err_mask.float())


@make_nograd_func
@compute_metric_for_each_image
def EPE_metric(D_est, D_gt, mask):
    D_est, D_gt = D_est[mask], D_gt[mask]
    return F.l1_loss(D_est, D_gt, reduction='mean')


@make_nograd_func
def test_sample(disp_ests, disp_gt):
    mask = (disp_gt < MAXDISP) & (disp_gt > 0)
    loss = model_loss(disp_ests, disp_gt, mask)

    scalar_outputs = {"loss": loss}

    scalar_outputs["D1"] = [D1_metric(disp_est, disp_gt, mask) for disp_est in disp_ests]
    scalar_outputs["EPE"] = [EPE_metric(disp_est, disp_gt, mask) for disp_est in disp_ests]
    scalar_outputs["Thres1"] = [Thres_metric(disp_est, disp_gt, mask, 1.0) for disp_est in disp_ests]
    scalar_outputs["Thres2"] = [Thres_metric(disp_est, disp_gt, mask, 2.0) for disp_est in disp_ests]
    scalar_outputs["Thres3"] = [Thres_metric(disp_est, disp_gt, mask, 3.0) for disp_est in disp_ests]

    return tensor2float(loss), tensor2float(scalar_outputs)


compiled_test_sample = torch.compile(test_sample)


def make():
    torch.manual_seed(0)
    disp_gt = torch.rand(2, 8, 12) * 20.0
    disp_ests = [disp_gt + torch.randn(2, 8, 12) * 2.0 for _ in range(4)]
    # second image almost entirely out of range: its metrics are skipped
    sparse_gt = disp_gt.clone()
    sparse_gt[1] = 30.0
    sparse_gt[1, 0, 0] = 5.0
    sparse_ests = [sparse_gt + torch.randn(2, 8, 12) for _ in range(4)]
    # both images out of range: every metric falls back to the zero tensor
    empty_gt = sparse_gt.clone()
    empty_gt[0] = 30.0
    empty_gt[0, 0, 0] = 5.0
    empty_ests = [empty_gt + torch.randn(2, 8, 12) for _ in range(4)]
    return test_sample, [(disp_ests, disp_gt), (sparse_ests, sparse_gt), (empty_ests, empty_gt)]
