"""VIBE Trainer.evaluate: np.vstack of accumulators, pelvis alignment, batched torch.svd Procrustes with a per-item trace list, numpy acceleration errors.

Source: mkocabas/VIBE@851f779:lib/core/trainer.py:389-432
Also: lib/utils/eval_utils.py (compute_accel, compute_error_accel, compute_error_verts,
batch_compute_similarity_transform_torch), same commit.
Kept: evaluate() body (np.vstack over the accumulator dict, torch.from_numpy(...).float(), the print
f-string with shape[0], [2]/[3] list-index pelvis, logger.info of the joined log string, in-place `-=`, MPJPE `.cpu().numpy()`,
batch_compute_similarity_transform_torch, m2mm scaling, np.mean of the numpy metrics, the eval_dict
and log string); batch_compute_similarity_transform_torch verbatim (shape-dependent permute,
torch.svd, torch.eye(...).repeat, det sign, torch.cat of torch.trace over R.bmm(K)).
Simplified: compute_error_verts gets target vertices directly (its SMPL branch needs model files);
the TensorBoard writer calls are dropped (logger.info kept); the method becomes a function over an accumulator dict
(the trainer's self.epoch passed in); 8 frames of 14 joints, 20 "vertices".
"""
import logging

import numpy as np
import torch

logger = logging.getLogger(__name__)


def compute_accel(joints):
    velocities = joints[1:] - joints[:-1]
    acceleration = velocities[1:] - velocities[:-1]
    acceleration_normed = np.linalg.norm(acceleration, axis=2)
    return np.mean(acceleration_normed, axis=1)


def compute_error_accel(joints_gt, joints_pred, vis=None):
    # (N-2)x14x3
    accel_gt = joints_gt[:-2] - 2 * joints_gt[1:-1] + joints_gt[2:]
    accel_pred = joints_pred[:-2] - 2 * joints_pred[1:-1] + joints_pred[2:]

    normed = np.linalg.norm(accel_pred - accel_gt, axis=2)

    if vis is None:
        new_vis = np.ones(len(normed), dtype=bool)
    else:
        invis = np.logical_not(vis)
        invis1 = np.roll(invis, -1)
        invis2 = np.roll(invis, -2)
        new_invis = np.logical_or(invis, np.logical_or(invis1, invis2))[:-2]
        new_vis = np.logical_not(new_invis)

    return np.mean(normed[new_vis], axis=1)


def compute_error_verts(pred_verts, target_verts=None, target_theta=None):
    assert len(pred_verts) == len(target_verts)
    error_per_vert = np.sqrt(np.sum((target_verts - pred_verts) ** 2, axis=2))
    return np.mean(error_per_vert, axis=1)


def batch_compute_similarity_transform_torch(S1, S2):
    '''
    Computes a similarity transform (sR, t) that takes
    a set of 3D points S1 (3 x N) closest to a set of 3D points S2,
    where R is an 3x3 rotation matrix, t 3x1 translation, s scale.
    i.e. solves the orthogonal Procrutes problem.
    '''
    transposed = False
    if S1.shape[0] != 3 and S1.shape[0] != 2:
        S1 = S1.permute(0, 2, 1)
        S2 = S2.permute(0, 2, 1)
        transposed = True
    assert (S2.shape[1] == S1.shape[1])

    # 1. Remove mean.
    mu1 = S1.mean(axis=-1, keepdims=True)
    mu2 = S2.mean(axis=-1, keepdims=True)

    X1 = S1 - mu1
    X2 = S2 - mu2

    # 2. Compute variance of X1 used for scale.
    var1 = torch.sum(X1 ** 2, dim=1).sum(dim=1)

    # 3. The outer product of X1 and X2.
    K = X1.bmm(X2.permute(0, 2, 1))

    # 4. Solution that Maximizes trace(R'K) is R=U*V', where U, V are
    # singular vectors of K.
    U, s, V = torch.svd(K)

    # Construct Z that fixes the orientation of R to get det(R)=1.
    Z = torch.eye(U.shape[1], device=S1.device).unsqueeze(0)
    Z = Z.repeat(U.shape[0], 1, 1)
    Z[:, -1, -1] *= torch.sign(torch.det(U.bmm(V.permute(0, 2, 1))))

    # Construct R.
    R = V.bmm(Z.bmm(U.permute(0, 2, 1)))

    # 5. Recover scale.
    scale = torch.cat([torch.trace(x).unsqueeze(0) for x in R.bmm(K)]) / var1

    # 6. Recover translation.
    t = mu2 - (scale.unsqueeze(-1).unsqueeze(-1) * (R.bmm(mu1)))

    # 7. Error:
    S1_hat = scale.unsqueeze(-1).unsqueeze(-1) * R.bmm(S1) + t

    if transposed:
        S1_hat = S1_hat.permute(0, 2, 1)

    return S1_hat


@torch.compile
def evaluate(evaluation_accumulators, epoch):

    for k, v in evaluation_accumulators.items():
        evaluation_accumulators[k] = np.vstack(v)

    pred_j3ds = evaluation_accumulators['pred_j3d']
    target_j3ds = evaluation_accumulators['target_j3d']

    pred_j3ds = torch.from_numpy(pred_j3ds).float()
    target_j3ds = torch.from_numpy(target_j3ds).float()

    print(f'Evaluating on {pred_j3ds.shape[0]} number of poses...')
    pred_pelvis = (pred_j3ds[:, [2], :] + pred_j3ds[:, [3], :]) / 2.0
    target_pelvis = (target_j3ds[:, [2], :] + target_j3ds[:, [3], :]) / 2.0

    pred_j3ds -= pred_pelvis
    target_j3ds -= target_pelvis
    # Absolute error (MPJPE)
    errors = torch.sqrt(((pred_j3ds - target_j3ds) ** 2).sum(dim=-1)).mean(dim=-1).cpu().numpy()
    S1_hat = batch_compute_similarity_transform_torch(pred_j3ds, target_j3ds)
    errors_pa = torch.sqrt(((S1_hat - target_j3ds) ** 2).sum(dim=-1)).mean(dim=-1).cpu().numpy()
    pred_verts = evaluation_accumulators['pred_verts']
    target_verts = evaluation_accumulators['target_verts']

    m2mm = 1000

    pve = np.mean(compute_error_verts(target_verts=target_verts, pred_verts=pred_verts)) * m2mm
    accel = np.mean(compute_accel(pred_j3ds)) * m2mm
    accel_err = np.mean(compute_error_accel(joints_pred=pred_j3ds, joints_gt=target_j3ds)) * m2mm
    mpjpe = np.mean(errors) * m2mm
    pa_mpjpe = np.mean(errors_pa) * m2mm

    eval_dict = {
        'mpjpe': mpjpe,
        'pa-mpjpe': pa_mpjpe,
        'accel': accel,
        'pve': pve,
        'accel_err': accel_err
    }

    log_str = f'Epoch {epoch}, '
    log_str += ' '.join([f'{k.upper()}: {v:.4f},' for k, v in eval_dict.items()])
    logger.info(log_str)

    return pa_mpjpe


def make():
    torch.manual_seed(0)
    rng = np.random.RandomState(0)

    def accumulators(n_batches):
        return {
            'pred_j3d': [rng.randn(4, 14, 3).astype(np.float32) for _ in range(n_batches)],
            'target_j3d': [rng.randn(4, 14, 3).astype(np.float32) for _ in range(n_batches)],
            'pred_verts': [rng.randn(4, 20, 3).astype(np.float32) for _ in range(n_batches)],
            'target_verts': [rng.randn(4, 20, 3).astype(np.float32) for _ in range(n_batches)],
        }

    return evaluate._torchdynamo_orig_callable, [(accumulators(2), 3), (accumulators(3), 4)]
