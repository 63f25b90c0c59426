"""minimalRL PPO update: `make_batch` turns the stored transitions (numpy states, python ints/floats, `0 if done else 1` masks) into tensors with `torch.tensor(list)`, then K_epoch passes of TD targets, GAE computed in numpy from `delta.detach().numpy()` with a reversed python loop, clipped surrogate plus smooth-L1 value loss, zero_grad/backward/step.

Source: seungeunrho/minimalRL@c8efed8481e3cd40e9739cfde220a55522555b57:ppo.py:1-83
Also: ppo.py:85-113 (main: `model.put_data((s, a, r/100.0, s_prime, prob[a].item(), done))`, then
`model.train_net()` every T_horizon steps).
Kept: hyperparameters, the PPO class (pi, v, put_data, make_batch, train_net) verbatim.
Simplified: no gym; make() stores 8 CartPole-shaped transitions (numpy float64 states, one done)
the way main() does; train_net is compiled with `model.train_net = torch.compile(model.train_net)`.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

#Hyperparameters
learning_rate = 0.0005
gamma         = 0.98
lmbda         = 0.95
eps_clip      = 0.1
K_epoch       = 3
T_horizon     = 20

class PPO(nn.Module):
    def __init__(self):
        super(PPO, self).__init__()
        self.data = []
        
        self.fc1   = nn.Linear(4,256)
        self.fc_pi = nn.Linear(256,2)
        self.fc_v  = nn.Linear(256,1)
        self.optimizer = optim.Adam(self.parameters(), lr=learning_rate)

    def pi(self, x, softmax_dim = 0):
        x = F.relu(self.fc1(x))
        x = self.fc_pi(x)
        prob = F.softmax(x, dim=softmax_dim)
        return prob
    
    def v(self, x):
        x = F.relu(self.fc1(x))
        v = self.fc_v(x)
        return v
      
    def put_data(self, transition):
        self.data.append(transition)
        
    def make_batch(self):
        s_lst, a_lst, r_lst, s_prime_lst, prob_a_lst, done_lst = [], [], [], [], [], []
        for transition in self.data:
            s, a, r, s_prime, prob_a, done = transition
            
            s_lst.append(s)
            a_lst.append([a])
            r_lst.append([r])
            s_prime_lst.append(s_prime)
            prob_a_lst.append([prob_a])
            done_mask = 0 if done else 1
            done_lst.append([done_mask])
            
        s,a,r,s_prime,done_mask, prob_a = torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst), \
                                          torch.tensor(r_lst), torch.tensor(s_prime_lst, dtype=torch.float), \
                                          torch.tensor(done_lst, dtype=torch.float), torch.tensor(prob_a_lst)
        self.data = []
        return s, a, r, s_prime, done_mask, prob_a
        
    def train_net(self):
        s, a, r, s_prime, done_mask, prob_a = self.make_batch()

        for i in range(K_epoch):
            td_target = r + gamma * self.v(s_prime) * done_mask
            delta = td_target - self.v(s)
            delta = delta.detach().numpy()

            advantage_lst = []
            advantage = 0.0
            for delta_t in delta[::-1]:
                advantage = gamma * lmbda * advantage + delta_t[0]
                advantage_lst.append([advantage])
            advantage_lst.reverse()
            advantage = torch.tensor(advantage_lst, dtype=torch.float)

            pi = self.pi(s, softmax_dim=1)
            pi_a = pi.gather(1,a)
            ratio = torch.exp(torch.log(pi_a) - torch.log(prob_a))  # a/b == exp(log(a)-log(b))

            surr1 = ratio * advantage
            surr2 = torch.clamp(ratio, 1-eps_clip, 1+eps_clip) * advantage
            loss = -torch.min(surr1, surr2) + F.smooth_l1_loss(self.v(s) , td_target.detach())

            self.optimizer.zero_grad()

def collect(model, n=8):
    rng = np.random.RandomState(0)
    s = rng.randn(4) * 0.05
    for t in range(n):
        prob = model.pi(torch.from_numpy(s).float())
        a = int(rng.rand() < 0.5)
        s_prime = s + rng.randn(4) * 0.05
        done = t == n - 1
        model.put_data((s, a, 1.0/100.0, s_prime, prob[a].item(), done))
        s = s_prime


def main():
    model = PPO()
    model.train_net = torch.compile(model.train_net)
    for _ in range(2):
        collect(model)
        model.train_net()


def make():
    torch.manual_seed(0)
    model = PPO()
    collect(model)
    return model.train_net, [()]
