"""RAFT's sequence_loss: gamma-weighted L1 over the list of flow predictions, then EPE metrics from `epe.view(-1)[valid.view(-1)]` boolean indexing, each leaving as `.item()` in a metrics dict.

Source: princeton-vl/RAFT@2888e15a51fa41140771d3f498ed8023cff098d1:train.py:42-73
Also: train.py:174 (`loss, metrics = sequence_loss(flow_predictions, flow, valid, args.gamma)`).
Kept: MAX_FLOW and sequence_loss verbatim (len of the prediction list, the
valid mask from the threshold and the flow magnitude, the per-iteration weights,
the masked EPE and the four .item() metrics).
Simplified: the RAFT model is not run; flow predictions are inputs; the
compiled entry is sequence_loss.
"""
import torch

MAX_FLOW = 400


def sequence_loss(flow_preds, flow_gt, valid, gamma=0.8, max_flow=MAX_FLOW):
    """ Loss function defined over sequence of flow predictions """

    n_predictions = len(flow_preds)
    flow_loss = 0.0

    # exlude invalid pixels and extremely large diplacements
    mag = torch.sum(flow_gt**2, dim=1).sqrt()
    valid = (valid >= 0.5) & (mag < max_flow)

    for i in range(n_predictions):
        i_weight = gamma**(n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * (valid[:, None] * i_loss).mean()

    epe = torch.sum((flow_preds[-1] - flow_gt)**2, dim=1).sqrt()
    epe = epe.view(-1)[valid.view(-1)]

    metrics = {
        'epe': epe.mean().item(),
        '1px': (epe < 1).float().mean().item(),
        '3px': (epe < 3).float().mean().item(),
        '5px': (epe < 5).float().mean().item(),
    }

    return flow_loss, metrics


compiled_loss = torch.compile(sequence_loss)


def make():
    torch.manual_seed(0)
    flow_gt = torch.randn(2, 2, 8, 8) * 3
    flow_gt[0, :, 0, 0] = 500.0
    preds = [flow_gt + torch.randn(2, 2, 8, 8) * s for s in (4.0, 2.0, 1.0)]
    valid = (torch.rand(2, 8, 8) > 0.2).float()
    return sequence_loss, [(preds, flow_gt, valid), (preds[:2], flow_gt, valid, 0.85)]
