"""PANNs training iteration: the body of the `train()` loop in main.py (numpy mixup lambdas from `Mixup.get_lambda`, `move_data_to_device` dispatching on `str(x.dtype)` with `torch.Tensor(x)` / `torch.LongTensor(x)`, `model.train()`, mixup of outputs' targets, `clip_bce`, backward, `print(loss)`, optimizer step) compiled as one step function.

Source: qiuqiangkong/audioset_tagging_cnn@d2f4b8c18eab44737fcc0de1248ae21eb43f6aa4:pytorch/main.py:266-301
Also: pytorch/pytorch_utils.py:7-31 (move_data_to_device, do_mixup),
pytorch/losses.py:5-15 (clip_bce, get_loss_func), utils/utilities.py:117-137
(Mixup), pytorch/models.py:10-68,2189-2311 (Wavegram_Cnn14, the model trained).
Kept: the loop body verbatim from the mixup lambda to `optimizer.zero_grad()`,
the helpers verbatim, the batch dict with its numpy arrays and audio names.
Simplified: the loop body is a function of (model, optimizer, batch, ...);
evaluation, checkpointing, the wall-clock print and DataParallel are left out;
the model is Wavegram_Cnn14 with CNN widths 8-32, the unused SpecAugmentation
member not built; 10 classes, batch 2 of 0.32 s at 32 kHz.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def move_data_to_device(x, device):
    if 'float' in str(x.dtype):
        x = torch.Tensor(x)
    elif 'int' in str(x.dtype):
        x = torch.LongTensor(x)
    else:
        return x

    return x.to(device)


def do_mixup(x, mixup_lambda):
    """Mixup x of even indexes (0, 2, 4, ...) with x of odd indexes 
    (1, 3, 5, ...).

    Args:
      x: (batch_size * 2, ...)
      mixup_lambda: (batch_size * 2,)

    Returns:
      out: (batch_size, ...)
    """
    out = (x[0 :: 2].transpose(0, -1) * mixup_lambda[0 :: 2] + \
        x[1 :: 2].transpose(0, -1) * mixup_lambda[1 :: 2]).transpose(0, -1)
    return out


def init_layer(layer):
    """Initialize a Linear or Convolutional layer. """
    nn.init.xavier_uniform_(layer.weight)
 
    if hasattr(layer, 'bias'):
        if layer.bias is not None:
            layer.bias.data.fill_(0.)
            
    
def init_bn(bn):
    """Initialize a Batchnorm layer. """
    bn.bias.data.fill_(0.)
    bn.weight.data.fill_(1.)


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        
        super(ConvBlock, self).__init__()
        
        self.conv1 = nn.Conv2d(in_channels=in_channels, 
                              out_channels=out_channels,
                              kernel_size=(3, 3), stride=(1, 1),
                              padding=(1, 1), bias=False)
                              
        self.conv2 = nn.Conv2d(in_channels=out_channels, 
                              out_channels=out_channels,
                              kernel_size=(3, 3), stride=(1, 1),
                              padding=(1, 1), bias=False)
                              
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)

        self.init_weight()
        
    def init_weight(self):
        init_layer(self.conv1)
        init_layer(self.conv2)
        init_bn(self.bn1)
        init_bn(self.bn2)

        
    def forward(self, input, pool_size=(2, 2), pool_type='avg'):
        
        x = input
        x = F.relu_(self.bn1(self.conv1(x)))
        x = F.relu_(self.bn2(self.conv2(x)))
        if pool_type == 'max':
            x = F.max_pool2d(x, kernel_size=pool_size)
        elif pool_type == 'avg':
            x = F.avg_pool2d(x, kernel_size=pool_size)
        elif pool_type == 'avg+max':
            x1 = F.avg_pool2d(x, kernel_size=pool_size)
            x2 = F.max_pool2d(x, kernel_size=pool_size)
            x = x1 + x2
        else:
            raise Exception('Incorrect argument!')
        
        return x


class ConvPreWavBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        
        super(ConvPreWavBlock, self).__init__()
        
        self.conv1 = nn.Conv1d(in_channels=in_channels, 
                              out_channels=out_channels,
                              kernel_size=3, stride=1,
                              padding=1, bias=False)
                              
        self.conv2 = nn.Conv1d(in_channels=out_channels, 
                              out_channels=out_channels,
                              kernel_size=3, stride=1, dilation=2, 
                              padding=2, bias=False)
                              
        self.bn1 = nn.BatchNorm1d(out_channels)
        self.bn2 = nn.BatchNorm1d(out_channels)

        self.init_weight()
        
    def init_weight(self):
        init_layer(self.conv1)
        init_layer(self.conv2)
        init_bn(self.bn1)
        init_bn(self.bn2)

        
    def forward(self, input, pool_size):
        
        x = input
        x = F.relu_(self.bn1(self.conv1(x)))
        x = F.relu_(self.bn2(self.conv2(x)))
        x = F.max_pool1d(x, kernel_size=pool_size)
        
        return x


class Wavegram_Cnn14(nn.Module):
    def __init__(self, sample_rate, window_size, hop_size, mel_bins, fmin, 
        fmax, classes_num):
        
        super(Wavegram_Cnn14, self).__init__()

        window = 'hann'
        center = True
        pad_mode = 'reflect'
        ref = 1.0
        amin = 1e-10
        top_db = None

        self.pre_conv0 = nn.Conv1d(in_channels=1, out_channels=16, kernel_size=11, stride=5, padding=5, bias=False)
        self.pre_bn0 = nn.BatchNorm1d(16)
        self.pre_block1 = ConvPreWavBlock(16, 16)
        self.pre_block2 = ConvPreWavBlock(16, 128)
        self.pre_block3 = ConvPreWavBlock(128, 128)
        self.pre_block4 = ConvBlock(in_channels=4, out_channels=8)

        self.bn0 = nn.BatchNorm2d(64)

        self.conv_block1 = ConvBlock(in_channels=1, out_channels=8)
        self.conv_block2 = ConvBlock(in_channels=8, out_channels=16)
        self.conv_block3 = ConvBlock(in_channels=16, out_channels=16)
        self.conv_block4 = ConvBlock(in_channels=16, out_channels=32)
        self.conv_block5 = ConvBlock(in_channels=32, out_channels=32)
        self.conv_block6 = ConvBlock(in_channels=32, out_channels=32)

        self.fc1 = nn.Linear(32, 32, bias=True)
        self.fc_audioset = nn.Linear(32, classes_num, bias=True)
        
        self.init_weight()

    def init_weight(self):
        init_layer(self.pre_conv0)
        init_bn(self.pre_bn0)
        init_bn(self.bn0)
        init_layer(self.fc1)
        init_layer(self.fc_audioset)
 
    def forward(self, input, mixup_lambda=None):
        """
        Input: (batch_size, data_length)"""

        # Wavegram
        a1 = F.relu_(self.pre_bn0(self.pre_conv0(input[:, None, :])))
        a1 = self.pre_block1(a1, pool_size=4)
        a1 = self.pre_block2(a1, pool_size=4)
        a1 = self.pre_block3(a1, pool_size=4)
        a1 = a1.reshape((a1.shape[0], -1, 32, a1.shape[-1])).transpose(2, 3)
        a1 = self.pre_block4(a1, pool_size=(2, 1))

        # Mixup on spectrogram
        if self.training and mixup_lambda is not None:
            a1 = do_mixup(a1, mixup_lambda)
        
        x = a1
        x = F.dropout(x, p=0.2, training=self.training)
        x = self.conv_block2(x, pool_size=(2, 2), pool_type='avg')
        x = F.dropout(x, p=0.2, training=self.training)
        x = self.conv_block3(x, pool_size=(2, 2), pool_type='avg')
        x = F.dropout(x, p=0.2, training=self.training)
        x = self.conv_block4(x, pool_size=(2, 2), pool_type='avg')
        x = F.dropout(x, p=0.2, training=self.training)
        x = self.conv_block5(x, pool_size=(2, 2), pool_type='avg')
        x = F.dropout(x, p=0.2, training=self.training)
        x = self.conv_block6(x, pool_size=(1, 1), pool_type='avg')
        x = F.dropout(x, p=0.2, training=self.training)
        x = torch.mean(x, dim=3)
        
        (x1, _) = torch.max(x, dim=2)
        x2 = torch.mean(x, dim=2)
        x = x1 + x2
        x = F.dropout(x, p=0.5, training=self.training)
        x = F.relu_(self.fc1(x))
        embedding = F.dropout(x, p=0.5, training=self.training)
        clipwise_output = torch.sigmoid(self.fc_audioset(x))
        
        output_dict = {'clipwise_output': clipwise_output, 'embedding': embedding}

        return output_dict



def clip_bce(output_dict, target_dict):
    """Binary crossentropy loss.
    """
    return F.binary_cross_entropy(
        output_dict['clipwise_output'], target_dict['target'])


def get_loss_func(loss_type):
    if loss_type == 'clip_bce':
        return clip_bce


class Mixup(object):
    def __init__(self, mixup_alpha, random_seed=1234):
        """Mixup coefficient generator.
        """
        self.mixup_alpha = mixup_alpha
        self.random_state = np.random.RandomState(random_seed)

    def get_lambda(self, batch_size):
        """Get mixup random coefficients.
        Args:
          batch_size: int
        Returns:
          mixup_lambdas: (batch_size,)
        """
        mixup_lambdas = []
        for n in range(0, batch_size, 2):
            lam = self.random_state.beta(self.mixup_alpha, self.mixup_alpha, 1)[0]
            mixup_lambdas.append(lam)
            mixup_lambdas.append(1. - lam)

        return np.array(mixup_lambdas)


def train_iteration(model, optimizer, batch_data_dict, augmentation, mixup_augmenter,
    loss_func, device):
    # Mixup lambda
    if 'mixup' in augmentation:
        batch_data_dict['mixup_lambda'] = mixup_augmenter.get_lambda(
            batch_size=len(batch_data_dict['waveform']))

    # Move data to device
    for key in batch_data_dict.keys():
        batch_data_dict[key] = move_data_to_device(batch_data_dict[key], device)
    
    # Forward
    model.train()

    if 'mixup' in augmentation:
        batch_output_dict = model(batch_data_dict['waveform'], 
            batch_data_dict['mixup_lambda'])
        """{'clipwise_output': (batch_size, classes_num), ...}"""

        batch_target_dict = {'target': do_mixup(batch_data_dict['target'], 
            batch_data_dict['mixup_lambda'])}
        """{'target': (batch_size, classes_num)}"""
    else:
        batch_output_dict = model(batch_data_dict['waveform'], None)
        """{'clipwise_output': (batch_size, classes_num), ...}"""

        batch_target_dict = {'target': batch_data_dict['target']}
        """{'target': (batch_size, classes_num)}"""

    # Loss
    loss = loss_func(batch_output_dict, batch_target_dict)

    # Backward
    loss.backward()
    print(loss)
    
    optimizer.step()
    optimizer.zero_grad()
    return loss


step = torch.compile(train_iteration)


def make():
    torch.manual_seed(0)
    model = Wavegram_Cnn14(sample_rate=32000, window_size=1024, hop_size=320, mel_bins=64,
        fmin=50, fmax=14000, classes_num=10)
    optimizer = optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999),
        eps=1e-08, weight_decay=0., amsgrad=True)
    rng = np.random.RandomState(0)
    device = torch.device('cpu')

    def batch(n):
        return {
            'audio_name': np.array(['Y{:03d}.wav'.format(i) for i in range(n)]),
            'waveform': rng.uniform(-0.5, 0.5, (n, 10240)).astype(np.float32),
            'target': (rng.uniform(0, 1, (n, 10)) > 0.8).astype(np.float32),
        }

    loss_func = get_loss_func('clip_bce')
    return train_iteration, [
        (model, optimizer, batch(4), 'mixup', Mixup(mixup_alpha=1.), loss_func, device),
        (model, optimizer, batch(2), 'none', None, loss_func, device),
    ]
