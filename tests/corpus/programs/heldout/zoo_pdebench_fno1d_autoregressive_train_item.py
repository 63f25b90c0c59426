"""PDEBench FNO training batch (autoregressive): the first `initial_step` frames seed `pred`, an input shape list is built from `list(xx.shape)`, then for each time step the FNO1d (SpectralConv1d rfft/einsum/irfft layers, non-periodic padding) predicts the next frame, the MSE is accumulated, `pred`/`xx` are extended with `torch.cat`; `loss.item()` and the full-trajectory `l2_full.item()` are accumulated before zero_grad/backward/step; the `training_type in [...]` checks pick the branch.

Source: pdebench/PDEBench@9754b4c0ee2bcb967233a89d1c8a6a58bf7f7bc9:pdebench/models/fno/train.py:207-277
Also: pdebench/models/fno/fno.py (SpectralConv1d, FNO1d), train.py run_training set-up (FNO1d(num_channels,
modes, width, initial_step), Adam, `loss_fn = nn.MSELoss(reduction="mean")`).
Kept: the body of `for xx, yy, grid in train_loader` verbatim, SpectralConv1d and FNO1d verbatim.
Simplified: the loop body is a function `train_batch(xx, yy, grid)` returning the two running sums,
compiled with torch.compile; 1-D data with 32 points, initial_step 4, t_train 8, modes 6, width 16.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ---- pdebench/models/fno/fno.py ----
class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1):
        super().__init__()

        """
        1D Fourier layer. It does FFT, linear transform, and Inverse FFT.
        """

        self.in_channels = in_channels
        self.out_channels = out_channels
        self.modes1 = (
            # Number of Fourier modes to multiply, at most floor(N/2) + 1
            modes1
        )

        self.scale = 1 / (in_channels * out_channels)
        self.weights1 = nn.Parameter(
            self.scale
            * torch.rand(in_channels, out_channels, self.modes1, dtype=torch.cfloat)
        )

    # Complex multiplication
    def compl_mul1d(self, input, weights):
        # (batch, in_channel, x ), (in_channel, out_channel, x) -> (batch, out_channel, x)
        return torch.einsum("bix,iox->box", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        # Compute Fourier coefficients up to factor of e^(- something constant)
        x_ft = torch.fft.rfft(x)

        # Multiply relevant Fourier modes
        out_ft = torch.zeros(
            batchsize,
            self.out_channels,
            x.size(-1) // 2 + 1,
            device=x.device,
            dtype=torch.cfloat,
        )
        out_ft[:, :, : self.modes1] = self.compl_mul1d(
            x_ft[:, :, : self.modes1], self.weights1
        )

        # Return to physical space
        return torch.fft.irfft(out_ft, n=x.size(-1))


class FNO1d(nn.Module):
    def __init__(self, num_channels, modes=16, width=64, initial_step=10):
        super().__init__()

        """
        The overall network. It contains 4 layers of the Fourier layer.
        1. Lift the input to the desire channel dimension by self.fc0 .
        2. 4 layers of the integral operators u' = (W + K)(u).
            W defined by self.w; K defined by self.conv .
        3. Project from the channel space to the output space by self.fc1 and self.fc2 .

        input: the solution of the initial condition and location (a(x), x)
        input shape: (batchsize, x=s, c=2)
        output: the solution of a later timestep
        output shape: (batchsize, x=s, c=1)
        """

        self.modes1 = modes
        self.width = width
        self.padding = 2  # pad the domain if input is non-periodic
        self.fc0 = nn.Linear(
            initial_step * num_channels + 1, self.width
        )  # input channel is 2: (a(x), x)

        self.conv0 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv1 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv2 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv3 = SpectralConv1d(self.width, self.width, self.modes1)
        self.w0 = nn.Conv1d(self.width, self.width, 1)
        self.w1 = nn.Conv1d(self.width, self.width, 1)
        self.w2 = nn.Conv1d(self.width, self.width, 1)
        self.w3 = nn.Conv1d(self.width, self.width, 1)

        self.fc1 = nn.Linear(self.width, 128)
        self.fc2 = nn.Linear(128, num_channels)

    def forward(self, x, grid):
        # x dim = [b, x1, t*v]
        x = torch.cat((x, grid), dim=-1)
        x = self.fc0(x)
        x = x.permute(0, 2, 1)

        # pad the domain if input is non-periodic
        x = F.pad(x, [0, self.padding])

        x1 = self.conv0(x)
        x2 = self.w0(x)
        x = x1 + x2
        x = F.gelu(x)

        x1 = self.conv1(x)
        x2 = self.w1(x)
        x = x1 + x2
        x = F.gelu(x)

        x1 = self.conv2(x)
        x2 = self.w2(x)
        x = x1 + x2
        x = F.gelu(x)

        x1 = self.conv3(x)
        x2 = self.w3(x)
        x = x1 + x2

        x = x[..., : -self.padding]
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        x = F.gelu(x)
        x = self.fc2(x)
        return x.unsqueeze(-2)



# ---- pdebench/models/fno/train.py (run_training set-up, autoregressive FNO1d) ----
initial_step = 4
t_train = 8
num_channels = 1
modes = 6
width = 16
learning_rate = 1e-3
training_type = "autoregressive"

torch.manual_seed(0)
model = FNO1d(
    num_channels=num_channels,
    width=width,
    modes=modes,
    initial_step=initial_step,
).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=1e-4)
loss_fn = nn.MSELoss(reduction="mean")
model.train()


def train_batch(xx, yy, grid):
    train_l2_step = 0
    train_l2_full = 0
    loss = 0

    # xx: input tensor (first few time steps) [b, x1, ..., xd, t_init, v]
    # yy: target tensor [b, x1, ..., xd, t, v]
    # grid: meshgrid [b, x1, ..., xd, dims]
    xx = xx.to(device)  # noqa: PLW2901
    yy = yy.to(device)  # noqa: PLW2901
    grid = grid.to(device)  # noqa: PLW2901

    # Initialize the prediction tensor
    pred = yy[..., :initial_step, :]
    # Extract shape of the input tensor for reshaping (i.e. stacking the
    # time and channels dimension together)
    inp_shape = list(xx.shape)
    inp_shape = inp_shape[:-2]
    inp_shape.append(-1)

    if training_type in ["autoregressive"]:
        # Autoregressive loop
        for t in range(initial_step, t_train):
            # Reshape input tensor into [b, x1, ..., xd, t_init*v]
            inp = xx.reshape(inp_shape)

            # Extract target at current time step
            y = yy[..., t : t + 1, :]

            # Model run
            im = model(inp, grid)

            # Loss calculation
            _batch = im.size(0)
            loss += loss_fn(im.reshape(_batch, -1), y.reshape(_batch, -1))

            # Concatenate the prediction at current time step into the
            # prediction tensor
            pred = torch.cat((pred, im), -2)

            # Concatenate the prediction at the current time step to be used
            # as input for the next time step
            xx = torch.cat((xx[..., 1:, :], im), dim=-2)  # noqa: PLW2901

        train_l2_step += loss.item()
        _batch = yy.size(0)
        _yy = yy[..., :t_train, :]  # if t_train is not -1
        l2_full = loss_fn(pred.reshape(_batch, -1), _yy.reshape(_batch, -1))
        train_l2_full += l2_full.item()

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    if training_type in ["single"]:
        x = xx[..., 0, :]
        y = yy[..., t_train - 1 : t_train, :]
        pred = model(x, grid)
        _batch = yy.size(0)
        loss += loss_fn(pred.reshape(_batch, -1), y.reshape(_batch, -1))

        train_l2_step += loss.item()
        train_l2_full += loss.item()

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return train_l2_step, train_l2_full


compiled_batch = torch.compile(train_batch)


def make():
    gen = torch.Generator().manual_seed(0)
    x = torch.linspace(0, 1, 32)
    grid = x[None, :, None].repeat(2, 1, 1)
    yy = torch.randn(2, 32, 10, 1, generator=gen)
    xx = yy[..., :initial_step, :].clone()
    return train_batch, [(xx, yy, grid), (xx[:1], yy[:1], grid[:1])]
