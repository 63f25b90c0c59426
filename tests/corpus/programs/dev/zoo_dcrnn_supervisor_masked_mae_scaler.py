"""DCRNN supervisor loss: `_compute_loss` un-scales truth and prediction with a StandardScaler whose
mean/std are numpy float64 scalars from the training data, then masked_mae_loss (mask of non-zero
truth renormalised by its mean, NaNs zeroed with `loss[loss != loss] = 0`).

Source: chnsh/DCRNN_PyTorch@d2913fd6f19d36a770ab33a5d0d22fe064a1b8da:model/pytorch/dcrnn_supervisor.py:248-284,
model/pytorch/loss.py:1-11, lib/utils.py:52-65 (StandardScaler; lib at d92490b808ba5c5be2f23d427d96e9a56b066d7f)
Kept: StandardScaler, masked_mae_loss and the supervisor's _prepare_data/_get_x_y/
_get_x_y_in_correct_dims/_compute_loss as written (model_kwargs plumbing, logger.debug calls in
_get_x_y, which run outside the compiled loss).
Simplified: DCRNNSupervisor.__init__ keeps the attributes these methods read (no log dir, no
dataset loading, no model); the scaler statistics come from a small random "training set";
4 sensors, horizon 3, batch 2.
"""
import logging

import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class StandardScaler:
    """
    Standard the input
    """

    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def transform(self, data):
        return (data - self.mean) / self.std

    def inverse_transform(self, data):
        return (data * self.std) + self.mean


def masked_mae_loss(y_pred, y_true):
    mask = (y_true != 0).float()
    mask /= mask.mean()
    loss = torch.abs(y_pred - y_true)
    loss = loss * mask
    # trick for nans: https://discuss.pytorch.org/t/how-to-set-nan-in-tensor-to-0/3918/3
    loss[loss != loss] = 0
    return loss.mean()


class DCRNNSupervisor:
    def __init__(self, standard_scaler, **kwargs):
        self._kwargs = kwargs
        self._model_kwargs = kwargs.get('model')
        self._logger = logging.getLogger(__name__)
        self.standard_scaler = standard_scaler

        self.num_nodes = int(self._model_kwargs.get('num_nodes', 1))
        self.input_dim = int(self._model_kwargs.get('input_dim', 1))
        self.seq_len = int(self._model_kwargs.get('seq_len'))  # for the encoder
        self.output_dim = int(self._model_kwargs.get('output_dim', 1))
        self.use_curriculum_learning = bool(
            self._model_kwargs.get('use_curriculum_learning', False))
        self.horizon = int(self._model_kwargs.get('horizon', 1))  # for the decoder

    def _prepare_data(self, x, y):
        x, y = self._get_x_y(x, y)
        x, y = self._get_x_y_in_correct_dims(x, y)
        return x.to(device), y.to(device)

    def _get_x_y(self, x, y):
        x = torch.from_numpy(x).float()
        y = torch.from_numpy(y).float()
        self._logger.debug("X: {}".format(x.size()))
        self._logger.debug("y: {}".format(y.size()))
        x = x.permute(1, 0, 2, 3)
        y = y.permute(1, 0, 2, 3)
        return x, y

    def _get_x_y_in_correct_dims(self, x, y):
        batch_size = x.size(1)
        x = x.view(self.seq_len, batch_size, self.num_nodes * self.input_dim)
        y = y[..., :self.output_dim].view(self.horizon, batch_size,
                                          self.num_nodes * self.output_dim)
        return x, y

    def _compute_loss(self, y_true, y_predicted):
        y_true = self.standard_scaler.inverse_transform(y_true)
        y_predicted = self.standard_scaler.inverse_transform(y_predicted)
        return masked_mae_loss(y_predicted, y_true)


KWARGS = {'model': dict(num_nodes=4, input_dim=2, seq_len=3, output_dim=1, horizon=3,
                        use_curriculum_learning=True)}


def build_supervisor():
    rng = np.random.RandomState(0)
    x_train = rng.rand(16, 3, 4, 2) * 60.0
    scaler = StandardScaler(mean=x_train[..., 0].mean(), std=x_train[..., 0].std())
    return DCRNNSupervisor(scaler, **KWARGS)


supervisor = build_supervisor()
supervisor._compute_loss = torch.compile(supervisor._compute_loss)


def make():
    torch.manual_seed(0)
    sup = build_supervisor()
    rng = np.random.RandomState(1)
    x = rng.rand(2, 3, 4, 2).astype(np.float32)
    y = sup.standard_scaler.transform(rng.rand(2, 3, 4, 2) * 60.0).astype(np.float32)
    y[0, :, 1, 0] = sup.standard_scaler.transform(0.0)  # missing readings (0 after un-scaling)
    _, y_t = sup._prepare_data(x, y)
    output = torch.randn(3, 2, 4)
    return sup._compute_loss, [(y_t, output)]
