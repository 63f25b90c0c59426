"""xformers' BlockSparseTensor reference kernels: `_sddmm`, `_softmax` and `_spmm` each unpack `h, r, c = layout.nonzero(as_tuple=True)` and gather blocks with the result; the attention chains them as the tensor subclass's `__torch_function__` dispatch does (masked_matmul, softmax, bmm).

Source: facebookresearch/xformers@ca6d2aa0d43241fc8a8dcd872debc2406160160d:xformers/sparse/blocksparse_tensor.py:16-76,126-146,190-200
Kept: _spmm, _softmax, _sddmm verbatim; _masked_matmul's transpose and
contiguity assert; _to_dense's loop over `enumerate(zip(*layout.nonzero(...)))`.
Simplified: the torch.Tensor subclass wrapper (_make_wrapper_subclass,
__torch_function__) is replaced by passing (values, layout) pairs between the
same classmethod bodies; block size 2, 2 heads of 3x3 blocks.
"""
import torch


# TODO: This is all now deprecated because PyTorch has its own blocksparse ops
def _spmm(b, layout, values):
    N, nnz, _, block_size = values.shape
    br = b.reshape(
        b.shape[0], b.shape[1], b.shape[2] // block_size, block_size, b.shape[3]
    )
    # perform matmul on blocks
    h, r, c = layout.nonzero(as_tuple=True)
    temp = values @ br[:, h, c, :]

    linear_idx = h * (b.shape[2] // block_size) + r
    out = torch.zeros(
        N,
        b.shape[1] * layout.shape[-2],
        block_size,
        b.shape[3],
        dtype=b.dtype,
        device=b.device,
    )
    # now aggregate the results of the different blocks
    out.index_add_(1, linear_idx.to(b.device), temp)
    out = out.reshape(N, b.shape[1], -1, b.shape[3])
    return out


def _softmax(layout, values):
    h, r, c = layout.nonzero(as_tuple=True)
    norms = torch.logsumexp(values, dim=-1, keepdim=True)
    linear_idx = h * layout.shape[1] + r

    out_t = torch.zeros(
        norms.shape[0],
        layout.shape[0] * layout.shape[1],
        norms.shape[2],
        norms.shape[3],
        dtype=norms.dtype,
        device=norms.device,
    )
    max_val = norms.max()
    out_t.index_add_(
        1, linear_idx.to(values.device), (norms - max_val).exp()
    ).clamp_min_(1e-24).log_().add_(max_val)
    out = torch.exp(values - out_t[:, linear_idx])
    return out


def _sddmm(a, b, layout):
    block_size = a.shape[-2] // layout.shape[-2]
    a = a.reshape(
        a.shape[0], a.shape[1], a.shape[2] // block_size, block_size, a.shape[3]
    )
    b = b.reshape(
        b.shape[0], b.shape[1], b.shape[2] // block_size, block_size, b.shape[3]
    )

    h, r, c = layout.nonzero(as_tuple=True)

    out = torch.einsum("nhik,nhjk->nhij", a[:, h, r, :, :], b[:, h, c, :, :])
    return out


def _masked_matmul(a, b, layout):
    b = b.transpose(-2, -1)
    assert b.is_contiguous()
    return _sddmm(a, b, layout)


def _to_dense(values, layout, shape):
    out = torch.zeros(shape, dtype=values.dtype, device=values.device)
    block_size = values.shape[-1]
    blocks_i = layout.shape[-2]
    blocks_j = layout.shape[-1]

    out_r = out.reshape(
        shape[0], shape[1], blocks_i, block_size, blocks_j, block_size
    )

    for idx, (h, i, j) in enumerate(zip(*layout.nonzero(as_tuple=True))):
        out_r[:, h, i, :, j, :] = values[:, idx, :, :]

    return out


def blocksparse_attention(q, k, v, layout, return_attention=False):
    # masked_matmul(q, k.transpose(-2, -1), mask) -> softmax(dim=-1) -> bmm(att, v)
    scale = q.shape[-1] ** -0.5
    att = _masked_matmul(q * scale, k.transpose(-2, -1), layout)
    att = _softmax(layout, att)
    out = _spmm(v, layout, att)
    if return_attention:
        return out, _to_dense(att, layout, (q.shape[0], q.shape[1], q.shape[2], k.shape[2]))
    return out


attention = torch.compile(blocksparse_attention, fullgraph=False)


def make():
    torch.manual_seed(0)
    layout = torch.tensor([
        [[1, 0, 0], [1, 1, 0], [0, 1, 1]],
        [[1, 0, 1], [0, 1, 0], [1, 1, 1]],
    ])
    q, k, v = (t.contiguous() for t in torch.randn(3, 1, 2, 6, 4).unbind(0))
    return blocksparse_attention, [(q, k, v, layout), (q, k, v, layout, True)]
