"""AdamW and Muon written out explicitly, matching nanotrain's update rules.

Everything runs in the parameters' own dtype (float32 or float64); no bf16 anywhere,
so the float64 path can serve as a test oracle. Muon's variants (Polar Express, MuonEq,
Muon+ renormalisation, NorMuon, cautious weight decay, momentum schedule) and the AdamW
groups follow nanotrain's OptimConfig flags of the same names.
"""
import math

import torch

# Quintic Newton-Schulz coefficients: push every singular value of X towards ~1.
NS_COEFFS = (3.4445, -4.7750, 2.0315)
# Polar Express (Amsel et al. 2025): one polynomial per iteration, five iterations.
POLAR_EXPRESS = (
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
)

# AdamW groups: (lr at d_model 768, scales with (C/768)^-0.5, betas, weight decay); None for
# the embedding's and head's betas/decay means the shared beta1/beta2/weight_decay.
ADAM_GROUPS = {
    "embed": (0.2, True, None, None),
    "head": (0.004, True, None, None),
    "value_embed": (0.15, True, (0.8, 0.995), 0.01),
    "resid_lambdas": (0.005, False, (0.8, 0.95), 0.05),
    "x0_lambdas": (0.5, False, (0.96, 0.95), 0.0),
    "gates": (0.2, False, (0.8, 0.95), 0.0),
}


def default_hparams(d_model):
    """Optimizer defaults (nanotrain's OptimConfig after resolve, with betas as (b1, b2))."""
    scale = (d_model / 768) ** -0.5
    hp = {
        "lr_matrix": 0.02, "beta1": 0.8, "beta2": 0.95, "eps": 1e-10, "weight_decay": 0.0,
        "momentum": 0.95, "ns_steps": 5, "muon_coeffs": "quintic", "muon_eq": False,
        "muon_renorm": False, "normuon": False, "normuon_beta2": 0.9, "muon_wd": 0.0,
        "cautious_wd": False, "muon_wd_schedule": "cosine", "muon_momentum_warmup": 0,
        "muon_momentum_start": 0.85, "muon_momentum_final": -1.0,
    }
    for g, (lr, scaled, _, _) in ADAM_GROUPS.items():
        hp["lr_" + g] = lr * scale if scaled else lr
        hp["adam_betas_" + g] = None  # the group's default, filled by resolve_hparams
        hp["adam_wd_" + g] = -1.0
    return hp


def resolve_hparams(hp):
    """Fills each AdamW group's betas and decay where not given (in place); returns hp."""
    for g, (_, _, betas, wd) in ADAM_GROUPS.items():
        if hp["adam_betas_" + g] in (None, ""):
            hp["adam_betas_" + g] = betas or (hp["beta1"], hp["beta2"])
        elif isinstance(hp["adam_betas_" + g], str):
            text = hp["adam_betas_" + g]
            try:
                betas = tuple(float(x) for x in text.split(","))
            except ValueError:
                betas = ()
            if len(betas) != 2 or not all(0 <= b < 1 for b in betas):
                raise ValueError(f"adam_betas_{g} {text!r}: expected two numbers in [0, 1) separated by a comma")
            hp["adam_betas_" + g] = betas
        if hp["adam_wd_" + g] < 0:
            hp["adam_wd_" + g] = hp["weight_decay"] if wd is None else wd
    return hp


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


def newton_schulz(g, steps, coeffs="quintic"):
    """Approximately orthogonalise g (replace its singular values by ~1).

    Works on the wide orientation so X @ X.T is the smaller Gram matrix. coeffs: "quintic"
    (the same polynomial every iteration) or "polar-express" (one per iteration, at most 5).
    """
    if coeffs == "quintic":
        polys = [NS_COEFFS] * steps
    elif coeffs == "polar-express":
        if steps > len(POLAR_EXPRESS):
            raise ValueError(f"Polar Express has {len(POLAR_EXPRESS)} iterations, not {steps}")
        polys = POLAR_EXPRESS[:steps]
    else:
        raise ValueError(f"unknown Newton-Schulz coefficients {coeffs!r}")
    X = g
    transposed = X.size(0) > X.size(1)
    if transposed:
        X = X.T
    # The Frobenius norm bounds the top singular value by 1; Polar Express's steep first
    # polynomial wants a margin below 1.
    norm = torch.linalg.norm(X)
    X = X / (norm + 1e-7) if coeffs == "quintic" else X / (norm * 1.01 + 1e-6)
    for a, b, c in polys:
        A = X @ X.T
        Bm = b * A + c * (A @ A)
        X = a * X + Bm @ X
    return X.T if transposed else X


def row_equilibrate(X):
    """MuonEq: each row to the mean row norm |X|_F / sqrt(rows)."""
    target = torch.linalg.norm(X) / math.sqrt(X.size(0))
    rows = torch.linalg.norm(X, dim=1, keepdim=True).clamp_min(1e-6)
    return X * (target / rows)


def normuon(X, v, beta2):
    """NorMuon: v (rows, 1) for tall or square X, else (1, cols), an EMA of the mean square of
    X's rows (columns); X divided by sqrt(v) there, then rescaled to its own Frobenius norm.
    Updates v in place; returns the new X."""
    dim = 1 if X.size(0) >= X.size(1) else 0
    mean_sq = (X * X).mean(dim=dim, keepdim=True)
    v.mul_(beta2).add_(mean_sq, alpha=1 - beta2)
    Y = X / v.clamp_min(1e-10).sqrt()
    return Y * (torch.linalg.norm(X) / torch.linalg.norm(Y).clamp_min(1e-10))


class Muon:
    """Momentum (Nesterov) + Newton-Schulz orthogonalised update for 2-D matrices, with the
    optional variants of nanotrain's OptimConfig (hp keys of the same names)."""

    def __init__(self, params, lr=0.02, momentum=0.95, ns_steps=5, ns_dtype=None, hp=None):
        self.params = list(params)
        self.ns_dtype = ns_dtype  # None: the parameters' dtype; torch.bfloat16 as nanochat's Muon
        if any(p.dim() != 2 for p in self.params):
            raise ValueError("Muon only handles 2-D parameters")
        self.lr, self.momentum, self.ns_steps = lr, momentum, ns_steps
        self.hp = dict(default_hparams(768), **(hp or {}))
        self.buf = [torch.zeros_like(p) for p in self.params]
        # NorMuon's factored second moment: per row (tall or square) or per column.
        self.v = [p.new_zeros((p.size(0), 1) if p.size(0) >= p.size(1) else (1, p.size(1))) for p in self.params]
        self.t = 0

    def momentum_at(self, step, warmdown):
        """Momentum of step `step` (0-based) at `warmdown` of the LR warm-down done."""
        hp, mu = self.hp, self.momentum
        warm = int(hp["muon_momentum_warmup"])
        if step < warm:
            frac = step / warm
            return (1 - frac) * hp["muon_momentum_start"] + frac * mu
        if hp["muon_momentum_final"] >= 0 and warmdown > 0:
            return (1 - warmdown) * mu + warmdown * hp["muon_momentum_final"]
        return mu

    def wd_at(self, progress):
        wd = self.hp["muon_wd"]
        return wd if self.hp["muon_wd_schedule"] == "constant" else wd * 0.5 * (1 + math.cos(math.pi * progress))

    @torch.no_grad()
    def step(self, lrm=1.0, progress=0.0, warmdown=0.0):
        hp = self.hp
        mu = self.momentum_at(self.t, warmdown)
        wd = self.wd_at(progress)
        self.t += 1
        for p, buf, v in zip(self.params, self.buf, self.v):
            g = p.grad
            buf.mul_(mu).add_(g, alpha=1 - mu)
            u = (1 - mu) * g + mu * buf  # Nesterov look-ahead
            if hp["muon_eq"]:
                u = row_equilibrate(u)
            X = newton_schulz(u if self.ns_dtype is None else u.to(self.ns_dtype), self.ns_steps,
                              hp["muon_coeffs"]).to(p.dtype)
            rows, cols = p.shape
            if hp["muon_renorm"]:
                X = X * (math.sqrt(min(rows, cols)) / torch.linalg.norm(X).clamp_min(1e-6))
            if hp["normuon"]:
                X = normuon(X, v, hp["normuon_beta2"])
            # An orthogonalised X has entry RMS 1/sqrt(max(rows, cols)); the factor makes it
            # 1/sqrt(cols) for tall and wide matrices alike.
            lr = self.lr * lrm * math.sqrt(max(1.0, rows / cols))
            mask = (X * p >= 0).to(p.dtype) if hp["cautious_wd"] else 1.0
            p.sub_(lr * X + lr * wd * p * mask)


def param_group(name):
    """nanotrain's optimizer group of a parameter, from its (nanochat) name."""
    if name == "transformer.wte.weight":
        return "embed"
    if name == "lm_head.weight":
        return "head"
    if "value_embeds" in name:
        return "value_embed"
    if "resid_lambdas" in name:
        return "resid_lambdas"
    if "x0_lambdas" in name:
        return "x0_lambdas"
    if "smear" in name or "backout" in name:
        return "gates"
    if name.startswith("transformer.h.") and name.endswith(".weight"):
        return "matrix"
    raise ValueError(f"no optimizer group for parameter {name}")


class GPTOptimizer:
    """nanotrain's parameter groups: AdamW for each non-matrix group (its own lr, betas and
    decay), Muon (lr_matrix) for every 2-D matrix inside the transformer blocks. groups: name ->
    group (default: param_group of each name). ns_dtype: the Newton-Schulz precision (default:
    the parameters')."""

    def __init__(self, model, hparams=None, ns_dtype=None, groups=None):
        hp = default_hparams(model.config["d_model"])
        hp.update(hparams or {})
        if model.config.get("tie_embeddings", False) and "lr_embed" not in (hparams or {}):
            hp["lr_embed"] = hp["lr_head"]  # as resolve: the tied table takes the head's rate
        resolve_hparams(hp)
        named = dict(model.named_parameters())
        groups = groups or {n: param_group(n) for n in named}
        self.adam = {}
        for g in ADAM_GROUPS:
            params = [p for n, p in named.items() if groups[n] == g]
            if params:
                self.adam[g] = AdamW(params, hp["lr_" + g], hp["adam_betas_" + g], hp["eps"], hp["adam_wd_" + g])
        matrices = [p for n, p in named.items() if groups[n] == "matrix"]
        self.muon = Muon(matrices, hp["lr_matrix"], hp["momentum"], int(hp["ns_steps"]), ns_dtype, hp)
        self.params = list(named.values())

    def step(self, lrm=1.0, progress=0.0, warmdown=0.0):
        for opt in self.adam.values():
            opt.step(lrm)
        self.muon.step(lrm, progress, warmdown)

    def zero_grad(self):
        for p in self.params:
            p.grad = None
