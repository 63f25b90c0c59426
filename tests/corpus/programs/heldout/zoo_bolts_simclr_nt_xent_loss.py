"""Lightning-Bolts SimCLR shared_step: two views through a ResNet stand-in (which returns a list) and the BN projection head, then nt_xent_loss with the distributed-or-not switch, the legacy `Tensor(neg.shape).fill_(math.e ** (1 / temperature))` row subtraction and a clamp.

Source: Lightning-Universe/lightning-bolts@34958a8892d42714edf02ba896fd5861ebb3cb7e:src/pl_bolts/models/self_supervised/simclr/simclr_module.py:22-158,223-258
Kept: SyncFunction, Projection, SimCLR's constructor plumbing (init_model's
arch switch, projection sizes, train_iters_per_epoch), forward (`[-1]` of the
encoder's list), shared_step (the stl10 unlabeled-batch switch, tuple unpacking)
and nt_xent_loss verbatim.
Simplified: LightningModule -> nn.Module (no save_hyperparameters / self.log,
@under_review dropped); bolts' resnet18/resnet50 are a small conv stand-in that
returns a list of feature maps; the compiled entry is the bound shared_step;
hidden_mlp 16, feat_dim 8, 8x8 images.
"""
import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class _TinyResNet(nn.Module):
    """Stand-in for pl_bolts' resnet: returns [pooled features] like return_all_feature_maps=False."""
    def __init__(self, first_conv=True, maxpool1=True, return_all_feature_maps=False, width=16):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, stride=2 if first_conv else 1, padding=1)
        self.pool = nn.MaxPool2d(2) if maxpool1 else nn.Identity()
        self.return_all_feature_maps = return_all_feature_maps

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        return [torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)]


def resnet18(**kwargs):
    return _TinyResNet(**kwargs)


def resnet50(**kwargs):
    return _TinyResNet(**kwargs)


class SyncFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        ctx.batch_size = tensor.shape[0]

        gathered_tensor = [torch.zeros_like(tensor) for _ in range(torch.distributed.get_world_size())]

        torch.distributed.all_gather(gathered_tensor, tensor)
        return torch.cat(gathered_tensor, 0)

    @staticmethod
    def backward(ctx, grad_output):
        grad_input = grad_output.clone()
        torch.distributed.all_reduce(grad_input, op=torch.distributed.ReduceOp.SUM, async_op=False)

        idx_from = torch.distributed.get_rank() * ctx.batch_size
        idx_to = (torch.distributed.get_rank() + 1) * ctx.batch_size
        return grad_input[idx_from:idx_to]


class Projection(nn.Module):
    def __init__(self, input_dim=2048, hidden_dim=2048, output_dim=128) -> None:
        super().__init__()
        self.output_dim = output_dim
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim

        self.model = nn.Sequential(
            nn.Linear(self.input_dim, self.hidden_dim),
            nn.BatchNorm1d(self.hidden_dim),
            nn.ReLU(),
            nn.Linear(self.hidden_dim, self.output_dim, bias=False),
        )

    def forward(self, x):
        x = self.model(x)
        return F.normalize(x, dim=1)


class SimCLR(nn.Module):
    def __init__(
        self,
        gpus: int,
        num_samples: int,
        batch_size: int,
        dataset: str,
        num_nodes: int = 1,
        arch: str = "resnet50",
        hidden_mlp: int = 2048,
        feat_dim: int = 128,
        warmup_epochs: int = 10,
        max_epochs: int = 100,
        temperature: float = 0.1,
        first_conv: bool = True,
        maxpool1: bool = True,
        optimizer: str = "adam",
        exclude_bn_bias: bool = False,
        start_lr: float = 0.0,
        learning_rate: float = 1e-3,
        final_lr: float = 0.0,
        weight_decay: float = 1e-6,
        **kwargs,
    ) -> None:
        """
        Args:
            batch_size: the batch size
            num_samples: num samples in the dataset
            warmup_epochs: epochs to warmup the lr for
            lr: the optimizer learning rate
            opt_weight_decay: the optimizer weight decay
            loss_temperature: the loss temperature
        """
        super().__init__()

        self.gpus = gpus
        self.num_nodes = num_nodes
        self.arch = arch
        self.dataset = dataset
        self.num_samples = num_samples
        self.batch_size = batch_size

        self.hidden_mlp = hidden_mlp
        self.feat_dim = feat_dim
        self.first_conv = first_conv
        self.maxpool1 = maxpool1

        self.optim = optimizer
        self.exclude_bn_bias = exclude_bn_bias
        self.weight_decay = weight_decay
        self.temperature = temperature

        self.start_lr = start_lr
        self.final_lr = final_lr
        self.learning_rate = learning_rate
        self.warmup_epochs = warmup_epochs
        self.max_epochs = max_epochs

        self.encoder = self.init_model()

        self.projection = Projection(input_dim=self.hidden_mlp, hidden_dim=self.hidden_mlp, output_dim=self.feat_dim)

        # compute iters per epoch
        global_batch_size = self.num_nodes * self.gpus * self.batch_size if self.gpus > 0 else self.batch_size
        self.train_iters_per_epoch = self.num_samples // global_batch_size

    def init_model(self):
        if self.arch == "resnet18":
            backbone = resnet18
        elif self.arch == "resnet50":
            backbone = resnet50

        return backbone(first_conv=self.first_conv, maxpool1=self.maxpool1, return_all_feature_maps=False)

    def forward(self, x):
        # bolts resnet returns a list
        return self.encoder(x)[-1]

    def shared_step(self, batch):
        if self.dataset == "stl10":
            unlabeled_batch = batch[0]
            batch = unlabeled_batch

        # final image in tuple is for online eval
        (img1, img2, _), y = batch

        # get h representations, bolts resnet returns a list
        h1 = self(img1)
        h2 = self(img2)

        # get z representations
        z1 = self.projection(h1)
        z2 = self.projection(h2)

        return self.nt_xent_loss(z1, z2, self.temperature)

    def nt_xent_loss(self, out_1, out_2, temperature, eps=1e-6):
        """
        assume out_1 and out_2 are normalized
        out_1: [batch_size, dim]
        out_2: [batch_size, dim]
        """
        # gather representations in case of distributed training
        # out_1_dist: [batch_size * world_size, dim]
        # out_2_dist: [batch_size * world_size, dim]
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            out_1_dist = SyncFunction.apply(out_1)
            out_2_dist = SyncFunction.apply(out_2)
        else:
            out_1_dist = out_1
            out_2_dist = out_2

        # out: [2 * batch_size, dim]
        # out_dist: [2 * batch_size * world_size, dim]
        out = torch.cat([out_1, out_2], dim=0)
        out_dist = torch.cat([out_1_dist, out_2_dist], dim=0)

        # cov and sim: [2 * batch_size, 2 * batch_size * world_size]
        # neg: [2 * batch_size]
        cov = torch.mm(out, out_dist.t().contiguous())
        sim = torch.exp(cov / temperature)
        neg = sim.sum(dim=-1)

        # from each row, subtract e^(1/temp) to remove similarity measure for x1.x1
        row_sub = Tensor(neg.shape).fill_(math.e ** (1 / temperature)).to(neg.device)
        neg = torch.clamp(neg - row_sub, min=eps)  # clamp for numerical stability

        # Positive similarity, pos becomes [2 * batch_size]
        pos = torch.exp(torch.sum(out_1 * out_2, dim=-1) / temperature)
        pos = torch.cat([pos, pos], dim=0)

        return -torch.log(pos / (neg + eps)).mean()


def build_model(dataset="cifar10"):
    return SimCLR(gpus=0, num_samples=64, batch_size=4, dataset=dataset, arch="resnet18",
                  hidden_mlp=16, feat_dim=8, first_conv=False, maxpool1=True)


model = build_model()
shared_step = torch.compile(model.shared_step)


def make():
    torch.manual_seed(0)
    net = build_model()
    img1, img2, img3 = torch.randn(4, 3, 8, 8), torch.randn(4, 3, 8, 8), torch.randn(4, 3, 8, 8)
    y = torch.tensor([0, 1, 2, 3])
    return net.shared_step, [(((img1, img2, img3), y),), (((img2, img1, img3), y),)]
