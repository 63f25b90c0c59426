"""DUSt3R downstream heads wrapped by `transpose_to_landscape`: the batch's `true_shape` decides (through `int(true_shape.min())`, `is_landscape.all()` and boolean token selection) whether the linear pts3d head runs once, transposed, or twice on the landscape and portrait halves.

Source: naver/dust3r@4c24a6ebf04809f2cfe59915e51779c8984aaa40:dust3r/utils/misc.py:54-99
Also: dust3r/model.py:113-211 (set_downstream_head, _encode_symmetrized,
_downstream_head via `getattr(self, f'head{head_num}')`, forward);
dust3r/heads/__init__.py (head_factory); dust3r/heads/linear_head.py (LinearPts3d);
dust3r/heads/postprocess.py (postprocess, reg_dense_depth, reg_dense_conf).
Kept: transpose_to_landscape (wrapper_no / wrapper_yes) and transposed verbatim;
LinearPts3d, postprocess, reg_dense_depth, reg_dense_conf, head_factory verbatim;
the model's set_downstream_head / _downstream_head / forward, with `true_shape`
taken from the view dict or rebuilt from the image shape.
Simplified: the CroCo encoder/decoder is replaced by a patch embedding and one
linear layer per view (`_decoder` returns a list of token tensors like the real
decoder); no symmetrized-pair shortcut; `torch.cuda.amp.autocast(enabled=False)`
becomes `torch.autocast("cpu", enabled=False)`; patch 2, dec_embed_dim 8, 4x6 images.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

inf = float('inf')


def transpose_to_landscape(head, activate=True):
    """ Predict in the correct aspect-ratio,
        then transpose the result in landscape 
        and stack everything back together.
    """
    def wrapper_no(decout, true_shape):
        B = len(true_shape)
        assert true_shape[0:1].allclose(true_shape), 'true_shape must be all identical'
        H, W = true_shape[0].cpu().tolist()
        res = head(decout, (H, W))
        return res

    def wrapper_yes(decout, true_shape):
        B = len(true_shape)
        # by definition, the batch is in landscape mode so W >= H
        H, W = int(true_shape.min()), int(true_shape.max())

        height, width = true_shape.T
        is_landscape = (width >= height)
        is_portrait = ~is_landscape

        # true_shape = true_shape.cpu()
        if is_landscape.all():
            return head(decout, (H, W))
        if is_portrait.all():
            return transposed(head(decout, (W, H)))

        # batch is a mix of both portraint & landscape
        def selout(ar): return [d[ar] for d in decout]
        l_result = head(selout(is_landscape), (H, W))
        p_result = transposed(head(selout(is_portrait), (W, H)))

        # allocate full result
        result = {}
        for k in l_result | p_result:
            x = l_result[k].new(B, *l_result[k].shape[1:])
            x[is_landscape] = l_result[k]
            x[is_portrait] = p_result[k]
            result[k] = x

        return result

    return wrapper_yes if activate else wrapper_no


def transposed(dic):
    return {k: v.swapaxes(1, 2) for k, v in dic.items()}


def postprocess(out, depth_mode, conf_mode):
    """
    extract 3D points/confidence from prediction head output
    """
    fmap = out.permute(0, 2, 3, 1)  # B,H,W,3
    res = dict(pts3d=reg_dense_depth(fmap[:, :, :, 0:3], mode=depth_mode))

    if conf_mode is not None:
        res['conf'] = reg_dense_conf(fmap[:, :, :, 3], mode=conf_mode)
    return res


def reg_dense_depth(xyz, mode):
    """
    extract 3D points from prediction head output
    """
    mode, vmin, vmax = mode

    no_bounds = (vmin == -float('inf')) and (vmax == float('inf'))
    assert no_bounds

    if mode == 'linear':
        if no_bounds:
            return xyz  # [-inf, +inf]
        return xyz.clip(min=vmin, max=vmax)

    # distance to origin
    d = xyz.norm(dim=-1, keepdim=True)
    xyz = xyz / d.clip(min=1e-8)

    if mode == 'square':
        return xyz * d.square()

    if mode == 'exp':
        return xyz * torch.expm1(d)

    raise ValueError(f'bad {mode=}')


def reg_dense_conf(x, mode):
    """
    extract confidence from prediction head output
    """
    mode, vmin, vmax = mode
    if mode == 'exp':
        return vmin + x.exp().clip(max=vmax-vmin)
    if mode == 'sigmoid':
        return (vmax - vmin) * torch.sigmoid(x) + vmin
    raise ValueError(f'bad {mode=}')


class LinearPts3d (nn.Module):
    """ 
    Linear head for dust3r
    Each token outputs: - 16x16 3D points (+ confidence)
    """

    def __init__(self, net, has_conf=False):
        super().__init__()
        self.patch_size = net.patch_embed.patch_size[0]
        self.depth_mode = net.depth_mode
        self.conf_mode = net.conf_mode
        self.has_conf = has_conf

        self.proj = nn.Linear(net.dec_embed_dim, (3 + has_conf)*self.patch_size**2)

    def setup(self, croconet):
        pass

    def forward(self, decout, img_shape):
        H, W = img_shape
        tokens = decout[-1]
        B, S, D = tokens.shape

        # extract 3D points
        feat = self.proj(tokens)  # B,S,D
        feat = feat.transpose(-1, -2).view(B, -1, H//self.patch_size, W//self.patch_size)
        feat = F.pixel_shuffle(feat, self.patch_size)  # B,3,H,W

        # permute + norm depth
        return postprocess(feat, self.depth_mode, self.conf_mode)


def head_factory(head_type, output_mode, net, has_conf=False):
    """" build a prediction head for the decoder 
    """
    if head_type == 'linear' and output_mode == 'pts3d':
        return LinearPts3d(net, has_conf)
    else:
        raise NotImplementedError(f"unexpected {head_type=} and {output_mode=}")


class PatchEmbed(nn.Module):
    def __init__(self, patch_size=2, embed_dim=8):
        super().__init__()
        self.patch_size = (patch_size, patch_size)
        self.proj = nn.Conv2d(3, embed_dim, patch_size, patch_size)

    def forward(self, x, true_shape):
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x, None


class AsymmetricCroCo3DStereo(nn.Module):
    def __init__(self, output_mode='pts3d', head_type='linear', depth_mode=('exp', -inf, inf),
                 conf_mode=('exp', 1, inf), landscape_only=True, patch_size=2, img_size=(4, 6),
                 dec_embed_dim=8):
        super().__init__()
        self.dec_embed_dim = dec_embed_dim
        self.patch_embed = PatchEmbed(patch_size, dec_embed_dim)
        self.dec1 = nn.Linear(dec_embed_dim, dec_embed_dim)
        self.dec2 = nn.Linear(dec_embed_dim, dec_embed_dim)
        self.set_downstream_head(output_mode, head_type, landscape_only, depth_mode, conf_mode,
                                 patch_size=patch_size, img_size=img_size)

    def set_downstream_head(self, output_mode, head_type, landscape_only, depth_mode, conf_mode, patch_size, img_size,
                            **kw):
        assert img_size[0] % patch_size == 0 and img_size[1] % patch_size == 0, \
            f'{img_size=} must be multiple of {patch_size=}'
        self.output_mode = output_mode
        self.head_type = head_type
        self.depth_mode = depth_mode
        self.conf_mode = conf_mode
        # allocate heads
        self.downstream_head1 = head_factory(head_type, output_mode, self, has_conf=bool(conf_mode))
        self.downstream_head2 = head_factory(head_type, output_mode, self, has_conf=bool(conf_mode))
        # magic wrapper
        self.head1 = transpose_to_landscape(self.downstream_head1, activate=landscape_only)
        self.head2 = transpose_to_landscape(self.downstream_head2, activate=landscape_only)

    def _encode_symmetrized(self, view1, view2):
        img1 = view1['img']
        img2 = view2['img']
        B = img1.shape[0]
        # Recover true_shape when available, otherwise assume that the img shape is the true one
        shape1 = view1.get('true_shape', torch.tensor(img1.shape[-2:])[None].repeat(B, 1))
        shape2 = view2.get('true_shape', torch.tensor(img2.shape[-2:])[None].repeat(B, 1))
        feat1, pos1 = self.patch_embed(img1, true_shape=shape1)
        feat2, pos2 = self.patch_embed(img2, true_shape=shape2)
        return (shape1, shape2), (feat1, feat2), (pos1, pos2)

    def _decoder(self, f1, pos1, f2, pos2):
        final_output = [(f1, f2)]
        f1, f2 = self.dec1(f1) + f2.mean(1, keepdim=True), self.dec2(f2) + f1.mean(1, keepdim=True)
        final_output.append((f1, f2))
        return zip(*final_output)

    def _downstream_head(self, head_num, decout, img_shape):
        B, S, D = decout[-1].shape
        # img_shape = tuple(map(int, img_shape))
        head = getattr(self, f'head{head_num}')
        return head(decout, img_shape)

    def forward(self, view1, view2):
        # encode the two images --> B,S,D
        (shape1, shape2), (feat1, feat2), (pos1, pos2) = self._encode_symmetrized(view1, view2)

        # combine all ref images into object-centric representation
        dec1, dec2 = self._decoder(feat1, pos1, feat2, pos2)

        with torch.autocast("cpu", enabled=False):
            res1 = self._downstream_head(1, [tok.float() for tok in dec1], shape1)
            res2 = self._downstream_head(2, [tok.float() for tok in dec2], shape2)

        res2['pts3d_in_other_view'] = res2.pop('pts3d')  # predict view2's pts3d in view1's frame
        return res1, res2


model = AsymmetricCroCo3DStereo()
model = torch.compile(model)


def make():
    torch.manual_seed(0)
    img = torch.rand(2, 3, 4, 6)
    landscape = torch.tensor([[4, 6], [4, 6]])
    portrait = torch.tensor([[6, 4], [6, 4]])
    mixed = torch.tensor([[4, 6], [6, 4]])
    return AsymmetricCroCo3DStereo(), [
        (dict(img=img, true_shape=landscape), dict(img=img, true_shape=landscape)),
        (dict(img=img, true_shape=portrait), dict(img=img, true_shape=mixed)),
        (dict(img=img), dict(img=img)),
    ]
