"""SimSiam training forward: the encoder's fc is wrapped into a 3-layer BN projector at init (`self.encoder.fc[6].bias.requires_grad = False`), a 2-layer predictor, stop-gradient targets via `.detach()`, and the negative cosine loss with keyword model call.

Source: facebookresearch/simsiam@a7bc1772896d0dad0806c51f0bb6f3b16d290468:simsiam/builder.py:11-61
Also: main_simsiam.py:152-154 (model construction from `models.__dict__[args.arch]`),
main_simsiam.py:191 (criterion) and main_simsiam.py:294-295 (the loss lines).
Kept: SimSiam verbatim; the two lines of the training loop in a function the
user compiles (`p1, p2, z1, z2 = model(x1=images[0], x2=images[1])`, the
symmetric `-(criterion(...).mean() + ...) * 0.5`); backward/step outside.
Simplified: torchvision resnet50 is a tiny ResNet-shaped encoder taking
`num_classes` / `zero_init_residual` and exposing `fc`; dim 16, pred_dim 8,
batch 4, 12x12 images.
"""
import torch
import torch.nn as nn


class SimSiam(nn.Module):
    """
    Build a SimSiam model.
    """
    def __init__(self, base_encoder, dim=2048, pred_dim=512):
        """
        dim: feature dimension (default: 2048)
        pred_dim: hidden dimension of the predictor (default: 512)
        """
        super(SimSiam, self).__init__()

        # create the encoder
        # num_classes is the output fc dimension, zero-initialize last BNs
        self.encoder = base_encoder(num_classes=dim, zero_init_residual=True)

        # build a 3-layer projector
        prev_dim = self.encoder.fc.weight.shape[1]
        self.encoder.fc = nn.Sequential(nn.Linear(prev_dim, prev_dim, bias=False),
                                        nn.BatchNorm1d(prev_dim),
                                        nn.ReLU(inplace=True), # first layer
                                        nn.Linear(prev_dim, prev_dim, bias=False),
                                        nn.BatchNorm1d(prev_dim),
                                        nn.ReLU(inplace=True), # second layer
                                        self.encoder.fc,
                                        nn.BatchNorm1d(dim, affine=False)) # output layer
        self.encoder.fc[6].bias.requires_grad = False # hack: not use bias as it is followed by BN

        # build a 2-layer predictor
        self.predictor = nn.Sequential(nn.Linear(dim, pred_dim, bias=False),
                                        nn.BatchNorm1d(pred_dim),
                                        nn.ReLU(inplace=True), # hidden layer
                                        nn.Linear(pred_dim, dim)) # output layer

    def forward(self, x1, x2):
        """
        Input:
            x1: first views of images
            x2: second views of images
        Output:
            p1, p2, z1, z2: predictors and targets of the network
            See Sec. 3 of https://arxiv.org/abs/2011.10566 for detailed notations
        """

        # compute features for one view
        z1 = self.encoder(x1) # NxC
        z2 = self.encoder(x2) # NxC

        p1 = self.predictor(z1) # NxC
        p2 = self.predictor(z2) # NxC

        return p1, p2, z1.detach(), z2.detach()


class TinyResNet(nn.Module):
    """Stand-in for torchvision.models.resnet50(num_classes=dim, zero_init_residual=True)."""

    def __init__(self, num_classes=1000, zero_init_residual=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)
        if zero_init_residual:
            nn.init.constant_(self.bn1.weight, 1)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


models = {'resnet50': TinyResNet}


def train_forward(model, criterion, images):
    # compute output and loss
    p1, p2, z1, z2 = model(x1=images[0], x2=images[1])
    loss = -(criterion(p1, z2).mean() + criterion(p2, z1).mean()) * 0.5
    return loss


compiled_train_forward = torch.compile(train_forward)


def make():
    torch.manual_seed(0)
    model = SimSiam(models['resnet50'], 16, 8)
    model.train()
    criterion = nn.CosineSimilarity(dim=1)
    images = [torch.randn(4, 3, 12, 12), torch.randn(4, 3, 12, 12)]
    return train_forward, [(model, criterion, images)]
