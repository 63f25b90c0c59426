"""kuangliu/pytorch-cifar's train(epoch) compiled whole: per batch `loss.backward()`, `optimizer.step()`, `train_loss += loss.item()` and `correct += predicted.eq(targets).sum().item()` over module-level net/optimizer/loader globals.

Source: kuangliu/pytorch-cifar@49b7aa97b0c12fe0d4054e670403a16b6b834ddd:main.py:86-113
Also: models/lenet.py (LeNet).
Kept: train() verbatim apart from the progress bar (globals net, trainloader,
optimizer, criterion, device; the running loss/accuracy bookkeeping), the
criterion/optimizer construction, LeNet verbatim.
Simplified: the CIFAR10 DataLoader is a list of two random batches of 2
images; progress_bar (which reads the terminal width and wall-clock time) is
dropped and train() returns the running totals; no scheduler or checkpoints.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1   = nn.Linear(16*5*5, 120)
        self.fc2   = nn.Linear(120, 84)
        self.fc3   = nn.Linear(84, 10)

    def forward(self, x):
        out = F.relu(self.conv1(x))
        out = F.max_pool2d(out, 2)
        out = F.relu(self.conv2(out))
        out = F.max_pool2d(out, 2)
        out = out.view(out.size(0), -1)
        out = F.relu(self.fc1(out))
        out = F.relu(self.fc2(out))
        out = self.fc3(out)
        return out


device = 'cuda' if torch.cuda.is_available() else 'cpu'
net = None
trainloader = []
criterion = nn.CrossEntropyLoss()
optimizer = None


def setup():
    global net, trainloader, optimizer
    net = LeNet()
    net = net.to(device)
    trainloader = [(torch.randn(2, 3, 32, 32), torch.tensor([3, 7])),
                   (torch.randn(2, 3, 32, 32), torch.tensor([1, 1]))]
    optimizer = optim.SGD(net.parameters(), lr=0.1,
                          momentum=0.9, weight_decay=5e-4)


# Training
@torch.compile
def train(epoch):
    print('\nEpoch: %d' % epoch)
    net.train()
    train_loss = 0
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()

        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()

    return train_loss, correct, total


def make():
    torch.manual_seed(0)
    setup()
    return train._torchdynamo_orig_callable, [(0,), (1,)]
