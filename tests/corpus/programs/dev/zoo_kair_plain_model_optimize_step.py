"""KAIR ModelPlain training step: `optimize_parameters` runs the DataParallel-wrapped denoiser, weighted L1 loss, backward, Adam step, option-dict driven regularizer checks, `G_loss.item()` into the log dict, and the parameter-wise EMA update of netE.

Source: cszn/KAIR@2de1b5841db19518abbe8345a45b85f2e4310fc7:models/model_plain.py:16-193
Also (same commit): models/model_base.py:8-14,89-113,192-197 (ModelBase.__init__, get_bare_model,
model_to_device, update_E), models/network_dncnn.py:40-71 (DnCNN), models/basicblock.py (sequential, conv).
Kept: ModelPlain.__init__/define_loss/define_optimizer/feed_data/netG_forward/
optimize_parameters verbatim, the option dict layout of KAIR's train_dncnn.json
(clipgrad and regularizer steps null, E_decay 0.999), the DataParallel wrap
that model_to_device applies when not distributed.
Simplified: no checkpoint loading/saving or schedulers; DnCNN with nc 8 and 4
layers on 1x1x12x12 patches; the training loop compiles the step method.
"""
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.nn.parallel import DataParallel, DistributedDataParallel
from torch.optim import Adam


# ---------------- models/basicblock.py ----------------
def sequential(*args):
    if len(args) == 1:
        if isinstance(args[0], OrderedDict):
            raise NotImplementedError('sequential does not support OrderedDict input.')
        return args[0]  # No sequential is needed.
    modules = []
    for module in args:
        if isinstance(module, nn.Sequential):
            for submodule in module.children():
                modules.append(submodule)
        elif isinstance(module, nn.Module):
            modules.append(module)
    return nn.Sequential(*modules)


def conv(in_channels=64, out_channels=64, kernel_size=3, stride=1, padding=1, bias=True, mode='CBR', negative_slope=0.2):
    L = []
    for t in mode:
        if t == 'C':
            L.append(nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding, bias=bias))
        elif t == 'B':
            L.append(nn.BatchNorm2d(out_channels, momentum=0.9, eps=1e-04, affine=True))
        elif t == 'R':
            L.append(nn.ReLU(inplace=True))
        elif t == 'L':
            L.append(nn.LeakyReLU(negative_slope=negative_slope, inplace=True))
        else:
            raise NotImplementedError('Undefined type: '.format(t))
    return sequential(*L)


class B:
    sequential = staticmethod(sequential)
    conv = staticmethod(conv)


# ---------------- models/network_dncnn.py ----------------
class DnCNN(nn.Module):
    def __init__(self, in_nc=1, out_nc=1, nc=64, nb=17, act_mode='BR'):
        super(DnCNN, self).__init__()
        assert 'R' in act_mode or 'L' in act_mode, 'Examples of activation function: R, L, BR, BL, IR, IL'
        bias = True

        m_head = B.conv(in_nc, nc, mode='C'+act_mode[-1], bias=bias)
        m_body = [B.conv(nc, nc, mode='C'+act_mode, bias=bias) for _ in range(nb-2)]
        m_tail = B.conv(nc, out_nc, mode='C', bias=bias)

        self.model = B.sequential(m_head, *m_body, m_tail)

    def forward(self, x):
        n = self.model(x)
        return x-n


def define_G(opt):
    opt_net = opt['netG']
    netG = DnCNN(in_nc=opt_net['in_nc'], out_nc=opt_net['out_nc'], nc=opt_net['nc'],
                 nb=opt_net['nb'], act_mode=opt_net['act_mode'])
    return netG


# ---------------- models/model_base.py ----------------
class ModelBase():
    def __init__(self, opt):
        self.opt = opt                         # opt
        self.save_dir = opt['path']['models']  # save models
        self.device = torch.device('cuda' if opt['gpu_ids'] is not None else 'cpu')
        self.is_train = opt['is_train']        # training or not
        self.schedulers = []                   # schedulers

    def get_bare_model(self, network):
        """Get bare model, especially under wrapping with
        DistributedDataParallel or DataParallel.
        """
        if isinstance(network, (DataParallel, DistributedDataParallel)):
            network = network.module
        return network

    def model_to_device(self, network):
        network = network.to(self.device)
        if self.opt['dist']:
            find_unused_parameters = self.opt.get('find_unused_parameters', True)
            use_static_graph = self.opt.get('use_static_graph', False)
            network = DistributedDataParallel(network, device_ids=[torch.cuda.current_device()], find_unused_parameters=find_unused_parameters)
            if use_static_graph:
                print('Using static graph. Make sure that "unused parameters" will not change during training loop.')
                network._set_static_graph()
        else:
            network = DataParallel(network)
        return network

    def update_E(self, decay=0.999):
        netG = self.get_bare_model(self.netG)
        netG_params = dict(netG.named_parameters())
        netE_params = dict(self.netE.named_parameters())
        for k in netG_params.keys():
            netE_params[k].data.mul_(decay).add_(netG_params[k].data, alpha=1-decay)


# ---------------- models/model_plain.py ----------------
class ModelPlain(ModelBase):
    """Train with pixel loss"""
    def __init__(self, opt):
        super(ModelPlain, self).__init__(opt)
        # ------------------------------------
        # define network
        # ------------------------------------
        self.opt_train = self.opt['train']    # training option
        self.netG = define_G(opt)
        self.netG = self.model_to_device(self.netG)
        if self.opt_train['E_decay'] > 0:
            self.netE = define_G(opt).to(self.device).eval()

    def init_train(self):
        self.netG.train()                     # set training mode,for BN
        self.define_loss()                    # define loss
        self.define_optimizer()               # define optimizer
        self.log_dict = OrderedDict()         # log
        if self.opt_train['E_decay'] > 0:
            self.update_E(0)
            self.netE.eval()

    def define_loss(self):
        G_lossfn_type = self.opt_train['G_lossfn_type']
        if G_lossfn_type == 'l1':
            self.G_lossfn = nn.L1Loss().to(self.device)
        elif G_lossfn_type == 'l2':
            self.G_lossfn = nn.MSELoss().to(self.device)
        elif G_lossfn_type == 'l2sum':
            self.G_lossfn = nn.MSELoss(reduction='sum').to(self.device)
        else:
            raise NotImplementedError('Loss type [{:s}] is not found.'.format(G_lossfn_type))
        self.G_lossfn_weight = self.opt_train['G_lossfn_weight']

    def define_optimizer(self):
        G_optim_params = []
        for k, v in self.netG.named_parameters():
            if v.requires_grad:
                G_optim_params.append(v)
            else:
                print('Params [{:s}] will not optimize.'.format(k))
        if self.opt_train['G_optimizer_type'] == 'adam':
            self.G_optimizer = Adam(G_optim_params, lr=self.opt_train['G_optimizer_lr'],
                                    betas=self.opt_train['G_optimizer_betas'],
                                    weight_decay=self.opt_train['G_optimizer_wd'])
        else:
            raise NotImplementedError

    def feed_data(self, data, need_H=True):
        self.L = data['L'].to(self.device)
        if need_H:
            self.H = data['H'].to(self.device)

    def netG_forward(self):
        self.E = self.netG(self.L)

    def optimize_parameters(self, current_step):
        self.G_optimizer.zero_grad()
        self.netG_forward()
        G_loss = self.G_lossfn_weight * self.G_lossfn(self.E, self.H)
        G_loss.backward()

        # ------------------------------------
        # clip_grad
        # ------------------------------------
        # `clip_grad_norm` helps prevent the exploding gradient problem.
        G_optimizer_clipgrad = self.opt_train['G_optimizer_clipgrad'] if self.opt_train['G_optimizer_clipgrad'] else 0
        if G_optimizer_clipgrad > 0:
            torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm=self.opt_train['G_optimizer_clipgrad'], norm_type=2)

        self.G_optimizer.step()

        # ------------------------------------
        # regularizer
        # ------------------------------------
        G_regularizer_orthstep = self.opt_train['G_regularizer_orthstep'] if self.opt_train['G_regularizer_orthstep'] else 0
        if G_regularizer_orthstep > 0 and current_step % G_regularizer_orthstep == 0 and current_step % self.opt['train']['checkpoint_save'] != 0:
            self.netG.apply(regularizer_orth)
        G_regularizer_clipstep = self.opt_train['G_regularizer_clipstep'] if self.opt_train['G_regularizer_clipstep'] else 0
        if G_regularizer_clipstep > 0 and current_step % G_regularizer_clipstep == 0 and current_step % self.opt['train']['checkpoint_save'] != 0:
            self.netG.apply(regularizer_clip)

        # self.log_dict['G_loss'] = G_loss.item()/self.E.size()[0]  # if `reduction='sum'`
        self.log_dict['G_loss'] = G_loss.item()

        if self.opt_train['E_decay'] > 0:
            self.update_E(self.opt_train['E_decay'])


def regularizer_orth(m):
    raise NotImplementedError  # not reached: G_regularizer_orthstep is null


def regularizer_clip(m):
    raise NotImplementedError  # not reached: G_regularizer_clipstep is null


OPT = {
    'path': {'models': 'denoising/dncnn/models'},
    'gpu_ids': None,
    'is_train': True,
    'dist': False,
    'find_unused_parameters': True,
    'scale': 1,
    'netG': {'net_type': 'dncnn', 'in_nc': 1, 'out_nc': 1, 'nc': 8, 'nb': 4, 'act_mode': 'BR'},
    'train': {
        'G_lossfn_type': 'l1',
        'G_lossfn_weight': 1.0,
        'E_decay': 0.999,
        'G_optimizer_type': 'adam',
        'G_optimizer_lr': 1e-4,
        'G_optimizer_betas': [0.9, 0.999],
        'G_optimizer_wd': 0,
        'G_optimizer_clipgrad': None,
        'G_regularizer_orthstep': None,
        'G_regularizer_clipstep': None,
        'checkpoint_save': 5000,
    },
}


def build(opt=OPT):
    model = ModelPlain(opt)
    model.init_train()
    return model


def main():
    model = build()
    step = torch.compile(model.optimize_parameters)
    return model, step


def make():
    torch.manual_seed(0)
    model = build()
    H = torch.rand(2, 1, 12, 12)
    L = H + 0.1 * torch.randn(2, 1, 12, 12)
    model.feed_data({'L': L, 'H': H})
    return model.optimize_parameters, [(1,), (2,)]
