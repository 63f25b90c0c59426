"""Latent-ODE repo's Classic_RNN baseline loss: `Baseline.compute_all_losses` runs `get_reconstruction` (extrapolation check on a tensor sum, `utils.check_mask` via `.cpu().numpy()`, `run_rnn` with a numpy coin flip for feeding back predictions) and the per-trajectory, per-dimension masked Gaussian likelihood and MSE loops.

Source: YuliaRubanova/latent_ode@a4ea11f2882652d62949b7926f0a851bef74063d:lib/rnn_baselines.py:25-300 (GRUCellExpDecay, input-decay helpers, run_rnn, Classic_RNN)
Source: YuliaRubanova/latent_ode@20316768029757b8deb836f0d678083ee0e0649c:lib/base_models.py:33-173 (Baseline)
Source: YuliaRubanova/latent_ode@a4ea11f2882652d62949b7926f0a851bef74063d:lib/likelihood_eval.py:20-264; lib/utils.py@53e701849ff527f2d6eb30a51100011037011f1a (helpers)
Kept: the helpers verbatim (split_last_dim, init_network_weights, get_device,
shift_outputs, check_mask, gaussian_log_likelihood, compute_masked_likelihood,
masked_gaussian_log_density, mse, compute_mse), run_rnn with its exp-decay and
input-decay branches, Classic_RNN.get_reconstruction and
Baseline.get_gaussian_likelihood / get_mse / compute_all_losses, called the way
run_models.py calls it (`model.compute_all_losses(batch_dict, n_traj_samples=3, kl_coef=...)`).
Simplified: `.byte()` masks written `.bool()` (masked_select rejects uint8 masks now);
classification and Poisson are off (their helpers are kept); 2 trajectories,
5 time points, 2 dims, latent 6, 16 units.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.modules.rnn import GRUCell, RNNCellBase
from torch.distributions.normal import Normal
from torch.distributions import kl_divergence, Independent


#-------------------------------- lib/utils.py --------------------------------#

def split_last_dim(data):
	last_dim = data.size()[-1]
	last_dim = last_dim//2

	if len(data.size()) == 3:
		res = data[:,:,:last_dim], data[:,:,last_dim:]

	if len(data.size()) == 2:
		res = data[:,:last_dim], data[:,last_dim:]
	return res


def init_network_weights(net, std = 0.1):
	for m in net.modules():
		if isinstance(m, nn.Linear):
			nn.init.normal_(m.weight, mean=0, std=std)
			nn.init.constant_(m.bias, val=0)


def get_device(tensor):
	device = torch.device("cpu")
	if tensor.is_cuda:
		device = tensor.get_device()
	return device


def sample_standard_gaussian(mu, sigma):
	device = get_device(mu)

	d = torch.distributions.normal.Normal(torch.Tensor([0.]).to(device), torch.Tensor([1.]).to(device))
	r = d.sample(mu.size()).squeeze(-1)
	return r * sigma.float() + mu.float()


def reverse(tensor):
	idx = [i for i in range(tensor.size(0)-1, -1, -1)]
	return tensor[idx]


def shift_outputs(outputs, first_datapoint = None):
	outputs = outputs[:,:,:-1,:]

	if first_datapoint is not None:
		n_traj, n_dims = first_datapoint.size()
		first_datapoint = first_datapoint.reshape(1, n_traj, 1, n_dims)
		outputs = torch.cat((first_datapoint, outputs), 2)
	return outputs


def check_mask(data, mask):
	#check that "mask" argument indeed contains a mask for data
	n_zeros = torch.sum(mask == 0.).cpu().numpy()
	n_ones = torch.sum(mask == 1.).cpu().numpy()

	# mask should contain only zeros and ones
	assert((n_zeros + n_ones) == np.prod(list(mask.size())))

	# all masked out elements should be zeros
	assert(torch.sum(data[mask == 0.] != 0.) == 0)


#---------------------------- lib/likelihood_eval.py ----------------------------#

def gaussian_log_likelihood(mu_2d, data_2d, obsrv_std, indices = None):
	n_data_points = mu_2d.size()[-1]

	if n_data_points > 0:
		gaussian = Independent(Normal(loc = mu_2d, scale = obsrv_std.repeat(n_data_points)), 1)
		log_prob = gaussian.log_prob(data_2d)
		log_prob = log_prob / n_data_points
	else:
		log_prob = torch.zeros([1]).to(get_device(data_2d)).squeeze()
	return log_prob


def poisson_log_likelihood(masked_log_lambdas, masked_data, indices, int_lambdas):
	# masked_log_lambdas and masked_data
	n_data_points = masked_data.size()[-1]

	if n_data_points > 0:
		log_prob = torch.sum(masked_log_lambdas) - int_lambdas[indices]
		#log_prob = log_prob / n_data_points
	else:
		log_prob = torch.zeros([1]).to(get_device(masked_data)).squeeze()
	return log_prob


def compute_binary_CE_loss(label_predictions, mortality_label):
	#print("Computing binary classification loss: compute_CE_loss")

	mortality_label = mortality_label.reshape(-1)

	if len(label_predictions.size()) == 1:
		label_predictions = label_predictions.unsqueeze(0)

	n_traj_samples = label_predictions.size(0)
	label_predictions = label_predictions.reshape(n_traj_samples, -1)

	idx_not_nan = 1 - torch.isnan(mortality_label)
	if len(idx_not_nan) == 0.:
		print("All are labels are NaNs!")
		ce_loss = torch.Tensor(0.).to(get_device(mortality_label))

	label_predictions = label_predictions[:,idx_not_nan]
	mortality_label = mortality_label[idx_not_nan]

	if torch.sum(mortality_label == 0.) == 0 or torch.sum(mortality_label == 1.) == 0:
		print("Warning: all examples in a batch belong to the same class -- please increase the batch size.")

	assert(not torch.isnan(label_predictions).any())
	assert(not torch.isnan(mortality_label).any())

	# For each trajectory, we get n_traj_samples samples from z0 -- compute loss on all of them
	mortality_label = mortality_label.repeat(n_traj_samples, 1)
	ce_loss = nn.BCEWithLogitsLoss()(label_predictions, mortality_label)

	# divide by number of patients in a batch
	ce_loss = ce_loss / n_traj_samples
	return ce_loss


def compute_multiclass_CE_loss(label_predictions, true_label, mask):
	#print("Computing multi-class classification loss: compute_multiclass_CE_loss")

	if (len(label_predictions.size()) == 3):
		label_predictions = label_predictions.unsqueeze(0)

	n_traj_samples, n_traj, n_tp, n_dims = label_predictions.size()

	# For each trajectory, we get n_traj_samples samples from z0 -- compute loss on all of them
	true_label = true_label.repeat(n_traj_samples, 1, 1)

	label_predictions = label_predictions.reshape(n_traj_samples * n_traj * n_tp, n_dims)
	true_label = true_label.reshape(n_traj_samples * n_traj * n_tp, n_dims)

	# choose time points with at least one measurement
	mask = torch.sum(mask, -1) > 0

	# repeat the mask for each label to mark that the label for this time point is present
	pred_mask = mask.repeat(n_dims, 1,1).permute(1,2,0)

	label_mask = mask
	pred_mask = pred_mask.repeat(n_traj_samples,1,1,1)
	label_mask = label_mask.repeat(n_traj_samples,1,1,1)

	pred_mask = pred_mask.reshape(n_traj_samples * n_traj * n_tp,  n_dims)
	label_mask = label_mask.reshape(n_traj_samples * n_traj * n_tp, 1)

	if (label_predictions.size(-1) > 1) and (true_label.size(-1) > 1):
		assert(label_predictions.size(-1) == true_label.size(-1))
		# targets are in one-hot encoding -- convert to indices
		_, true_label = true_label.max(-1)

	res = []
	for i in range(true_label.size(0)):
		pred_masked = torch.masked_select(label_predictions[i], pred_mask[i].bool())
		labels = torch.masked_select(true_label[i], label_mask[i].bool())

		pred_masked = pred_masked.reshape(-1, n_dims)

		if (len(labels) == 0):
			continue

		ce_loss = nn.CrossEntropyLoss()(pred_masked, labels.long())
		res.append(ce_loss)

	ce_loss = torch.stack(res, 0).to(get_device(label_predictions))
	ce_loss = torch.mean(ce_loss)
	# # divide by number of patients in a batch
	# ce_loss = ce_loss / n_traj_samples
	return ce_loss


def compute_masked_likelihood(mu, data, mask, likelihood_func):
	# Compute the likelihood per patient and per attribute so that we don't priorize patients with more measurements
	n_traj_samples, n_traj, n_timepoints, n_dims = data.size()

	res = []
	for i in range(n_traj_samples):
		for k in range(n_traj):
			for j in range(n_dims):
				data_masked = torch.masked_select(data[i,k,:,j], mask[i,k,:,j].bool())

				#assert(torch.sum(data_masked == 0.) < 10)

				mu_masked = torch.masked_select(mu[i,k,:,j], mask[i,k,:,j].bool())
				log_prob = likelihood_func(mu_masked, data_masked, indices = (i,k,j))
				res.append(log_prob)
	# shape: [n_traj*n_traj_samples, 1]

	res = torch.stack(res, 0).to(get_device(data))
	res = res.reshape((n_traj_samples, n_traj, n_dims))
	# Take mean over the number of dimensions
	res = torch.mean(res, -1) # !!!!!!!!!!! changed from sum to mean
	res = res.transpose(0,1)
	return res


def masked_gaussian_log_density(mu, data, obsrv_std, mask = None):
	# these cases are for plotting through plot_estim_density
	if (len(mu.size()) == 3):
		# add additional dimension for gp samples
		mu = mu.unsqueeze(0)

	if (len(data.size()) == 2):
		# add additional dimension for gp samples and time step
		data = data.unsqueeze(0).unsqueeze(2)
	elif (len(data.size()) == 3):
		# add additional dimension for gp samples
		data = data.unsqueeze(0)

	n_traj_samples, n_traj, n_timepoints, n_dims = mu.size()

	assert(data.size()[-1] == n_dims)

	# Shape after permutation: [n_traj, n_traj_samples, n_timepoints, n_dims]
	if mask is None:
		mu_flat = mu.reshape(n_traj_samples*n_traj, n_timepoints * n_dims)
		n_traj_samples, n_traj, n_timepoints, n_dims = data.size()
		data_flat = data.reshape(n_traj_samples*n_traj, n_timepoints * n_dims)

		res = gaussian_log_likelihood(mu_flat, data_flat, obsrv_std)
		res = res.reshape(n_traj_samples, n_traj).transpose(0,1)
	else:
		# Compute the likelihood per patient so that we don't priorize patients with more measurements
		func = lambda mu, data, indices: gaussian_log_likelihood(mu, data, obsrv_std = obsrv_std, indices = indices)
		res = compute_masked_likelihood(mu, data, mask, func)
	return res


def mse(mu, data, indices = None):
	n_data_points = mu.size()[-1]

	if n_data_points > 0:
		mse = nn.MSELoss()(mu, data)
	else:
		mse = torch.zeros([1]).to(get_device(data)).squeeze()
	return mse


def compute_mse(mu, data, mask = None):
	# these cases are for plotting through plot_estim_density
	if (len(mu.size()) == 3):
		# add additional dimension for gp samples
		mu = mu.unsqueeze(0)

	if (len(data.size()) == 2):
		# add additional dimension for gp samples and time step
		data = data.unsqueeze(0).unsqueeze(2)
	elif (len(data.size()) == 3):
		# add additional dimension for gp samples
		data = data.unsqueeze(0)

	n_traj_samples, n_traj, n_timepoints, n_dims = mu.size()
	assert(data.size()[-1] == n_dims)

	# Shape after permutation: [n_traj, n_traj_samples, n_timepoints, n_dims]
	if mask is None:
		mu_flat = mu.reshape(n_traj_samples*n_traj, n_timepoints * n_dims)
		n_traj_samples, n_traj, n_timepoints, n_dims = data.size()
		data_flat = data.reshape(n_traj_samples*n_traj, n_timepoints * n_dims)
		res = mse(mu_flat, data_flat)
	else:
		# Compute the likelihood per patient so that we don't priorize patients with more measurements
		res = compute_masked_likelihood(mu, data, mask, mse)
	return res



def compute_poisson_proc_likelihood(truth, pred_y, info, mask = None):
	# Compute Poisson likelihood
	# https://math.stackexchange.com/questions/344487/log-likelihood-of-a-realization-of-a-poisson-process
	# Sum log lambdas across all time points
	if mask is None:
		poisson_log_l = torch.sum(info["log_lambda_y"], 2) - info["int_lambda"]
		# Sum over data dims
		poisson_log_l = torch.mean(poisson_log_l, -1) #!!!!!!!!!!!
		# Take mean over n_traj
		#poisson_log_l = torch.mean(poisson_log_l, 1)
	else:
		# Compute likelihood of the data under the predictions
		truth_repeated = truth.repeat(pred_y.size(0), 1, 1, 1)
		mask_repeated = mask.repeat(pred_y.size(0), 1, 1, 1)

		# Compute the likelihood per patient and per attribute so that we don't priorize patients with more measurements
		int_lambda = info["int_lambda"]
		f = lambda log_lam, data, indices: poisson_log_likelihood(log_lam, data, indices, int_lambda)
		poisson_log_l = compute_masked_likelihood(info["log_lambda_y"], truth_repeated, mask_repeated, f)
		poisson_log_l = poisson_log_l.permute(1,0)
		# Take mean over n_traj
		#poisson_log_l = torch.mean(poisson_log_l, 1)

	# poisson_log_l shape: [n_traj_samples, n_traj]
	return poisson_log_l


#----------------------------- lib/rnn_baselines.py -----------------------------#

class GRUCellExpDecay(RNNCellBase):
	def __init__(self, input_size, input_size_for_decay, hidden_size, device, bias=True):
		super(GRUCellExpDecay, self).__init__(input_size, hidden_size, bias, num_chunks=3)

		self.device = device
		self.input_size_for_decay = input_size_for_decay
		self.decay = nn.Sequential(nn.Linear(input_size_for_decay, 1),)
		init_network_weights(self.decay)

	def gru_exp_decay_cell(self, input, hidden, w_ih, w_hh, b_ih, b_hh):
		# INPORTANT: assumes that cum delta t is the last dimension of the input
		batch_size, n_dims = input.size()

		# "input" contains the data, mask and also cumulative deltas for all inputs
		cum_delta_ts = input[:, -self.input_size_for_decay:]
		data = input[:, :-self.input_size_for_decay]

		decay = torch.exp( - torch.min(torch.max(
			torch.zeros([1]).to(self.device), self.decay(cum_delta_ts)),
			torch.ones([1]).to(self.device) * 1000 ))

		hidden = hidden * decay

		gi = torch.mm(data, w_ih.t()) + b_ih
		gh = torch.mm(hidden, w_hh.t()) + b_hh
		i_r, i_i, i_n = gi.chunk(3, 1)
		h_r, h_i, h_n = gh.chunk(3, 1)

		resetgate = torch.sigmoid(i_r + h_r)
		inputgate = torch.sigmoid(i_i + h_i)
		newgate = torch.tanh(i_n + resetgate * h_n)
		hy = newgate + inputgate * (hidden - newgate)
		return hy

	def forward(self, input, hx=None):
		# type: (Tensor, Optional[Tensor]) -> Tensor
		#self.check_forward_input(input)
		if hx is None:
			hx = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
		#self.check_forward_hidden(input, hx, '')

		return self.gru_exp_decay_cell(
			input, hx,
			self.weight_ih, self.weight_hh,
			self.bias_ih, self.bias_hh
		)


def get_cum_delta_ts(data, delta_ts, mask):
	n_traj, n_tp, n_dims = data.size()

	cum_delta_ts = delta_ts.repeat(1, 1, n_dims)
	missing_index = np.where(mask.cpu().numpy() == 0)

	for idx in range(missing_index[0].shape[0]):
		i = missing_index[0][idx]
		j = missing_index[1][idx]
		k = missing_index[2][idx]

		if j != 0 and j != (n_tp-1):
			cum_delta_ts[i,j+1,k] = cum_delta_ts[i,j+1,k] + cum_delta_ts[i,j,k]
	cum_delta_ts = cum_delta_ts / cum_delta_ts.max() # normalize

	return cum_delta_ts


def impute_using_input_decay(data, delta_ts, mask, w_input_decay, b_input_decay):
	n_traj, n_tp, n_dims = data.size()

	cum_delta_ts = delta_ts.repeat(1, 1, n_dims)
	missing_index = np.where(mask.cpu().numpy() == 0)

	data_last_obsv = np.copy(data.cpu().numpy())
	for idx in range(missing_index[0].shape[0]):
		i = missing_index[0][idx]
		j = missing_index[1][idx]
		k = missing_index[2][idx]

		if j != 0 and j != (n_tp-1):
			cum_delta_ts[i,j+1,k] = cum_delta_ts[i,j+1,k] + cum_delta_ts[i,j,k]
		if j != 0:
			data_last_obsv[i,j,k] = data_last_obsv[i,j-1,k] # last observation
	cum_delta_ts = cum_delta_ts / cum_delta_ts.max() # normalize

	data_last_obsv = torch.Tensor(data_last_obsv).to(get_device(data))

	zeros = torch.zeros([n_traj, n_tp, n_dims]).to(get_device(data))
	decay = torch.exp( - torch.min( torch.max(zeros,
		w_input_decay * cum_delta_ts + b_input_decay), zeros + 1000 ))

	data_means = torch.mean(data, 1).unsqueeze(1)

	data_imputed = data * mask + (1-mask) * (decay * data_last_obsv + (1-decay) * data_means)
	return data_imputed


def run_rnn(inputs, delta_ts, cell, first_hidden=None,
	mask = None, feed_previous=False, n_steps=0,
	decoder = None, input_decay_params = None,
	feed_previous_w_prob = 0.,
	masked_update = True):
	if (feed_previous or feed_previous_w_prob) and decoder is None:
		raise Exception("feed_previous is set to True -- please specify RNN decoder")

	if n_steps == 0:
		n_steps = inputs.size(1)

	if (feed_previous or feed_previous_w_prob) and mask is None:
		mask = torch.ones((inputs.size(0), n_steps, inputs.size(-1))).to(get_device(inputs))

	if isinstance(cell, GRUCellExpDecay):
		cum_delta_ts = get_cum_delta_ts(inputs, delta_ts, mask)

	if input_decay_params is not None:
		w_input_decay, b_input_decay = input_decay_params
		inputs = impute_using_input_decay(inputs, delta_ts, mask,
			w_input_decay, b_input_decay)

	all_hiddens = []
	hidden = first_hidden

	if hidden is not None:
		all_hiddens.append(hidden)
		n_steps -= 1

	for i in range(n_steps):
		delta_t = delta_ts[:,i]
		if i == 0:
			rnn_input = inputs[:,i]
		elif feed_previous:
			rnn_input = decoder(hidden)
		elif feed_previous_w_prob > 0:
			feed_prev = np.random.uniform() > feed_previous_w_prob
			if feed_prev:
				rnn_input = decoder(hidden)
			else:
				rnn_input = inputs[:,i]
		else:
			rnn_input = inputs[:,i]

		if mask is not None:
			mask_i = mask[:,i,:]
			rnn_input = torch.cat((rnn_input, mask_i), -1)

		if isinstance(cell, GRUCellExpDecay):
			cum_delta_t = cum_delta_ts[:,i]
			input_w_t = torch.cat((rnn_input, cum_delta_t), -1).squeeze(1)
		else:
			input_w_t = torch.cat((rnn_input, delta_t), -1).squeeze(1)

		prev_hidden = hidden
		hidden = cell(input_w_t, hidden)

		if masked_update and (mask is not None) and (prev_hidden is not None):
			# update only the hidden states for hidden state only if at least one feature is present for the current time point
			summed_mask = (torch.sum(mask_i, -1, keepdim = True) > 0).float()
			assert(not torch.isnan(summed_mask).any())
			hidden = summed_mask * hidden + (1-summed_mask) * prev_hidden

		all_hiddens.append(hidden)

	all_hiddens = torch.stack(all_hiddens, 0)
	all_hiddens = all_hiddens.permute(1,0,2).unsqueeze(0)
	return hidden, all_hiddens


def create_classifier(z0_dim, n_labels):
	return nn.Sequential(
			nn.Linear(z0_dim, 300),
			nn.ReLU(),
			nn.Linear(300, 300),
			nn.ReLU(),
			nn.Linear(300, n_labels),)


class Baseline(nn.Module):
	def __init__(self, input_dim, latent_dim, device,
		obsrv_std = 0.01, use_binary_classif = False,
		classif_per_tp = False,
		use_poisson_proc = False,
		linear_classifier = False,
		n_labels = 1,
		train_classif_w_reconstr = False):
		super(Baseline, self).__init__()

		self.input_dim = input_dim
		self.latent_dim = latent_dim
		self.n_labels = n_labels

		self.obsrv_std = torch.tensor([obsrv_std]).to(device)
		self.device = device

		self.use_binary_classif = use_binary_classif
		self.classif_per_tp = classif_per_tp
		self.use_poisson_proc = use_poisson_proc
		self.linear_classifier = linear_classifier
		self.train_classif_w_reconstr = train_classif_w_reconstr

		z0_dim = latent_dim
		if use_poisson_proc:
			z0_dim += latent_dim

		if use_binary_classif:
			if linear_classifier:
				self.classifier = nn.Sequential(
					nn.Linear(z0_dim, n_labels))
			else:
				self.classifier = create_classifier(z0_dim, n_labels)
			init_network_weights(self.classifier)


	def get_gaussian_likelihood(self, truth, pred_y, mask = None):
		# pred_y shape [n_traj_samples, n_traj, n_tp, n_dim]
		# truth shape  [n_traj, n_tp, n_dim]
		if mask is not None:
			mask = mask.repeat(pred_y.size(0), 1, 1, 1)

		# Compute likelihood of the data under the predictions
		log_density_data = masked_gaussian_log_density(pred_y, truth,
			obsrv_std = self.obsrv_std, mask = mask)
		log_density_data = log_density_data.permute(1,0)

		# Compute the total density
		# Take mean over n_traj_samples
		log_density = torch.mean(log_density_data, 0)

		# shape: [n_traj]
		return log_density


	def get_mse(self, truth, pred_y, mask = None):
		# pred_y shape [n_traj_samples, n_traj, n_tp, n_dim]
		# truth shape  [n_traj, n_tp, n_dim]
		if mask is not None:
			mask = mask.repeat(pred_y.size(0), 1, 1, 1)

		# Compute likelihood of the data under the predictions
		log_density_data = compute_mse(pred_y, truth, mask = mask)
		# shape: [1]
		return torch.mean(log_density_data)


	def compute_all_losses(self, batch_dict,
		n_tp_to_sample = None, n_traj_samples = 1, kl_coef = 1.):

		# Condition on subsampled points
		# Make predictions for all the points
		pred_x, info = self.get_reconstruction(batch_dict["tp_to_predict"],
			batch_dict["observed_data"], batch_dict["observed_tp"],
			mask = batch_dict["observed_mask"], n_traj_samples = n_traj_samples,
			mode = batch_dict["mode"])

		# Compute likelihood of all the points
		likelihood = self.get_gaussian_likelihood(batch_dict["data_to_predict"], pred_x,
			mask = batch_dict["mask_predicted_data"])

		mse = self.get_mse(batch_dict["data_to_predict"], pred_x,
			mask = batch_dict["mask_predicted_data"])

		################################
		# Compute CE loss for binary classification on Physionet
		# Use only last attribute -- mortatility in the hospital
		device = get_device(batch_dict["data_to_predict"])
		ce_loss = torch.tensor([0.]).to(device)

		if (batch_dict["labels"] is not None) and self.use_binary_classif:
			if (batch_dict["labels"].size(-1) == 1) or (len(batch_dict["labels"].size()) == 1):
				ce_loss = compute_binary_CE_loss(
					info["label_predictions"],
					batch_dict["labels"])
			else:
				ce_loss = compute_multiclass_CE_loss(
					info["label_predictions"],
					batch_dict["labels"],
					mask = batch_dict["mask_predicted_data"])

			if torch.isnan(ce_loss):
				print("label pred")
				print(info["label_predictions"])
				print("labels")
				print( batch_dict["labels"])
				raise Exception("CE loss is Nan!")

		pois_log_likelihood = torch.tensor([0.]).to(get_device(batch_dict["data_to_predict"]))
		if self.use_poisson_proc:
			pois_log_likelihood = compute_poisson_proc_likelihood(
				batch_dict["data_to_predict"], pred_x,
				info, mask = batch_dict["mask_predicted_data"])
			# Take mean over n_traj
			pois_log_likelihood = torch.mean(pois_log_likelihood, 1)

		loss = - torch.mean(likelihood)

		if self.use_poisson_proc:
			loss = loss - 0.1 * pois_log_likelihood

		if self.use_binary_classif:
			if self.train_classif_w_reconstr:
				loss = loss +  ce_loss * 100
			else:
				loss =  ce_loss

		# Take mean over the number of samples in a batch
		results = {}
		results["loss"] = torch.mean(loss)
		results["likelihood"] = torch.mean(likelihood).detach()
		results["mse"] = torch.mean(mse).detach()
		results["pois_likelihood"] = torch.mean(pois_log_likelihood).detach()
		results["ce_loss"] = torch.mean(ce_loss).detach()
		results["kl"] = 0.
		results["kl_first_p"] =  0.
		results["std_first_p"] = 0.

		if batch_dict["labels"] is not None and self.use_binary_classif:
			results["label_predictions"] = info["label_predictions"].detach()
		return results


class Classic_RNN(Baseline):
	def __init__(self, input_dim, latent_dim, device,
		concat_mask = False, obsrv_std = 0.1,
		use_binary_classif = False,
		linear_classifier = False,
		classif_per_tp = False,
		input_space_decay = False,
		cell = "gru", n_units = 100,
		n_labels = 1,
		train_classif_w_reconstr = False):

		super(Classic_RNN, self).__init__(input_dim, latent_dim, device,
			obsrv_std = obsrv_std,
			use_binary_classif = use_binary_classif,
			classif_per_tp = classif_per_tp,
			linear_classifier = linear_classifier,
			n_labels = n_labels,
			train_classif_w_reconstr = train_classif_w_reconstr)

		self.concat_mask = concat_mask

		encoder_dim = int(input_dim)
		if concat_mask:
			encoder_dim = encoder_dim * 2

		self.decoder = nn.Sequential(
			nn.Linear(latent_dim, n_units),
			nn.Tanh(),
			nn.Linear(n_units, input_dim),)

		#utils.init_network_weights(self.encoder)
		init_network_weights(self.decoder)

		if cell == "gru":
			self.rnn_cell = GRUCell(encoder_dim + 1, latent_dim) # +1 for delta t
		elif cell == "expdecay":
			self.rnn_cell = GRUCellExpDecay(
				input_size = encoder_dim,
				input_size_for_decay = input_dim,
				hidden_size = latent_dim,
				device = device)
		else:
			raise Exception("Unknown RNN cell: {}".format(cell))

		if input_space_decay:
			self.w_input_decay =  nn.Parameter(torch.Tensor(1, int(input_dim))).to(self.device)
			self.b_input_decay =  nn.Parameter(torch.Tensor(1, int(input_dim))).to(self.device)
		self.input_space_decay = input_space_decay

		self.z0_net = lambda hidden_state: hidden_state


	def get_reconstruction(self, time_steps_to_predict, data, truth_time_steps,
		mask = None, n_traj_samples = 1, mode = None):

		assert(mask is not None)
		n_traj, n_tp, n_dims = data.size()

		if (len(truth_time_steps) != len(time_steps_to_predict)) or (torch.sum(time_steps_to_predict - truth_time_steps) != 0):
			raise Exception("Extrapolation mode not implemented for RNN models")

		# for classic RNN time_steps_to_predict should be the same as  truth_time_steps
		assert(len(truth_time_steps) == len(time_steps_to_predict))

		batch_size = data.size(0)
		zero_delta_t = torch.Tensor([0.]).to(self.device)

		delta_ts = truth_time_steps[1:] - truth_time_steps[:-1]
		delta_ts = torch.cat((delta_ts, zero_delta_t))
		if len(delta_ts.size()) == 1:
			# delta_ts are shared for all trajectories in a batch
			assert(data.size(1) == delta_ts.size(0))
			delta_ts = delta_ts.unsqueeze(-1).repeat((batch_size,1,1))

		input_decay_params = None
		if self.input_space_decay:
			input_decay_params = (self.w_input_decay, self.b_input_decay)

		if mask is not None:
			check_mask(data, mask)

		hidden_state, all_hiddens = run_rnn(data, delta_ts,
			cell = self.rnn_cell, mask = mask,
			input_decay_params = input_decay_params,
			feed_previous_w_prob = (0. if self.use_binary_classif else 0.5),
			decoder = self.decoder)

		outputs = self.decoder(all_hiddens)
		# Shift outputs for computing the loss -- we should compare the first output to the second data point, etc.
		first_point = data[:,0,:]
		outputs = shift_outputs(outputs, first_point)

		extra_info = {"first_point": (hidden_state.unsqueeze(0), 0.0, hidden_state.unsqueeze(0))}

		if self.use_binary_classif:
			if self.classif_per_tp:
				extra_info["label_predictions"] = self.classifier(all_hiddens)
			else:
				extra_info["label_predictions"] = self.classifier(hidden_state).reshape(1,-1)

		# outputs shape: [n_traj_samples, n_traj, n_tp, n_dims]
		return outputs, extra_info


def build_model(device=torch.device("cpu")):
	model = Classic_RNN(2, 6, device, concat_mask = True, obsrv_std = 0.01,
		cell = "gru", n_units = 16, input_space_decay = False)
	return model, torch.compile(model.compute_all_losses)


def make():
	torch.manual_seed(0)
	device = torch.device("cpu")
	model = Classic_RNN(2, 6, device, concat_mask = True, obsrv_std = 0.01,
		cell = "gru", n_units = 16, input_space_decay = False)
	time_steps = torch.tensor([0.0, 0.2, 0.5, 0.7, 1.0])
	mask = torch.ones(2, 5, 2)
	mask[0, 1, 0] = 0.
	mask[1, 2, :] = 0.
	mask[1, 3, 1] = 0.
	data = torch.randn(2, 5, 2) * mask
	batch_dict = {
		"observed_data": data.clone(),
		"observed_tp": time_steps.clone(),
		"data_to_predict": data.clone(),
		"tp_to_predict": time_steps.clone(),
		"observed_mask": mask.clone(),
		"mask_predicted_data": mask.clone(),
		"labels": None,
		"mode": "interp",
	}
	return model.compute_all_losses, [(batch_dict, None, 3, 1.)]
