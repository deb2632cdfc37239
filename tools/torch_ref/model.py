"""Reference GPT in plain PyTorch, written to match nanotrain's model definition.

torch 1.13 has neither F.scaled_dot_product_attention nor F.rms_norm, so attention
and RMSNorm are written out by hand.  Parameter names (from named_parameters())
are exactly the safetensors tensor names nanotrain uses.
"""
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

_INT_KEYS = ("depth", "d_model", "n_head", "n_kv_head", "head_dim", "seq_len", "vocab_size")
_FLOAT_DEFAULTS = {"rope_base": 10000.0, "softcap": 15.0, "norm_eps": 1e-6}


def parse_config(raw):
    """Normalise a config (dict or JSON string) to a dict of ints/floats; ValueError if invalid.

    Values may be JSON numbers or numeric strings.  n_kv_head defaults to n_head.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(f"config is not valid JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ValueError("config must be a JSON object")
    raw = dict(raw)
    raw.setdefault("n_kv_head", raw.get("n_head"))
    cfg = {}
    for key in _INT_KEYS:
        if raw.get(key) is None:
            raise ValueError(f"config is missing '{key}'")
        try:
            value = float(raw[key])
        except (TypeError, ValueError):
            raise ValueError(f"config '{key}' is not a number: {raw[key]!r}") from None
        if value != int(value) or value < 1:
            raise ValueError(f"config '{key}' must be a positive integer, got {raw[key]!r}")
        cfg[key] = int(value)
    for key, default in _FLOAT_DEFAULTS.items():
        try:
            cfg[key] = float(raw.get(key, default))
        except (TypeError, ValueError):
            raise ValueError(f"config '{key}' is not a number: {raw[key]!r}") from None
        if not cfg[key] > 0:
            raise ValueError(f"config '{key}' must be > 0, got {raw[key]!r}")
    if cfg["n_head"] % cfg["n_kv_head"]:
        raise ValueError("config n_kv_head must divide n_head")
    if cfg["head_dim"] % 2:
        raise ValueError("config head_dim must be even (rotary splits it in halves)")
    return cfg


def rms_norm(x, eps):
    """x / sqrt(mean(x^2) + eps) over the last dim; no learnable weight."""
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def rotary_tables(seq_len, head_dim, base):
    """cos/sin of angle[t, j] = t * base^(-2j/D), shape (seq_len, D/2), computed in float64."""
    j = torch.arange(head_dim // 2, dtype=torch.float64)
    inv_freq = base ** (-2.0 * j / head_dim)
    angle = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angle.cos(), angle.sin()


def apply_rotary(x, cos, sin):
    """Half-split rotary on x (B, T, heads, D); cos/sin are (T, D/2)."""
    d = x.size(-1) // 2
    x1, x2 = x[..., :d], x[..., d:]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat((x1 * cos + x2 * sin, -x1 * sin + x2 * cos), dim=-1)


def causal_attention(q, k, v):
    """Causal softmax attention with grouped KV heads.

    q: (B, H, T, D); k, v: (B, KVH, T, D).  Query head h reads KV head h // (H // KVH):
    viewing q as (B, KVH, G, T, D) puts head h = kvh * G + g at [kvh, g], so k/v only
    need a broadcast dimension, not an explicit repeat.
    """
    B, H, T, D = q.shape
    kvh = k.size(1)
    q = q.reshape(B, kvh, H // kvh, T, D)
    scores = (q @ k.unsqueeze(2).transpose(-1, -2)) * (1.0 / math.sqrt(D))
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    att = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    return (att @ v.unsqueeze(2)).reshape(B, H, T, D)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, D = cfg["d_model"], cfg["head_dim"]
        self.n_head, self.n_kv_head, self.head_dim = cfg["n_head"], cfg["n_kv_head"], D
        self.eps = cfg["norm_eps"]
        self.c_q = nn.Linear(C, self.n_head * D, bias=False)
        self.c_k = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_v = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_proj = nn.Linear(self.n_head * D, C, bias=False)

    def forward(self, u, cos, sin):
        B, T, _ = u.shape
        q = self.c_q(u).view(B, T, self.n_head, self.head_dim)
        k = self.c_k(u).view(B, T, self.n_kv_head, self.head_dim)
        v = self.c_v(u).view(B, T, self.n_kv_head, self.head_dim)
        # Rotary, then QK-norm, as nanotrain defines it.  Rotation preserves each head's
        # norm, so the order only matters at rounding level.
        q = rms_norm(apply_rotary(q, cos, sin), self.eps)
        k = rms_norm(apply_rotary(k, cos, sin), self.eps)
        y = causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.c_proj(y.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["d_model"]
        self.c_fc = nn.Linear(C, 4 * C, bias=False)
        self.c_proj = nn.Linear(4 * C, C, bias=False)

    def forward(self, u):
        return self.c_proj(F.relu(self.c_fc(u)).square())


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.eps = cfg["norm_eps"]
        self.attn = Attention(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin):
        x = x + self.attn(rms_norm(x, self.eps), cos, sin)
        return x + self.mlp(rms_norm(x, self.eps))


class GPT(nn.Module):
    def __init__(self, config, dtype=torch.float32):
        super().__init__()
        self.config = cfg = parse_config(config)
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(cfg["vocab_size"], cfg["d_model"]),
            "h": nn.ModuleList(Block(cfg) for _ in range(cfg["depth"])),
        })
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"], bias=False)
        cos, sin = rotary_tables(cfg["seq_len"], cfg["head_dim"], cfg["rope_base"])
        # Non-persistent: derived from the config, never stored with the weights.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.to(dtype)

    @torch.no_grad()
    def init_weights(self, seed):
        """Seeded init: wte ~ N(0, 1); output projections and lm_head zero; other linears
        N(0, 1/sqrt(fan_in) * min(1, sqrt(fan_out/fan_in)))."""
        gen = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            if name == "transformer.wte.weight":
                p.normal_(0.0, 1.0, generator=gen)
            elif name == "lm_head.weight" or name.endswith("c_proj.weight"):
                p.zero_()
            else:
                fan_out, fan_in = p.shape
                std = min(1.0, math.sqrt(fan_out / fan_in)) / math.sqrt(fan_in)
                p.normal_(0.0, std, generator=gen)
        return self

    @classmethod
    def from_weights(cls, config, weights, dtype=torch.float32):
        """Build from a dict name -> tensor; ValueError on missing, extra or misshapen tensors."""
        model = cls(config, dtype)
        params = dict(model.named_parameters())
        missing = sorted(set(params) - set(weights))
        extra = sorted(set(weights) - set(params))
        if missing or extra:
            raise ValueError(f"weights do not match config: missing {missing[:3]}, unexpected {extra[:3]}")
        with torch.no_grad():
            for name, p in params.items():
                w = weights[name]
                if tuple(w.shape) != tuple(p.shape):
                    raise ValueError(f"'{name}' has shape {tuple(w.shape)}, expected {tuple(p.shape)}")
                if not w.is_floating_point():
                    raise ValueError(f"'{name}' must be a float tensor")
                p.copy_(w)
        return model

    def forward(self, idx, targets=None, return_logits=False):
        """idx (B, T) token ids.  Returns logits if targets is None, else the mean loss over
        targets != -1 (and the logits too if return_logits)."""
        cfg = self.config
        T = idx.size(1)
        if T > cfg["seq_len"]:
            raise ValueError(f"sequence length {T} exceeds seq_len {cfg['seq_len']}")
        work = self.lm_head.weight.dtype  # the parameters' dtype, even under autocast
        cos, sin = self.rope_cos[:T].to(work), self.rope_sin[:T].to(work)
        x = rms_norm(self.transformer.wte(idx.long()), cfg["norm_eps"])
        for block in self.transformer.h:
            x = block(x, cos, sin)
        logits = self.lm_head(rms_norm(x, cfg["norm_eps"])).to(work)
        logits = cfg["softcap"] * torch.tanh(logits / cfg["softcap"])
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1).long(),
                               ignore_index=-1)
        return (loss, logits) if return_logits else loss
