"""Mult-VAE (BERT4Rec-VAE repo) training loss: `torch.stack` of the per-user rows, encoder/decoder ModuleLists with a `self.training` reparameterisation, and a name-mangled `self.__beta` annealed inside a `beta` property read by the loss.

Source: jaywonchung/BERT4Rec-VAE-Pytorch@f66f2534ebfd937778c7174b5f9f216efdebe5de:models/vae.py:1-68
Source: jaywonchung/BERT4Rec-VAE-Pytorch@f66f2534ebfd937778c7174b5f9f216efdebe5de:trainers/vae.py:1-60
Kept: BaseModel, VAEModel and VAETrainer (__init__, beta property, calculate_loss,
calculate_metrics) verbatim; recalls_and_ndcgs_for_ks from trainers/utils.py.
Simplified: the AbstractTrainer keeps only the attributes these methods read (no
optimizer, tensorboard loggers or loaders); 40 items, hidden 16, latent 8.
"""
import random
from abc import ABCMeta, abstractmethod

import torch
import torch.nn as nn
import torch.nn.functional as F


class BaseModel(nn.Module, metaclass=ABCMeta):
    def __init__(self, args):
        super().__init__()
        self.args = args

    @classmethod
    @abstractmethod
    def code(cls):
        pass


class VAEModel(BaseModel):
    def __init__(self, args):
        super().__init__(args)
        self.latent_dim = args.vae_latent_dim

        # Input dropout
        self.input_dropout = nn.Dropout(p=args.vae_dropout)

        # Construct a list of dimensions for the encoder and the decoder
        dims = [args.vae_hidden_dim] * 2 * args.vae_num_hidden
        dims = [args.num_items] + dims + [args.vae_latent_dim * 2]

        # Stack encoders and decoders
        encoder_modules, decoder_modules = [], []
        for i in range(len(dims)//2):
            encoder_modules.append(nn.Linear(dims[2*i], dims[2*i+1]))
            if i == 0:
                decoder_modules.append(nn.Linear(dims[-1]//2, dims[-2]))
            else:
                decoder_modules.append(nn.Linear(dims[-2*i-1], dims[-2*i-2]))
        self.encoder = nn.ModuleList(encoder_modules)
        self.decoder = nn.ModuleList(decoder_modules)

        # Initialize weights
        self.encoder.apply(self.weight_init)
        self.decoder.apply(self.weight_init)

    def weight_init(self, m):
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight)
            m.bias.data.zero_()

    @classmethod
    def code(cls):
        return 'vae'

    def forward(self, x):
        x = F.normalize(x)
        x = self.input_dropout(x)

        for i, layer in enumerate(self.encoder):
            x = layer(x)
            if i != len(self.encoder) - 1:
                x = torch.tanh(x)

        mu, logvar = x[:, :self.latent_dim], x[:, self.latent_dim:]

        if self.training:
            # since log(var) = log(sigma^2) = 2*log(sigma)
            sigma = torch.exp(0.5 * logvar)
            eps = torch.randn_like(sigma)
            x = mu + eps * sigma
        else:
            x = mu

        for i, layer in enumerate(self.decoder):
            x = layer(x)
            if i != len(self.decoder) - 1:
                x = torch.tanh(x)

        return x, mu, logvar


def recalls_and_ndcgs_for_ks(scores, labels, ks):
    metrics = {}

    scores = scores
    labels = labels
    answer_count = labels.sum(1)

    labels_float = labels.float()
    rank = (-scores).argsort(dim=1)
    cut = rank
    for k in sorted(ks, reverse=True):
       cut = cut[:, :k]
       hits = labels_float.gather(1, cut)
       metrics['Recall@%d' % k] = \
           (hits.sum(1) / torch.min(torch.Tensor([k]).to(labels.device), labels.sum(1).float())).mean().cpu().item()

       position = torch.arange(2, 2+k)
       weights = 1 / torch.log2(position.float())
       dcg = (hits * weights.to(hits.device)).sum(1)
       idcg = torch.Tensor([weights[:min(int(n), k)].sum() for n in answer_count]).to(dcg.device)
       ndcg = (dcg / idcg).mean()
       metrics['NDCG@%d' % k] = ndcg.cpu().item()

    return metrics


class AbstractTrainer(metaclass=ABCMeta):
    def __init__(self, args, model, train_loader, val_loader, test_loader, export_root):
        self.args = args
        self.device = args.device
        self.model = model.to(self.device)
        self.is_parallel = args.num_gpu > 1
        if self.is_parallel:
            self.model = nn.DataParallel(self.model)

        self.train_loader = train_loader
        self.val_loader = val_loader
        self.test_loader = test_loader

        self.num_epochs = args.num_epochs
        self.metric_ks = args.metric_ks
        self.best_metric = args.best_metric

    @abstractmethod
    def calculate_loss(self, batch):
        pass

    @abstractmethod
    def calculate_metrics(self, batch):
        pass


class VAETrainer(AbstractTrainer):
    def __init__(self, args, model, train_loader, val_loader, test_loader, export_root):
        super().__init__(args, model, train_loader, val_loader, test_loader, export_root)

        # Finding or using given optimal beta
        self.__beta = 0.0
        self.finding_best_beta = args.find_best_beta
        self.anneal_amount = 1.0 / args.total_anneal_steps
        if self.finding_best_beta:
            self.current_best_metric = 0.0
            self.anneal_cap = 1.0
        else:
            self.anneal_cap = args.anneal_cap

    @classmethod
    def code(cls):
        return 'vae'

    def log_extra_train_info(self, log_data):
        log_data.update({'cur_beta': self.__beta})

    def log_extra_val_info(self, log_data):
        if self.finding_best_beta:
            log_data.update({'best_beta': self.best_beta})

    @property
    def beta(self):
        if self.model.training:
            self.__beta = min(self.__beta + self.anneal_amount, self.anneal_cap)
        return self.__beta

    def calculate_loss(self, batch):
        input_x = torch.stack(batch)
        recon_x, mu, logvar = self.model(input_x)
        CE = -torch.mean(torch.sum(F.log_softmax(recon_x, 1) * input_x, -1))
        KLD = -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))

        return CE + self.beta * KLD

    def calculate_metrics(self, batch):
        inputs, labels = batch
        logits, _, _ = self.model(inputs)
        logits[inputs!=0] = -float("Inf") # IMPORTANT: remove items that were in the input
        metrics = recalls_and_ndcgs_for_ks(logits, labels, self.metric_ks)

        # Annealing beta
        if self.finding_best_beta:
            if self.current_best_metric < metrics[self.best_metric]:
                self.current_best_metric = metrics[self.best_metric]
                self.best_beta = self.__beta

        return metrics


class Args:
    device = 'cpu'
    num_gpu = 1
    num_epochs = 1
    metric_ks = [1, 5, 10]
    best_metric = 'NDCG@10'
    num_items = 40
    vae_latent_dim = 8
    vae_hidden_dim = 16
    vae_num_hidden = 1
    vae_dropout = 0.5
    find_best_beta = True
    total_anneal_steps = 2000
    anneal_cap = 0.2


def build_trainer():
    args = Args()
    model = VAEModel(args)
    return VAETrainer(args, model, None, None, None, None)


trainer = build_trainer()
trainer.calculate_loss = torch.compile(trainer.calculate_loss)


def make():
    torch.manual_seed(0)
    t = build_trainer()
    t.model.train()
    rows = [(torch.rand(40) < 0.2).float() for _ in range(4)]
    return t.calculate_loss, [(rows,), (rows[:3],)]
