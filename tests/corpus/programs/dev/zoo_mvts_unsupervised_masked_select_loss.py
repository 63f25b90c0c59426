"""mvts_transformer imputation training loss: MaskedMSELoss over `torch.masked_select` (data-dependent length), `len(loss)` for the mean, optional `l2_reg_loss` that walks `named_parameters()`.

Source: gzerveas/mvts_transformer@4ac1ae593686d8a2fe9778acfefb5df9077619b5:src/running.py:274-300 (UnsupervisedRunner.train_epoch)
Also: src/models/loss.py:6-70 (get_loss_module, l2_reg_loss, MaskedMSELoss) at 812be5e727196ce31d35691778609bd40647c639.
Kept: the per-batch body of train_epoch up to `total_loss` (mask cascade, loss_module call,
`torch.sum`, `/ len(loss)`, the `if self.l2_reg` switch), loss functions verbatim.
Simplified: the model is a small linear imputer with the TSTransformerEncoder call signature
(returns `(predictions, embedding)`); the optimizer step, grad clipping and printing are left
outside the compiled loss function, which returns the loss and the number of active elements.
"""
import torch
import torch.nn as nn
from torch.nn import functional as F


def get_loss_module(config):

    task = config['task']

    if (task == "imputation") or (task == "transduction"):
        return MaskedMSELoss(reduction='none')  # outputs loss for each batch element

    if task == "regression":
        return nn.MSELoss(reduction='none')  # outputs loss for each batch sample

    else:
        raise ValueError("Loss module for task '{}' does not exist".format(task))


def l2_reg_loss(model):
    """Returns the squared L2 norm of output layer of given model"""

    for name, param in model.named_parameters():
        if name == 'output_layer.weight':
            return torch.sum(torch.square(param))


class MaskedMSELoss(nn.Module):
    """ Masked MSE Loss
    """

    def __init__(self, reduction: str = 'mean'):

        super().__init__()

        self.reduction = reduction
        self.mse_loss = nn.MSELoss(reduction=self.reduction)

    def forward(self,
                y_pred: torch.Tensor, y_true: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        # for this particular loss, one may also elementwise multiply y_pred and y_true with the inverted mask
        masked_pred = torch.masked_select(y_pred, mask)
        masked_true = torch.masked_select(y_true, mask)

        return self.mse_loss(masked_pred, masked_true)


class LinearImputer(nn.Module):
    def __init__(self, feat_dim, d_model):
        super().__init__()
        self.project_inp = nn.Linear(feat_dim, d_model)
        self.output_layer = nn.Linear(d_model, feat_dim)

    def forward(self, X, padding_masks):
        embedding = F.gelu(self.project_inp(X)) * padding_masks.unsqueeze(-1)
        return self.output_layer(embedding), embedding


class UnsupervisedRunner(object):

    def __init__(self, model, device, loss_module, l2_reg=None):
        self.model = model
        self.device = device
        self.loss_module = loss_module
        self.l2_reg = l2_reg

    def batch_loss(self, X, targets, target_masks, padding_masks):
        targets = targets.to(self.device)
        target_masks = target_masks.to(self.device)  # 1s: mask and predict, 0s: unaffected input (ignore)
        padding_masks = padding_masks.to(self.device)  # 0s: ignore

        predictions, embedding = self.model(X.to(self.device), padding_masks)  # (batch_size, padded_length, feat_dim)

        # Cascade noise masks (batch_size, padded_length, feat_dim) and padding masks (batch_size, padded_length)
        target_masks = target_masks * padding_masks.unsqueeze(-1)
        loss = self.loss_module(predictions, targets, target_masks)  # (num_active,) individual loss (square error per element) for each active value in batch
        batch_loss = torch.sum(loss)
        mean_loss = batch_loss / len(loss)  # mean loss (over active elements) used for optimization

        if self.l2_reg:
            total_loss = mean_loss + self.l2_reg * l2_reg_loss(self.model)
        else:
            total_loss = mean_loss
        return total_loss, batch_loss, len(loss)


def train_setup(l2_reg=0.01):
    model = LinearImputer(3, 8)
    runner = UnsupervisedRunner(model, torch.device('cpu'), get_loss_module({'task': 'imputation'}), l2_reg=l2_reg)
    compiled_loss = torch.compile(runner.batch_loss)
    return runner, compiled_loss


def make():
    torch.manual_seed(0)
    runner = UnsupervisedRunner(LinearImputer(3, 8), torch.device('cpu'),
                                get_loss_module({'task': 'imputation'}), l2_reg=0.01)
    X = torch.randn(2, 5, 3)
    targets = torch.randn(2, 5, 3)
    target_masks = torch.rand(2, 5, 3) < 0.4
    padding_masks = torch.ones(2, 5, dtype=torch.bool)
    padding_masks[1, 3:] = False
    return runner.batch_loss, [
        (X, targets, target_masks, padding_masks),
        (X, targets, torch.rand(2, 5, 3) < 0.7, torch.ones(2, 5, dtype=torch.bool)),
    ]
