"""SimCLR (Spijkervet) training forward: two views through encoder + projector, then NT-Xent built from a precomputed boolean mask (`sim[self.mask].reshape(N, -1)`), positive diagonals via `torch.diag(sim, +-B)`, and a summed cross-entropy.

Source: Spijkervet/SimCLR@2738efae85b3ca1b70b7919c5d7a7837d9d75235:simclr/modules/nt_xent.py:1-52
Also: simclr/simclr.py:8-35 (SimCLR), simclr/modules/identity.py (Identity),
simclr/modules/gather.py (GatherLayer, only on the world_size > 1 path) and the
step in main.py:34-36 (`h_i, h_j, z_i, z_j = model(x_i, x_j)`; `loss = criterion(z_i, z_j)`).
Kept: NT_Xent verbatim (mask_correlated_samples loop at init, the world_size
branch, CosineSimilarity on broadcast views), SimCLR verbatim (fc replaced by
Identity, projector MLP), the two lines of the training step in a function the
user compiles (backward/step outside).
Simplified: torchvision resnet18 (get_resnet) is a tiny conv encoder with an
`fc` layer; batch 4, projection_dim 8, 12x12 images, world_size 1.
"""
import torch
import torch.nn as nn
import torch.distributed as dist


class GatherLayer(torch.autograd.Function):
    """Gather tensors from all process, supporting backward propagation."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        output = [torch.zeros_like(input) for _ in range(dist.get_world_size())]
        dist.all_gather(output, input)
        return tuple(output)

    @staticmethod
    def backward(ctx, *grads):
        (input,) = ctx.saved_tensors
        grad_out = torch.zeros_like(input)
        grad_out[:] = grads[dist.get_rank()]
        return grad_out


class Identity(nn.Module):
    def __init__(self):
        super(Identity, self).__init__()

    def forward(self, x):
        return x


class NT_Xent(nn.Module):
    def __init__(self, batch_size, temperature, world_size):
        super(NT_Xent, self).__init__()
        self.batch_size = batch_size
        self.temperature = temperature
        self.world_size = world_size

        self.mask = self.mask_correlated_samples(batch_size, world_size)
        self.criterion = nn.CrossEntropyLoss(reduction="sum")
        self.similarity_f = nn.CosineSimilarity(dim=2)

    def mask_correlated_samples(self, batch_size, world_size):
        N = 2 * batch_size * world_size
        mask = torch.ones((N, N), dtype=bool)
        mask = mask.fill_diagonal_(0)
        for i in range(batch_size * world_size):
            mask[i, batch_size * world_size + i] = 0
            mask[batch_size * world_size + i, i] = 0
        return mask

    def forward(self, z_i, z_j):
        """
        We do not sample negative examples explicitly.
        Instead, given a positive pair, similar to (Chen et al., 2017), we treat the other 2(N − 1) augmented examples within a minibatch as negative examples.
        """
        N = 2 * self.batch_size * self.world_size

        if self.world_size > 1:
            z_i = torch.cat(GatherLayer.apply(z_i), dim=0)
            z_j = torch.cat(GatherLayer.apply(z_j), dim=0)
        z = torch.cat((z_i, z_j), dim=0)

        sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature

        sim_i_j = torch.diag(sim, self.batch_size * self.world_size)
        sim_j_i = torch.diag(sim, -self.batch_size * self.world_size)

        # We have 2N samples, but with Distributed training every GPU gets N examples too, resulting in: 2xNxN
        positive_samples = torch.cat((sim_i_j, sim_j_i), dim=0).reshape(N, 1)
        negative_samples = sim[self.mask].reshape(N, -1)

        labels = torch.zeros(N).to(positive_samples.device).long()
        logits = torch.cat((positive_samples, negative_samples), dim=1)
        loss = self.criterion(logits, labels)
        loss /= N
        return loss


class SimCLR(nn.Module):
    """
    We opt for simplicity and adopt the commonly used ResNet (He et al., 2016) to obtain hi = f(x ̃i) = ResNet(x ̃i) where hi ∈ Rd is the output after the average pooling layer.
    """

    def __init__(self, encoder, projection_dim, n_features):
        super(SimCLR, self).__init__()

        self.encoder = encoder
        self.n_features = n_features

        # Replace the fc layer with an Identity function
        self.encoder.fc = Identity()

        # We use a MLP with one hidden layer to obtain z_i = g(h_i) = W(2)σ(W(1)h_i) where σ is a ReLU non-linearity.
        self.projector = nn.Sequential(
            nn.Linear(self.n_features, self.n_features, bias=False),
            nn.ReLU(),
            nn.Linear(self.n_features, projection_dim, bias=False),
        )

    def forward(self, x_i, x_j):
        h_i = self.encoder(x_i)
        h_j = self.encoder(x_j)

        z_i = self.projector(h_i)
        z_j = self.projector(h_j)
        return h_i, h_j, z_i, z_j


class TinyResNet(nn.Module):
    """Stand-in for torchvision.models.resnet18(pretrained=False)."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def get_resnet(name, pretrained=False):
    return TinyResNet()


def train_forward(model, criterion, x_i, x_j):
    # positive pair, with encoding
    h_i, h_j, z_i, z_j = model(x_i, x_j)

    loss = criterion(z_i, z_j)
    return loss


compiled_train_forward = torch.compile(train_forward)


def make():
    torch.manual_seed(0)
    encoder = get_resnet("resnet18", pretrained=False)
    n_features = encoder.fc.in_features  # get dimensions of fc layer
    model = SimCLR(encoder, 8, n_features)
    model.train()
    criterion = NT_Xent(4, 0.5, 1)
    x_i = torch.randn(4, 3, 12, 12)
    x_j = torch.randn(4, 3, 12, 12)
    return train_forward, [(model, criterion, x_i, x_j)]
