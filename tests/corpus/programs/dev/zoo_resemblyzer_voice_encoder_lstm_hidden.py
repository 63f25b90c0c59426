"""Resemblyzer's VoiceEncoder.forward: a batch-first `nn.LSTM` whose final hidden state of the last layer becomes a ReLU'd, L2-normalised speaker embedding.

Source: resemble-ai/Resemblyzer@0fe931fbb94da55d2c7c2a8ec2246a9c59a7c8d1:resemblyzer/voice_encoder.py:11-65
Also: resemblyzer/hparams.py (mel_n_channels, model_hidden_size, model_num_layers,
model_embedding_size as module-level constants pulled in by a star import).
Kept: the constructor's network definition and device selection, forward verbatim
(`_, (hidden, _) = self.lstm(mels)` then `hidden[-1]`).
Simplified: no pretrained checkpoint load (weights are seeded), no timing print;
hyper-parameters shrunk (40 mels -> 8, 256 hidden -> 16, 3 layers -> 2).
"""
from typing import Union

import torch
from torch import nn

# resemblyzer/hparams.py (shrunk)
mel_n_channels = 8
model_hidden_size = 16
model_embedding_size = 16
model_num_layers = 2


class VoiceEncoder(nn.Module):
    def __init__(self, device: Union[str, torch.device] = None, verbose=True):
        super().__init__()

        # Define the network
        self.lstm = nn.LSTM(mel_n_channels, model_hidden_size, model_num_layers, batch_first=True)
        self.linear = nn.Linear(model_hidden_size, model_embedding_size)
        self.relu = nn.ReLU()

        # Get the target device
        if device is None:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        elif isinstance(device, str):
            device = torch.device(device)
        self.device = device
        self.to(device)

    def forward(self, mels: torch.FloatTensor):
        """
        Computes the embeddings of a batch of utterance spectrograms.

        :param mels: a batch of mel spectrograms of same duration as a float32 tensor of shape
        (batch_size, n_frames, n_channels)
        :return: the embeddings as a float 32 tensor of shape (batch_size, embedding_size).
        """
        # Pass the input through the LSTM layers and retrieve the final hidden state of the last
        # layer. Apply a cutoff to 0 for negative values and L2 normalize the embeddings.
        _, (hidden, _) = self.lstm(mels)
        embeds_raw = self.relu(self.linear(hidden[-1]))
        return embeds_raw / torch.norm(embeds_raw, dim=1, keepdim=True)


encoder = torch.compile(VoiceEncoder("cpu", verbose=False))


def make():
    torch.manual_seed(0)
    model = VoiceEncoder("cpu", verbose=False)
    mels = torch.randn(3, 10, mel_n_channels)
    return model, [(mels,), (mels[:1, :6],)]
