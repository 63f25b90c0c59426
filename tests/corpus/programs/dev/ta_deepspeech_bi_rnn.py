"""torchaudio DeepSpeech: three FullyConnected layers then a bidirectional nn.RNN.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/deepspeech.py:6-84
Kept: FullyConnected (relu, hardtanh clip, training-gated dropout), the
squeeze/transpose to T x N x H, `self.bi_rnn`, the forward+backward sum,
fc4/out and log_softmax.
Simplified: n_feature 6, n_hidden 8, 5 classes.
"""
import torch


class FullyConnected(torch.nn.Module):
    def __init__(self, n_feature: int, n_hidden: int, dropout: float, relu_max_clip: int = 20) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(n_feature, n_hidden, bias=True)
        self.relu_max_clip = relu_max_clip
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        x = torch.nn.functional.relu(x)
        x = torch.nn.functional.hardtanh(x, 0, self.relu_max_clip)
        if self.dropout:
            x = torch.nn.functional.dropout(x, self.dropout, self.training)
        return x


class DeepSpeech(torch.nn.Module):
    def __init__(self, n_feature: int = 6, n_hidden: int = 8, n_class: int = 5, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_hidden = n_hidden
        self.fc1 = FullyConnected(n_feature, n_hidden, dropout)
        self.fc2 = FullyConnected(n_hidden, n_hidden, dropout)
        self.fc3 = FullyConnected(n_hidden, n_hidden, dropout)
        self.bi_rnn = torch.nn.RNN(n_hidden, n_hidden, num_layers=1, nonlinearity="relu", bidirectional=True)
        self.fc4 = FullyConnected(n_hidden, n_hidden, dropout)
        self.out = torch.nn.Linear(n_hidden, n_class)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc1(x)
        x = self.fc2(x)
        x = self.fc3(x)
        x = x.squeeze(1)
        x = x.transpose(0, 1)
        x, _ = self.bi_rnn(x)
        x = x[:, :, : self.n_hidden] + x[:, :, self.n_hidden :]
        x = self.fc4(x)
        x = self.out(x)
        x = x.permute(1, 0, 2)
        x = torch.nn.functional.log_softmax(x, dim=2)
        return x


model = DeepSpeech().eval()
model = torch.compile(model)


def make():
    torch.manual_seed(0)
    return DeepSpeech().eval(), [(torch.randn(2, 1, 5, 6),)]
