"""MAGVIT-v2 VideoTokenizer losses: a discriminator step with gradient penalty through `torch.autograd.grad`, and a generator step whose adaptive GAN weight is a ratio of gradient norms reset when `torch.isnan(adaptive_weight).any()`.

Source: lucidrains/magvit2-pytorch@a00519fa9b9ca58f783d0ab16c9e09579314c9cd:magvit2_pytorch/magvit2_pytorch.py:1720-1850
Also: magvit2_pytorch.py:86-137 (pad_at_dim, pick_video_frame, gradient_penalty,
hinge_discr_loss, hinge_gen_loss, grad_layer_wrt_loss).
Kept: the helpers verbatim; VideoTokenizer.forward's discriminator branch (random frame
pick, requires_grad_, hinge loss, gradient penalty) and generator branch (perceptual loss,
`self.training and self.use_vgg and self.has_gan` gradient of the last decoder conv,
adaptive weight with clamp_ and the isnan reset, weighted total).
Simplified: encoder/decoder/quantizer are one conv pair (recon = decode(encode(video)));
VGG features are a frozen 2-d conv; no multiscale discriminators; the autocast/beartype
decorators are dropped; einops rearrange/repeat written as transpose/indexing; 4x4 frames.
"""
from collections import namedtuple

import torch
import torch.nn.functional as F
from torch import nn, Tensor
from torch.nn import Module
from torch.autograd import grad as torch_grad


def exists(v):
    return v is not None


def pick_video_frame(video, frame_indices):
    batch, device = video.shape[0], video.device
    video = video.transpose(1, 2)
    batch_indices = torch.arange(batch, device = device)
    batch_indices = batch_indices[:, None]
    images = video[batch_indices, frame_indices]
    images = images[:, 0]
    return images


def gradient_penalty(images, output, center = 0.):
    batch_size = images.shape[0]

    gradients = torch_grad(
        outputs = output,
        inputs = images,
        grad_outputs = torch.ones(output.size(), device = images.device),
        create_graph = True,
        retain_graph = True,
        only_inputs = True
    )[0]

    gradients = gradients.reshape(batch_size, -1)
    return ((gradients.norm(2, dim = 1) - center) ** 2).mean()


def hinge_discr_loss(fake, real):
    return (F.relu(1 + fake) + F.relu(1 - real)).mean()


def hinge_gen_loss(fake):
    return -fake.mean()


def grad_layer_wrt_loss(
    loss: Tensor,
    layer: nn.Parameter
):
    return torch_grad(
        outputs = loss,
        inputs = layer,
        grad_outputs = torch.ones_like(loss),
        retain_graph = True
    )[0].detach()


LossBreakdown = namedtuple('LossBreakdown', ['recon_loss', 'perceptual_loss', 'adversarial_gen_loss', 'adaptive_adversarial_weight'])

DiscrLossBreakdown = namedtuple('DiscrLossBreakdown', ['discr_loss', 'gradient_penalty'])


class ConvOut(Module):
    def __init__(self, dim, channels):
        super().__init__()
        self.conv = nn.Conv3d(dim, channels, 3, padding = 1)

    def forward(self, x):
        return self.conv(x)


class VideoTokenizer(Module):
    def __init__(self, channels = 3, dim = 4, use_vgg = True, grad_penalty_loss_weight = 10., perceptual_loss_weight = 1., adversarial_loss_weight = 0.1):
        super().__init__()
        self.conv_in = nn.Conv3d(channels, dim, 3, padding = 1)
        self.conv_out = ConvOut(dim, channels)

        self.discr = nn.Sequential(nn.Conv2d(channels, 4, 3, padding = 1), nn.LeakyReLU(0.1), nn.Conv2d(4, 1, 4))
        self.has_gan = True

        self.use_vgg = use_vgg
        self.vgg = nn.Conv2d(3, 4, 3, padding = 1).requires_grad_(False)

        self.grad_penalty_loss_weight = grad_penalty_loss_weight
        self.perceptual_loss_weight = perceptual_loss_weight
        self.adversarial_loss_weight = adversarial_loss_weight

        self.register_buffer('zero', torch.tensor(0.), persistent = False)

    def forward(
        self,
        video,
        return_loss = False,
        return_discr_loss = False,
        apply_gradient_penalty = True
    ):
        batch, channels, frames = video.shape[:3]

        recon_video = self.conv_out(torch.tanh(self.conv_in(video)))

        if not (return_loss or return_discr_loss):
            return recon_video

        recon_loss = F.mse_loss(video, recon_video)

        if return_discr_loss:
            assert self.has_gan

            frame_indices = torch.randn((batch, frames)).topk(1, dim = -1).indices

            real = pick_video_frame(video, frame_indices)

            if apply_gradient_penalty:
                real = real.requires_grad_()

            fake = pick_video_frame(recon_video, frame_indices).detach()

            if apply_gradient_penalty:
                fake = fake.requires_grad_()

            real_logits = self.discr(real)
            fake_logits = self.discr(fake)

            discr_loss = hinge_discr_loss(fake_logits, real_logits)

            if apply_gradient_penalty:
                gradient_penalty_loss = gradient_penalty(real, real_logits) + gradient_penalty(fake, fake_logits)
            else:
                gradient_penalty_loss = self.zero

            total_loss = discr_loss + gradient_penalty_loss * self.grad_penalty_loss_weight

            return total_loss, DiscrLossBreakdown(discr_loss, gradient_penalty_loss)

        if self.use_vgg:
            frame_indices = torch.randn((batch, frames)).topk(1, dim = -1).indices

            input_vgg_input = pick_video_frame(video, frame_indices)
            recon_vgg_input = pick_video_frame(recon_video, frame_indices)

            input_vgg_feats = self.vgg(input_vgg_input)
            recon_vgg_feats = self.vgg(recon_vgg_input)

            perceptual_loss = F.mse_loss(input_vgg_feats, recon_vgg_feats)
        else:
            perceptual_loss = self.zero

        last_dec_layer = self.conv_out.conv.weight

        norm_grad_wrt_perceptual_loss = None

        if self.training and self.use_vgg and self.has_gan:
            norm_grad_wrt_perceptual_loss = grad_layer_wrt_loss(perceptual_loss, last_dec_layer).norm(p = 2)

        if self.has_gan:
            frame_indices = torch.randn((batch, frames)).topk(1, dim = -1).indices
            recon_video_frames = pick_video_frame(recon_video, frame_indices)

            fake_logits = self.discr(recon_video_frames)
            gen_loss = hinge_gen_loss(fake_logits)

            adaptive_weight = 1.

            if exists(norm_grad_wrt_perceptual_loss):
                norm_grad_wrt_gen_loss = grad_layer_wrt_loss(gen_loss, last_dec_layer).norm(p = 2)
                adaptive_weight = norm_grad_wrt_perceptual_loss / norm_grad_wrt_gen_loss.clamp(min = 1e-3)
                adaptive_weight.clamp_(max = 1e3)

                if torch.isnan(adaptive_weight).any():
                    adaptive_weight = 1.
        else:
            gen_loss = self.zero
            adaptive_weight = 0.

        total_loss = recon_loss + \
            perceptual_loss * self.perceptual_loss_weight + \
            gen_loss * adaptive_weight * self.adversarial_loss_weight

        return total_loss, LossBreakdown(recon_loss, perceptual_loss, gen_loss, adaptive_weight)


def train_step(tokenizer, video):
    tokenizer = torch.compile(tokenizer)
    discr_loss, _ = tokenizer(video, return_discr_loss = True)
    loss, _ = tokenizer(video, return_loss = True)
    return loss, discr_loss


def make():
    torch.manual_seed(0)
    video = torch.randn(2, 3, 3, 4, 4)
    return VideoTokenizer(), [(video,), (video, True), (video, False, True), (video, False, True, False)]
