"""RAFT-Stereo training loss: `sequence_loss` asserts no inf/nan with tensor `.any()`, masks with a boolean index, and builds a metrics dict with `.item()`.

Source: princeton-vl/RAFT-Stereo@6068c1a26f84f8132de10f60b2bc0ce61568e085:train_stereo.py:35-69
Kept: sequence_loss verbatim (asserts, gamma re-weighting, `i_loss[valid.bool()]`,
the `.item()` metrics dict); the training step that calls it (model output list,
loss.backward()) kept in shape.
Simplified: the RAFTStereo model is replaced by a list of precomputed disparity
predictions; 3 predictions of 1x1x6x8.
"""
import torch


def sequence_loss(flow_preds, flow_gt, valid, loss_gamma=0.9, max_flow=700):
    """ Loss function defined over sequence of flow predictions """

    n_predictions = len(flow_preds)
    assert n_predictions >= 1
    flow_loss = 0.0

    # exlude invalid pixels and extremely large diplacements
    mag = torch.sum(flow_gt**2, dim=1).sqrt()

    # exclude extremly large displacements
    valid = ((valid >= 0.5) & (mag < max_flow)).unsqueeze(1)
    assert valid.shape == flow_gt.shape, [valid.shape, flow_gt.shape]
    assert not torch.isinf(flow_gt[valid.bool()]).any()

    for i in range(n_predictions):
        assert not torch.isnan(flow_preds[i]).any() and not torch.isinf(flow_preds[i]).any()
        # We adjust the loss_gamma so it is consistent for any number of RAFT-Stereo iterations
        adjusted_loss_gamma = loss_gamma**(15/(n_predictions - 1))
        i_weight = adjusted_loss_gamma**(n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        assert i_loss.shape == valid.shape, [i_loss.shape, valid.shape, flow_gt.shape, flow_preds[i].shape]
        flow_loss += i_weight * i_loss[valid.bool()].mean()

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
    flow_gt = torch.randn(1, 1, 6, 8) * 4
    valid = (torch.rand(1, 6, 8) > 0.3).float()
    preds = [flow_gt + torch.randn(1, 1, 6, 8) * s for s in (3.0, 2.0, 1.0)]
    return sequence_loss, [(preds, flow_gt, valid), (preds[:2], flow_gt, valid, 0.8, 5)]
