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
_FLOAT_DEFAULTS = {"rope_base": 10000.0, "norm_eps": 1e-6}
# The model variants (nanotrain's ModelVariants), each defaulting to the baseline.
_VARIANT_DEFAULTS = {"qk_scale": 1.0, "softcap": 15.0, "mlp": "relu2", "tie_embeddings": False,
                     "resid_scalars": False, "smear": False, "backout": False, "value_embeds": False,
                     "window_pattern": "L", "short_window": 0}
SMEAR_CHANNELS, VE_GATE_CHANNELS = 24, 12


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
    for key, default in _VARIANT_DEFAULTS.items():
        value = raw.get(key, default)
        if isinstance(default, bool):
            if value not in (True, False, "true", "false"):
                raise ValueError(f"config '{key}' must be true or false, got {value!r}")
            value = value in (True, "true")
        elif key == "window_pattern":
            if not isinstance(value, str) or not value or set(value) - {"S", "L"}:
                raise ValueError(f"config 'window_pattern' must be a non-empty string of S and L, got {value!r}")
        elif key == "short_window":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"config 'short_window' must be an integer >= 0, got {value!r}")
        elif isinstance(default, float):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"config '{key}' is not a number: {value!r}") from None
            if not value >= 0 or (key == "qk_scale" and value == 0):
                raise ValueError(f"config '{key}' out of range: {value!r}")
        elif value not in ("relu2", "swiglu", "gelu"):
            raise ValueError(f"config 'mlp' must be relu2, swiglu or gelu, got {value!r}")
        cfg[key] = value
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


def causal_attention(q, k, v, window=None):
    """Causal softmax attention with grouped KV heads, optionally in a sliding window.

    q: (B, H, T, D); k, v: (B, KVH, T, D).  Query head h reads KV head h // (H // KVH):
    viewing q as (B, KVH, G, T, D) puts head h = kvh * G + g at [kvh, g], so k/v only
    need a broadcast dimension, not an explicit repeat.  window W (None: no window):
    query t sees keys t - W .. t.
    """
    B, H, T, D = q.shape
    kvh = k.size(1)
    q = q.reshape(B, kvh, H // kvh, T, D)
    scores = (q @ k.unsqueeze(2).transpose(-1, -2)) * (1.0 / math.sqrt(D))
    hidden = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)  # the future
    if window is not None:  # and keys more than W before the query
        hidden = hidden | torch.ones(T, T, dtype=torch.bool, device=q.device).tril(-(window + 1))
    att = scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)
    return (att @ v.unsqueeze(2)).reshape(B, H, T, D)


def mlp_hidden(cfg):
    """4C, or for SwiGLU 2/3 of it rounded up to a multiple of 64 (the same FLOPs)."""
    C = cfg["d_model"]
    return (8 * C // 3 + 63) // 64 * 64 if cfg["mlp"] == "swiglu" else 4 * C


def attention_window(cfg, layer):
    """The layer's window (None: full context): window_pattern tiled over the layers, the last
    layer always L; S is short_window keys, or ceil(seq_len / 4 / 128) * 128 when that is 0."""
    pattern = cfg["window_pattern"]
    if layer == cfg["depth"] - 1 or pattern[layer % len(pattern)] == "L":
        return None
    return cfg["short_window"] or math.ceil(cfg["seq_len"] / 4 / 128) * 128


def has_value_embed(cfg, layer):
    """Value embeddings on alternating layers, the last always included."""
    return cfg["value_embeds"] and layer % 2 == (cfg["depth"] - 1) % 2


class Attention(nn.Module):
    def __init__(self, cfg, layer):
        super().__init__()
        C, D = cfg["d_model"], cfg["head_dim"]
        self.n_head, self.n_kv_head, self.head_dim = cfg["n_head"], cfg["n_kv_head"], D
        self.eps, self.qk_scale = cfg["norm_eps"], cfg["qk_scale"]
        self.window = attention_window(cfg, layer)
        self.c_q = nn.Linear(C, self.n_head * D, bias=False)
        self.c_k = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_v = nn.Linear(C, self.n_kv_head * D, bias=False)
        self.c_proj = nn.Linear(self.n_head * D, C, bias=False)
        self.ve_gate = nn.Linear(VE_GATE_CHANNELS, self.n_kv_head, bias=False) if has_value_embed(cfg, layer) else None

    def forward(self, u, cos, sin, ve=None):
        B, T, _ = u.shape
        q = self.c_q(u).view(B, T, self.n_head, self.head_dim)
        k = self.c_k(u).view(B, T, self.n_kv_head, self.head_dim)
        v = self.c_v(u).view(B, T, self.n_kv_head, self.head_dim)
        if ve is not None:  # value embedding, one gate per kv head in (0, 3)
            gate = 3 * torch.sigmoid(self.ve_gate(u[..., :VE_GATE_CHANNELS]))
            v = v + gate.unsqueeze(-1) * ve.view(B, T, self.n_kv_head, self.head_dim)
        # Rotary, then QK-norm, as nanotrain defines it.  Rotation preserves each head's
        # norm, so the order only matters at rounding level.
        q = rms_norm(apply_rotary(q, cos, sin), self.eps) * self.qk_scale
        k = rms_norm(apply_rotary(k, cos, sin), self.eps) * self.qk_scale
        y = causal_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), self.window)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, F_ = cfg["d_model"], mlp_hidden(cfg)
        self.act = cfg["mlp"]
        if self.act == "swiglu":
            self.c_gate = nn.Linear(C, F_, bias=False)
        self.c_fc = nn.Linear(C, F_, bias=False)
        self.c_proj = nn.Linear(F_, C, bias=False)

    def forward(self, u):
        if self.act == "swiglu":
            return self.c_proj(F.silu(self.c_gate(u)) * self.c_fc(u))
        if self.act == "gelu":
            return self.c_proj(F.gelu(self.c_fc(u), approximate="tanh"))
        return self.c_proj(F.relu(self.c_fc(u)).square())


class Block(nn.Module):
    def __init__(self, cfg, layer):
        super().__init__()
        self.eps = cfg["norm_eps"]
        self.attn = Attention(cfg, layer)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, ve=None):
        x = x + self.attn(rms_norm(x, self.eps), cos, sin, ve)
        return x + self.mlp(rms_norm(x, self.eps))


class GPT(nn.Module):
    def __init__(self, config, dtype=torch.float32):
        super().__init__()
        self.config = cfg = parse_config(config)
        L, C, V = cfg["depth"], cfg["d_model"], cfg["vocab_size"]
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(V, C),
            "h": nn.ModuleList(Block(cfg, i) for i in range(L)),
        })
        self.lm_head = None if cfg["tie_embeddings"] else nn.Linear(C, V, bias=False)
        kv_dim = cfg["n_kv_head"] * cfg["head_dim"]
        self.value_embeds = nn.ModuleDict({str(i): nn.Embedding(V, kv_dim) for i in range(L)
                                           if has_value_embed(cfg, i)})
        if cfg["resid_scalars"]:
            self.resid_lambdas = nn.Parameter(torch.ones(L))
            self.x0_lambdas = nn.Parameter(torch.zeros(L))
        if cfg["smear"]:
            self.smear_gate = nn.Linear(SMEAR_CHANNELS, 1, bias=False)
            self.smear_lambda = nn.Parameter(torch.zeros(1))
        if cfg["backout"]:
            self.backout_lambda = nn.Parameter(torch.full((1,), 0.2))
        cos, sin = rotary_tables(cfg["seq_len"], cfg["head_dim"], cfg["rope_base"])
        # Non-persistent: derived from the config, never stored with the weights.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.to(dtype)

    def head_weight(self):
        return self.transformer.wte.weight if self.lm_head is None else self.lm_head.weight

    @torch.no_grad()
    def init_weights(self, seed):
        """Seeded init: wte ~ N(0, 1) (tied: N(0, 1/sqrt(C))); output projections and lm_head
        zero; other linears N(0, 1/sqrt(fan_in) * min(1, sqrt(fan_out/fan_in))); the variants'
        tensors as nanochat starts them."""
        gen = torch.Generator().manual_seed(seed)
        cfg = self.config
        L, C = cfg["depth"], cfg["d_model"]
        ramp = torch.arange(L, dtype=torch.float64) / max(L - 1, 1)
        for name, p in self.named_parameters():
            if name == "transformer.wte.weight":
                p.normal_(0.0, C ** -0.5 if cfg["tie_embeddings"] else 1.0, generator=gen)
            elif name == "lm_head.weight" or name.endswith("c_proj.weight") or name == "smear_lambda":
                p.zero_()
            elif name.endswith("ve_gate.weight") or name == "smear_gate.weight":
                p.uniform_(0.0, 0.02, generator=gen)
            elif name.startswith("value_embeds."):
                p.uniform_(-(3.0 / C) ** 0.5, (3.0 / C) ** 0.5, generator=gen)
            elif name == "resid_lambdas":
                p.copy_(1.15 - 0.10 * ramp)
            elif name == "x0_lambdas":
                p.copy_(0.20 - 0.15 * ramp)
            elif name == "backout_lambda":
                p.fill_(0.2)
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
        work = self.head_weight().dtype  # the parameters' dtype, even under autocast
        cos, sin = self.rope_cos[:T].to(work), self.rope_sin[:T].to(work)
        idx = idx.long()
        x = rms_norm(self.transformer.wte(idx), cfg["norm_eps"])
        if cfg["smear"] and T > 1:  # x_t += lambda sigmoid(gate(x_t[:24])) x_{t-1}
            gate = self.smear_lambda * torch.sigmoid(self.smear_gate(x[:, 1:, :SMEAR_CHANNELS]))
            x = torch.cat([x[:, :1], x[:, 1:] + gate * x[:, :-1]], dim=1)
        x0, x_backout = x, None
        for i, block in enumerate(self.transformer.h):
            if cfg["resid_scalars"]:
                x = self.resid_lambdas[i] * x + self.x0_lambdas[i] * x0
            ve = self.value_embeds[str(i)](idx) if str(i) in self.value_embeds else None
            x = block(x, cos, sin, ve)
            if i == cfg["depth"] // 2:
                x_backout = x
        if cfg["backout"]:
            x = x - self.backout_lambda * x_backout
        logits = F.linear(rms_norm(x, cfg["norm_eps"]), self.head_weight()).to(work)
        if cfg["softcap"] > 0:
            logits = cfg["softcap"] * torch.tanh(logits / cfg["softcap"])
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1).long(),
                               ignore_index=-1)
        return (loss, logits) if return_logits else loss
