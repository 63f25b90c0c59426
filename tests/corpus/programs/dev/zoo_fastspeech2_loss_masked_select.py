"""FastSpeech2 training loss: targets get `requires_grad = False` assigned, then every prediction/target pair is reduced with `masked_select` under the inverted source/mel masks before the MAE/MSE terms.

Source: ming024/FastSpeech2@d4e79eb52e8b01d24703b2dfc0385544092958f3:model/loss.py:1-92
Kept: FastSpeech2Loss verbatim (the batch tuple `inputs[6:]` unpacking, the
10-tuple of predictions, the feature-level branches from the preprocess
config, the 6-tuple return).
Simplified: 4 mel bins, batch of 2; the batch/prediction tuples are built in
make() the way train.py passes them (`Loss(batch, output)`).
"""
import torch
import torch.nn as nn


PREPROCESS_CONFIG = {
    "preprocessing": {
        "pitch": {"feature": "phoneme_level", "normalization": True},
        "energy": {"feature": "phoneme_level", "normalization": True},
    },
}


class FastSpeech2Loss(nn.Module):
    """ FastSpeech2 Loss """

    def __init__(self, preprocess_config, model_config):
        super(FastSpeech2Loss, self).__init__()
        self.pitch_feature_level = preprocess_config["preprocessing"]["pitch"][
            "feature"
        ]
        self.energy_feature_level = preprocess_config["preprocessing"]["energy"][
            "feature"
        ]
        self.mse_loss = nn.MSELoss()
        self.mae_loss = nn.L1Loss()

    def forward(self, inputs, predictions):
        (
            mel_targets,
            _,
            _,
            pitch_targets,
            energy_targets,
            duration_targets,
        ) = inputs[6:]
        (
            mel_predictions,
            postnet_mel_predictions,
            pitch_predictions,
            energy_predictions,
            log_duration_predictions,
            _,
            src_masks,
            mel_masks,
            _,
            _,
        ) = predictions
        src_masks = ~src_masks
        mel_masks = ~mel_masks
        log_duration_targets = torch.log(duration_targets.float() + 1)
        mel_targets = mel_targets[:, : mel_masks.shape[1], :]
        mel_masks = mel_masks[:, :mel_masks.shape[1]]

        log_duration_targets.requires_grad = False
        pitch_targets.requires_grad = False
        energy_targets.requires_grad = False
        mel_targets.requires_grad = False

        if self.pitch_feature_level == "phoneme_level":
            pitch_predictions = pitch_predictions.masked_select(src_masks)
            pitch_targets = pitch_targets.masked_select(src_masks)
        elif self.pitch_feature_level == "frame_level":
            pitch_predictions = pitch_predictions.masked_select(mel_masks)
            pitch_targets = pitch_targets.masked_select(mel_masks)

        if self.energy_feature_level == "phoneme_level":
            energy_predictions = energy_predictions.masked_select(src_masks)
            energy_targets = energy_targets.masked_select(src_masks)
        if self.energy_feature_level == "frame_level":
            energy_predictions = energy_predictions.masked_select(mel_masks)
            energy_targets = energy_targets.masked_select(mel_masks)

        log_duration_predictions = log_duration_predictions.masked_select(src_masks)
        log_duration_targets = log_duration_targets.masked_select(src_masks)

        mel_predictions = mel_predictions.masked_select(mel_masks.unsqueeze(-1))
        postnet_mel_predictions = postnet_mel_predictions.masked_select(
            mel_masks.unsqueeze(-1)
        )
        mel_targets = mel_targets.masked_select(mel_masks.unsqueeze(-1))

        mel_loss = self.mae_loss(mel_predictions, mel_targets)
        postnet_mel_loss = self.mae_loss(postnet_mel_predictions, mel_targets)

        pitch_loss = self.mse_loss(pitch_predictions, pitch_targets)
        energy_loss = self.mse_loss(energy_predictions, energy_targets)
        duration_loss = self.mse_loss(log_duration_predictions, log_duration_targets)

        total_loss = (
            mel_loss + postnet_mel_loss + duration_loss + pitch_loss + energy_loss
        )

        return (
            total_loss,
            mel_loss,
            postnet_mel_loss,
            pitch_loss,
            energy_loss,
            duration_loss,
        )


Loss = torch.compile(FastSpeech2Loss(PREPROCESS_CONFIG, {}))


def make():
    torch.manual_seed(0)
    B, T_src, T_mel, n_mel = 2, 5, 9, 4
    src_lens = torch.tensor([5, 3])
    mel_lens = torch.tensor([9, 5])
    src_masks = torch.arange(T_src).unsqueeze(0) >= src_lens.unsqueeze(1)
    mel_masks = torch.arange(T_mel).unsqueeze(0) >= mel_lens.unsqueeze(1)
    batch = (
        ["LJ001-0001", "LJ001-0002"],
        ["printing in the", "in being"],
        torch.zeros(B, dtype=torch.long),
        torch.randint(1, 20, (B, T_src)),
        src_lens,
        T_src,
        torch.randn(B, T_mel, n_mel),
        mel_lens,
        T_mel,
        torch.randn(B, T_src),
        torch.randn(B, T_src),
        torch.tensor([[2, 1, 3, 1, 2], [1, 2, 2, 0, 0]]),
    )
    output = (
        torch.randn(B, T_mel, n_mel, requires_grad=True),
        torch.randn(B, T_mel, n_mel, requires_grad=True),
        torch.randn(B, T_src, requires_grad=True),
        torch.randn(B, T_src, requires_grad=True),
        torch.randn(B, T_src, requires_grad=True),
        torch.tensor([[2.0, 1.0, 3.0, 1.0, 2.0], [1.0, 2.0, 2.0, 0.0, 0.0]]),
        src_masks,
        mel_masks,
        src_lens,
        mel_lens,
    )
    return FastSpeech2Loss(PREPROCESS_CONFIG, {}), [(batch, output)]
