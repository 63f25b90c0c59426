"""modded-nanogpt Muon: `@torch.compile`d Newton-Schulz quintic iteration in bfloat16, transposing when `G.size(0) > G.size(1)` (shape branch), in-place `X /=` normalisation.

Source: KellerJordan/modded-nanogpt@f411b3d346aa52d3504324ca93c230fd84c6c07f:records/track_1_short/2024-12-04_ValueEmbed/train_gpt2.py:26-56
Kept: zeropower_via_svd, the decorated zeropower_via_newtonschulz5 verbatim
(assert on 2-D, coefficients, bfloat16 cast, steps loop, both transposes),
the zeropower_backends table.
Simplified: the Muon optimizer's distributed step (WORLD_SIZE/RANK env reads,
dist.all_reduce) is not part of the compiled function and is dropped;
matrices are 6x4 / 4x6.
"""
import torch


def zeropower_via_svd(G, steps=None):
    U, S, V = G.svd()
    return U @ V.T


@torch.compile
def zeropower_via_newtonschulz5(G, steps=10, eps=1e-7):
    """
    Newton-Schulz iteration to compute the zeroth power / orthogonalization of G. We opt to use a
    quintic iteration whose coefficients are selected to maximize the slope at zero.
    """
    assert len(G.shape) == 2
    a, b, c = (3.4445, -4.7750,  2.0315)
    X = G.bfloat16()
    X /= (X.norm() + eps)  # ensure top singular value <= 1
    if G.size(0) > G.size(1):
        X = X.T
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A  # adapted from suggestion by @jxbz, @leloykun, and @YouJiacheng
        X = a * X + B @ X
    if G.size(0) > G.size(1):
        X = X.T
    return X


zeropower_backends = dict(svd=zeropower_via_svd, newtonschulz5=zeropower_via_newtonschulz5)


def make():
    torch.manual_seed(0)
    tall = torch.randn(6, 4)
    wide = torch.randn(4, 6)
    return zeropower_via_newtonschulz5._torchdynamo_orig_callable, [(tall, 5), (wide, 5), (wide,)]
