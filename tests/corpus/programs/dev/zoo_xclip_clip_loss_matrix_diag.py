"""x-clip's CLIP training forward with custom encoders: the contrastive numerators come from `matrix_diag`, which reads the diagonal with `t.masked_select(diag_mask)`; multiview batches (augmented text/images) take the extra loss path.

Source: lucidrains/x-clip@0c72f6efaf9f748a02b18c1593fc65809164aaf9:x_clip/x_clip.py:1-70,394-880
Kept: the helper functions (exists/default/cast_tuple/masked_mean/log/l2norm/
max_neg_value/matrix_diag/model_forward_with_context), CLIP.__init__'s
plumbing for custom text/image encoders (the README's "custom encoders"
usage), the latent projections and their deep-copied CLOOB twins,
`requires_all_gather` from torch.distributed, and forward: text mask,
multiview concatenation with its asserts, frozen-encoder contexts, CLS
selection, early returns, CLOOB extra latents, decoupled contrastive
denominators, multiview loss weighting.
Simplified: einops' rearrange/reduce are the equivalent view/permute/
max/mean calls; the MLM, visual SSL, fine-grained (all-token) similarity,
causal-text EOS shuffling and similarity-regularisation branches are left
out (their flags are off); the encoders are an embedding and a patch conv
with a CLS slot; dims 8, latent 6.
"""
import copy
from contextlib import contextmanager

import torch
import torch.distributed as distributed
import torch.nn.functional as F
from torch import nn, einsum


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


@contextmanager
def null_context():
    yield


def max_neg_value(dtype):
    return -torch.finfo(dtype).max


def cast_tuple(t):
    return t if isinstance(t, (tuple, list)) else (t,)


def masked_mean(t, mask, dim = 1, eps = 1e-6):
    t = t.masked_fill(~mask, 0.)
    numer = t.sum(dim = dim)
    denom = mask.sum(dim = dim).clamp(min = eps)
    return numer / denom


def log(t, eps = 1e-20):
    return torch.log(t + eps)


def l2norm(t):
    return F.normalize(t, dim = -1)


def matrix_diag(t):
    device = t.device
    i, j = t.shape[-2:]
    num_diag_el = min(i, j)
    i_range = torch.arange(i, device = device)
    j_range = torch.arange(j, device = device)
    diag_mask = i_range[:, None] == j_range[None, :]
    diag_el = t.masked_select(diag_mask)
    return diag_el.view(-1, num_diag_el)


def model_forward_with_context(
    *,
    fn,
    args,
    freeze,
):
    encoding_context = null_context if not freeze else torch.no_grad

    with encoding_context():
        enc = fn(*args)

        if freeze:
            enc.detach_()

    return enc


class TinyTextEncoder(nn.Module):
    def __init__(self, num_tokens, dim):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.cls_token = nn.Parameter(torch.randn(dim))
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, mask = None):
        x = self.token_emb(x)
        if exists(mask):
            x = x * mask[..., None]
        cls = self.cls_token.expand(x.shape[0], 1, -1)
        return self.norm(self.proj(torch.cat((cls, x), dim = 1)))


class TinyImageEncoder(nn.Module):
    def __init__(self, channels, dim, patch_size):
        super().__init__()
        self.to_patches = nn.Conv2d(channels, dim, patch_size, stride = patch_size)
        self.cls_token = nn.Parameter(torch.randn(dim))

    def forward(self, image):
        x = self.to_patches(image).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], 1, -1)
        return torch.cat((cls, x), dim = 1)


class CLIP(nn.Module):
    def __init__(
        self,
        *,
        image_encoder = None,
        text_encoder = None,
        dim_text = 512,
        dim_image = 512,
        dim_latent = 512,
        text_has_cls_token = True,
        text_pad_id = 0,
        text_encode_without_mask = False,
        visual_has_cls_token = True,
        channels = 3,
        use_all_token_embeds = False,
        decoupled_contrastive_learning = False,
        extra_latent_projection = False,
        multiview_loss_weight = 0.1,
        **kwargs
    ):
        super().__init__()
        assert use_all_token_embeds or (visual_has_cls_token or text_has_cls_token), 'CLS token must be included on both vision and text transformers if you are not using fine-grained contrastive learning loss'

        # store some parameters for access

        self.dim_text = dim_text
        self.dim_image = dim_image
        self.dim_latent = dim_latent

        self.image_channels = channels

        # instantiate text transformer

        self.text_pad_id = text_pad_id
        self.text_has_cls_token = text_has_cls_token
        self.text_encode_without_mask = text_encode_without_mask # whether to pass in text mask to text encoder
        self.text_transformer = text_encoder

        # instantiate image transformer

        self.visual_has_cls_token = visual_has_cls_token
        self.visual_transformer = image_encoder

        # text ssl and image ssl are off in this program

        self.text_ssl_loss_weight = 0
        self.image_ssl_loss_weight = 0

        # text latent projection

        self.to_text_latent = nn.Linear(dim_text, dim_latent, bias = False)

        # image latent projection

        self.to_visual_latent = nn.Linear(dim_image, dim_latent, bias = False)

        # temperature

        self.temperature = nn.Parameter(torch.tensor(1.))

        # from https://arxiv.org/abs/2111.07783 (FILIP paper)
        self.use_all_token_embeds = use_all_token_embeds

        # proposed in https://arxiv.org/abs/2110.06848 (DCL) and https://arxiv.org/abs/2110.11316 (CLOOB)
        self.decoupled_contrastive_learning = decoupled_contrastive_learning

        # proposed in https://arxiv.org/abs/2110.11316 (CLOOB)
        self.extra_latent_projection = extra_latent_projection

        self.to_text_latent_extra = copy.deepcopy(self.to_text_latent)
        self.to_visual_latent_extra = copy.deepcopy(self.to_visual_latent)

        self.multiview_loss_weight = multiview_loss_weight

        # is distributed or not
        self.requires_all_gather = distributed.is_available() and distributed.is_initialized() and distributed.get_world_size() > 1

    def forward(
        self,
        text,
        image,
        return_loss = False,
        return_encodings = False,
        return_latents = False,
        freeze_image_encoder = False,   # image encoder is not trained if this is set to True, proposed by LiT paper
        freeze_text_encoder = False,    # text encoder is not trained if this is set to True
        text_to_image = True,           # in the case the extra projection is turned on, would return different similarity values depending on modality directionality
        aug_text = None,                # augmented text (for multiview)
        aug_image = None                # augmented image (for multiview)
    ):
        batch, device = text.shape[0], text.device

        # derive text mask

        text_mask = text != self.text_pad_id

        # ssl

        text_ssl_loss = 0
        image_ssl_loss = 0

        # concat augmented texts and images and do some asserts

        num_batch_texts = num_batch_images = 1

        if exists(aug_text):
            aug_text = cast_tuple(aug_text)
            assert all(map(lambda t: t.shape == text.shape, aug_text))
            num_batch_texts = len(aug_text) + 1

            aug_text = torch.cat(aug_text, dim = 0)

            aug_text_mask = aug_text != self.text_pad_id

            text_mask = torch.cat((text_mask, aug_text_mask), dim = 0)
            text = torch.cat((text, aug_text), dim = 0)

        if exists(aug_image):
            aug_image = cast_tuple(aug_image)
            assert all(map(lambda i: i.shape == image.shape, aug_image))
            num_batch_images = len(aug_image) + 1

            aug_image = torch.cat(aug_image, dim = 0)

            image = torch.cat((image, aug_image), dim = 0)

        is_multiview = (num_batch_texts > 1 or num_batch_images > 1)
        assert not (return_loss and not self.training), 'loss cannot be used if not training'
        assert not (not return_loss and is_multiview), 'do not pass in augmented texts or images if not training'
        assert not (self.multiview_loss_weight == 0 and is_multiview), 'multiview loss weight cannot be 0 if augmented text or images passed in'

        # get encoded text

        text_args = (text,)

        if not self.text_encode_without_mask:
            text_args = (*text_args, text_mask)

        enc_text = model_forward_with_context(
            fn = self.text_transformer,
            args = text_args,
            freeze = freeze_text_encoder
        )

        # whether to train image encoder, in the case that the image net was pretrained as recommended in LiT

        enc_image = model_forward_with_context(
            fn = self.visual_transformer,
            args = (image,),
            freeze = freeze_image_encoder
        )

        # early return of encodings, if needed (for DALL-E2)

        if return_encodings:
            return enc_text, enc_image

        # select CLS tokens only (fine-grained all-token CLIP is off)

        text_embeds = enc_text[:, 0] if enc_text.ndim == 3 else enc_text
        image_embeds = enc_image[:, 0] if enc_image.ndim == 3 else enc_image

        # project to latents

        text_latents = self.to_text_latent(text_embeds)
        image_latents = self.to_visual_latent(image_embeds)
        text_latents, image_latents = map(l2norm, (text_latents, image_latents))

        # calculate another set of latents for image to text (vs text to image)
        # proposed by CLOOB

        text_latents_extra, image_latents_extra = text_latents, image_latents
        if self.extra_latent_projection:
            text_latents_extra = self.to_text_latent_extra(text_embeds)
            image_latents_extra = self.to_visual_latent_extra(image_embeds)
            text_latents_extra, image_latents_extra = map(l2norm, (text_latents_extra, image_latents_extra))

        # whether to early return latents

        if return_latents:
            if self.extra_latent_projection:
                return text_latents, image_latents, text_latents_extra, image_latents_extra

            return text_latents, image_latents

        # get temperature

        temp = self.temperature.exp()

        # early return, if needed

        if not return_loss:
            einsum_args = (text_latents_extra, image_latents_extra) if self.extra_latent_projection and not text_to_image else (text_latents, image_latents)
            return einsum('b d, b d -> b', *einsum_args) * temp

        # split out multiview dimension for text and images

        text_latents = text_latents.view(num_batch_texts, -1, *text_latents.shape[1:])
        image_latents = image_latents.view(num_batch_images, -1, *image_latents.shape[1:])

        if self.extra_latent_projection:
            text_latents_extra = text_latents_extra.view(num_batch_texts, -1, *text_latents_extra.shape[1:])
            image_latents_extra = image_latents_extra.view(num_batch_images, -1, *image_latents_extra.shape[1:])

        # contrastive loss

        text_to_image = einsum('m t d, n i d -> m n t i', text_latents, image_latents) * temp
        image_to_text = text_to_image.transpose(-1, -2)

        if self.extra_latent_projection:
            image_to_text = einsum('m t d, n i d -> m n i t', text_latents_extra, image_latents_extra) * temp

        # calculate loss

        text_to_image = text_to_image.flatten(0, 1)
        image_to_text = image_to_text.flatten(0, 1)

        # exponentiate

        text_to_image_exp, image_to_text_exp = map(torch.exp, (text_to_image, image_to_text))

        # numerators

        text_to_image_pos, image_to_text_pos = map(matrix_diag, (text_to_image_exp, image_to_text_exp))

        # denominator

        if self.decoupled_contrastive_learning:
            pos_mask = torch.eye(batch, device = device, dtype = torch.bool)
            text_to_image_exp, image_to_text_exp = map(lambda t: t.masked_fill(pos_mask, 0.), (text_to_image_exp, image_to_text_exp))

        text_to_image_denom, image_to_text_denom = map(lambda t: t.sum(dim = -1), (text_to_image_exp, image_to_text_exp))

        # loss

        text_to_image_loss = (-log(text_to_image_pos) + log(text_to_image_denom)).mean(dim = -1)
        image_to_text_loss = (-log(image_to_text_pos) + log(image_to_text_denom)).mean(dim = -1)

        # calculate CL loss

        cl_losses = (text_to_image_loss + image_to_text_loss) / 2

        # get main CL loss vs multiview CL losses

        cl_loss, multiview_cl_loss = cl_losses[0], cl_losses[1:]

        # if no augmented text or images passed in, multiview loss weight is 0

        multiview_loss_weight = self.multiview_loss_weight if is_multiview else 0

        # calculate weights

        cl_loss_weight = 1 - (self.text_ssl_loss_weight + self.image_ssl_loss_weight + multiview_loss_weight)

        loss = (cl_loss * cl_loss_weight) \
            + (text_ssl_loss * self.text_ssl_loss_weight) \
            + (image_ssl_loss * self.image_ssl_loss_weight)

        # add multiview CL loss with weight

        if is_multiview:
            loss = loss + multiview_cl_loss.mean() * multiview_loss_weight

        return loss


def build_clip():
    return CLIP(
        image_encoder = TinyImageEncoder(channels = 3, dim = 8, patch_size = 4),
        text_encoder = TinyTextEncoder(num_tokens = 20, dim = 8),
        dim_text = 8,
        dim_image = 8,
        dim_latent = 6,
        decoupled_contrastive_learning = True,
        extra_latent_projection = True,
    )


clip = torch.compile(build_clip())


def make():
    torch.manual_seed(0)
    text = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0], [8, 9, 10, 11]])
    images = torch.randn(3, 3, 8, 8)
    aug_text = torch.tensor([[3, 4, 0, 0], [6, 7, 8, 0], [8, 9, 10, 0]])
    aug_images = torch.randn(3, 3, 8, 8)
    return build_clip(), [
        (text, images, True),
        (text, images, True, False, False, False, True, True, aug_text, aug_images),
        (text, images),
    ]
