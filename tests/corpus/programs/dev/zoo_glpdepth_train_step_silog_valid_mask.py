"""GLPDepth training step: per-step LR schedule on a `global global_step`, SiLogLoss over `target[valid_mask]`, `loss_d.item()` into an AverageMeter, backward, optimizer step.

Source: vinvino02/GLPDepth@288979209509ba3a6aa65cc29e5fcae561e05d85:code/train.py:train
Model: vinvino02/GLPDepth@7f3c78df4ecd6e7c79fd0c4b73c95d61f4aa2121:code/models/model.py; loss: code/utils/criterion.py
Kept: the body of train() for one batch (global_step increment, the
`global_step < 2019 * half_epoch` LR warmup/decay written into
optimizer.param_groups, model forward returning {'pred_d': ...},
zero_grad, criterion on `preds['pred_d'].squeeze()`, depth_loss.update with
`.item()`, backward, step); GLPDepth with its Decoder and
SelectiveFeatureFusion; SiLogLoss with the boolean valid mask.
Simplified: the MiT-b4 encoder is a 4-stage strided-conv stand-in (strides
4/8/16/32); channels shrunk ([32, 20, 16] -> 8); no progress bar; 64x64
images, batch 2; the batch dict is passed as two tensors.
"""
import torch
import torch.nn as nn
import torch.optim as optim


class SiLogLoss(nn.Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, pred, target):
        valid_mask = (target > 0).detach()
        diff_log = torch.log(target[valid_mask]) - torch.log(pred[valid_mask])
        loss = torch.sqrt(torch.pow(diff_log, 2).mean() -
                          self.lambd * torch.pow(diff_log.mean(), 2))

        return loss


class AverageMeter(object):
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class MiTStandIn(nn.Module):
    """Stand-in for mit_b4: four feature maps at strides 4, 8, 16, 32."""

    def __init__(self, dims=(8, 16, 20, 32)):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), nn.GELU())
        self.stage2 = nn.Sequential(nn.Conv2d(dims[0], dims[1], 2, 2), nn.GELU())
        self.stage3 = nn.Sequential(nn.Conv2d(dims[1], dims[2], 2, 2), nn.GELU())
        self.stage4 = nn.Sequential(nn.Conv2d(dims[2], dims[3], 2, 2), nn.GELU())

    def forward(self, x):
        c1 = self.stage1(x)
        c2 = self.stage2(c1)
        c3 = self.stage3(c2)
        c4 = self.stage4(c3)
        return [c1, c2, c3, c4]


class GLPDepth(nn.Module):
    def __init__(self, max_depth=10.0, is_train=False):
        super().__init__()
        self.max_depth = max_depth

        self.encoder = MiTStandIn()
        channels_in = [32, 20, 16]
        channels_out = 8

        self.decoder = Decoder(channels_in, channels_out)

        self.last_layer_depth = nn.Sequential(
            nn.Conv2d(channels_out, channels_out, kernel_size=3, stride=1, padding=1),
            nn.ReLU(inplace=False),
            nn.Conv2d(channels_out, 1, kernel_size=3, stride=1, padding=1))

    def forward(self, x):
        conv1, conv2, conv3, conv4 = self.encoder(x)
        out = self.decoder(conv1, conv2, conv3, conv4)
        out_depth = self.last_layer_depth(out)
        out_depth = torch.sigmoid(out_depth) * self.max_depth

        return {'pred_d': out_depth}


class Decoder(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()

        self.bot_conv = nn.Conv2d(
            in_channels=in_channels[0], out_channels=out_channels, kernel_size=1)
        self.skip_conv1 = nn.Conv2d(
            in_channels=in_channels[1], out_channels=out_channels, kernel_size=1)
        self.skip_conv2 = nn.Conv2d(
            in_channels=in_channels[2], out_channels=out_channels, kernel_size=1)

        self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=False)

        self.fusion1 = SelectiveFeatureFusion(out_channels)
        self.fusion2 = SelectiveFeatureFusion(out_channels)
        self.fusion3 = SelectiveFeatureFusion(out_channels)

    def forward(self, x_1, x_2, x_3, x_4):
        x_4_ = self.bot_conv(x_4)
        out = self.up(x_4_)

        x_3_ = self.skip_conv1(x_3)
        out = self.fusion1(x_3_, out)
        out = self.up(out)

        x_2_ = self.skip_conv2(x_2)
        out = self.fusion2(x_2_, out)
        out = self.up(out)

        out = self.fusion3(x_1, out)
        out = self.up(out)
        out = self.up(out)

        return out


class SelectiveFeatureFusion(nn.Module):
    def __init__(self, in_channel=64):
        super().__init__()

        self.conv1 = nn.Sequential(
            nn.Conv2d(in_channels=int(in_channel*2),
                      out_channels=in_channel, kernel_size=3, stride=1, padding=1),
            nn.BatchNorm2d(in_channel),
            nn.ReLU())

        self.conv2 = nn.Sequential(
            nn.Conv2d(in_channels=in_channel,
                      out_channels=int(in_channel / 2), kernel_size=3, stride=1, padding=1),
            nn.BatchNorm2d(int(in_channel / 2)),
            nn.ReLU())

        self.conv3 = nn.Conv2d(in_channels=int(in_channel / 2),
                               out_channels=2, kernel_size=3, stride=1, padding=1)

        self.sigmoid = nn.Sigmoid()

    def forward(self, x_local, x_global):
        x = torch.cat((x_local, x_global), dim=1)
        x = self.conv1(x)
        x = self.conv2(x)
        x = self.conv3(x)
        attn = self.sigmoid(x)

        out = x_local * attn[:, 0, :, :].unsqueeze(1) + \
              x_global * attn[:, 1, :, :].unsqueeze(1)

        return out


global_step = 0


class Args:
    epochs = 2
    lr = 1e-4


@torch.compile
def train_step(model, criterion_d, optimizer, depth_loss, input_RGB, depth_gt, args):
    global global_step
    half_epoch = args.epochs // 2
    global_step += 1

    for param_group in optimizer.param_groups:
        if global_step < 2019 * half_epoch:
            current_lr = (1e-4 - 3e-5) * (global_step /
                                          2019/half_epoch) ** 0.9 + 3e-5
        else:
            current_lr = (3e-5 - 1e-4) * (global_step /
                                          2019/half_epoch - 1) ** 0.9 + 1e-4
        param_group['lr'] = current_lr

    preds = model(input_RGB)

    optimizer.zero_grad()
    loss_d = criterion_d(preds['pred_d'].squeeze(), depth_gt)
    depth_loss.update(loss_d.item(), input_RGB.size(0))
    loss_d.backward()
    optimizer.step()

    return loss_d


def make():
    torch.manual_seed(0)
    model = GLPDepth(max_depth=10.0, is_train=True)
    model.train()
    criterion_d = SiLogLoss()
    optimizer = optim.Adam(model.parameters(), Args.lr)
    depth_loss = AverageMeter()
    images = torch.randn(2, 3, 64, 64)
    depth_gt = torch.rand(2, 64, 64) * 10.0
    depth_gt[:, :8, :] = 0.0                    # invalid (no lidar return) rows
    return train_step._torchdynamo_orig_callable, [
        (model, criterion_d, optimizer, depth_loss, images, depth_gt, Args),
    ]
