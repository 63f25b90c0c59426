"""GMFlow flow_loss_func: gamma-weighted sequence loss, valid-masked EPE metrics via .item().

Source: haofeixu/gmflow@b5123431164d01ec14526a1c3d22218aecb62024:loss.py:1-37
Kept: the whole function (n_predictions loop, valid mask from flow magnitude, the no-op
`if valid.max() < 0.5: pass`, boolean-index epe, metrics dict of .item() calls).
Simplified: nothing in the function; inputs are 3 small flow predictions.
"""
import torch


def flow_loss_func(flow_preds, flow_gt, valid,
                   gamma=0.9,
                   max_flow=400,
                   **kwargs,
                   ):
    n_predictions = len(flow_preds)
    flow_loss = 0.0

    # exlude invalid pixels and extremely large diplacements
    mag = torch.sum(flow_gt ** 2, dim=1).sqrt()  # [B, H, W]
    valid = (valid >= 0.5) & (mag < max_flow)

    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)

        i_loss = (flow_preds[i] - flow_gt).abs()

        flow_loss += i_weight * (valid[:, None] * i_loss).mean()

    epe = torch.sum((flow_preds[-1] - flow_gt) ** 2, dim=1).sqrt()

    if valid.max() < 0.5:
        pass

    epe = epe.view(-1)[valid.view(-1)]

    metrics = {
        'epe': epe.mean().item(),
        '1px': (epe > 1).float().mean().item(),
        '3px': (epe > 3).float().mean().item(),
        '5px': (epe > 5).float().mean().item(),
    }

    return flow_loss, metrics


loss_fn = torch.compile(flow_loss_func)


def make():
    torch.manual_seed(0)
    flow_gt = torch.randn(2, 2, 16, 24) * 4.0
    flow_preds = [flow_gt + torch.randn(2, 2, 16, 24) * s for s in (4.0, 2.0, 1.0)]
    valid = (torch.rand(2, 16, 24) > 0.2).float()
    invalid = torch.zeros(2, 16, 24)
    return flow_loss_func, [(flow_preds, flow_gt, valid), (flow_preds, flow_gt, invalid)]
