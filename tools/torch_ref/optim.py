"""AdamW and Muon written out explicitly, matching nanotrain's update rules.

Everything runs in the parameters' own dtype (float32 or float64); no bf16 anywhere,
so the float64 path can serve as a test oracle.
"""
import math

import torch

# Quintic Newton-Schulz coefficients: push every singular value of X towards ~1.
NS_COEFFS = (3.4445, -4.7750, 2.0315)


def default_hparams(d_model):
    """Optimizer defaults; the embedding/head learning rates scale as (C/768)^-0.5."""
    scale = (d_model / 768) ** -0.5
    return {
        "lr_matrix": 0.02, "lr_embed": 0.2 * scale, "lr_head": 0.004 * scale,
        "beta1": 0.8, "beta2": 0.95, "eps": 1e-10, "weight_decay": 0.0,
        "momentum": 0.95, "ns_steps": 5,
    }


class AdamW:
    """Bias-corrected Adam with decoupled weight decay (applied before the Adam update)."""

    def __init__(self, params, lr, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0):
        self.params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, lrm=1.0):
        self.t += 1
        lr = self.lr * lrm
        bc1 = 1 - self.beta1 ** self.t
        bc2 = 1 - self.beta2 ** self.t
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            if self.weight_decay:
                p.mul_(1 - lr * self.weight_decay)
            m.mul_(self.beta1).add_(g, alpha=1 - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            p.sub_(lr * (m / bc1) / (torch.sqrt(v / bc2) + self.eps))


def newton_schulz(g, steps):
    """Approximately orthogonalise g (replace its singular values by ~1).

    Works on the wide orientation so X @ X.T is the smaller Gram matrix.
    """
    a, b, c = NS_COEFFS
    X = g
    transposed = X.size(0) > X.size(1)
    if transposed:
        X = X.T
    X = X / (torch.linalg.norm(X) + 1e-7)  # Frobenius norm bounds the top singular value by 1
    for _ in range(steps):
        A = X @ X.T
        Bm = b * A + c * (A @ A)
        X = a * X + Bm @ X
    return X.T if transposed else X


class Muon:
    """Momentum (Nesterov) + Newton-Schulz orthogonalised update for 2-D matrices."""

    def __init__(self, params, lr=0.02, momentum=0.95, ns_steps=5, ns_dtype=None):
        self.params = list(params)
        self.ns_dtype = ns_dtype  # None: the parameters' dtype; torch.bfloat16 as nanochat's Muon
        if any(p.dim() != 2 for p in self.params):
            raise ValueError("Muon only handles 2-D parameters")
        self.lr, self.momentum, self.ns_steps = lr, momentum, ns_steps
        self.buf = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, lrm=1.0):
        mu = self.momentum
        for p, buf in zip(self.params, self.buf):
            g = p.grad
            buf.mul_(mu).add_(g, alpha=1 - mu)
            u = (1 - mu) * g + mu * buf  # Nesterov look-ahead
            X = newton_schulz(u if self.ns_dtype is None else u.to(self.ns_dtype), self.ns_steps).to(p.dtype)
            rows, cols = p.shape
            # An orthogonalised X has entry RMS 1/sqrt(max(rows, cols)); the factor makes it
            # 1/sqrt(cols) for tall and wide matrices alike.
            p.sub_(X, alpha=self.lr * lrm * math.sqrt(max(1.0, rows / cols)))


class GPTOptimizer:
    """nanotrain's parameter groups: AdamW for wte (lr_embed) and lm_head (lr_head),
    Muon (lr_matrix) for every 2-D matrix inside the transformer blocks. ns_dtype: the
    Newton-Schulz precision (default: the parameters')."""

    def __init__(self, model, hparams=None, ns_dtype=None):
        hp = default_hparams(model.config["d_model"])
        hp.update(hparams or {})
        named = dict(model.named_parameters())
        adam = dict(betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"], weight_decay=hp["weight_decay"])
        self.embed = AdamW([named["transformer.wte.weight"]], hp["lr_embed"], **adam)
        self.head = AdamW([named["lm_head.weight"]], hp["lr_head"], **adam)
        matrices = [p for n, p in named.items() if n.startswith("transformer.h.")]
        self.muon = Muon(matrices, hp["lr_matrix"], hp["momentum"], int(hp["ns_steps"]), ns_dtype)
        self.params = list(named.values())

    def step(self, lrm=1.0):
        for opt in (self.embed, self.head, self.muon):
            opt.step(lrm)

    def zero_grad(self):
        for p in self.params:
            p.grad = None
