"""An independent implementation of the reference CORE harness, for agreement tests.

usage: /usr/bin/python3 tools/core_ref/core_ref.py --nanotrain BIN --run-dir RUN --bundle DIR
           [--max-per-task N] [--tasks a,b] [--dtype float64|float32]

It follows the reference harness (DCLM's CORE as nanochat evaluates it) with its own means:
Python's `random` picks the items and shots, Jinja2 renders the same templates, the model is
tools/torch_ref's PyTorch GPT on the run's model.safetensors, and every candidate is run whole
(one right-padded batch per item). Only tokenization calls nanotrain (`tokenizer encode --json`),
so that both sides see the same ids. One deviation, shared with nanotrain: a task whose (cut)
item list is shorter than its shot count uses n - 1 shots, where the reference stops.

Prints one JSON object: CORE, per-task accuracy and centered accuracy, and every item's decision.
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys

import torch
import torch.nn.functional as F
import yaml
from jinja2 import Template

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch_ref"))
from model import GPT  # noqa: E402
from st import read_safetensors  # noqa: E402

MC_TEMPLATE = """
{%- for example in fewshot_examples -%}
{{ example.query }}{{ continuation_delimiter }}{{ example.choices[example.gold] }}

{% endfor -%}
{{ item.query }}{{ continuation_delimiter }}{{ choice }}""".strip()

SCHEMA_TEMPLATE = """
{%- for example in fewshot_examples -%}
{{ example.context_options[example.gold] }}{{ continuation_delimiter }}{{ example.continuation }}

{% endfor -%}
{{ context }}{{ continuation_delimiter }}{{ item.continuation }}""".strip()

LM_TEMPLATE = """
{%- for example in fewshot_examples -%}
{{ example.context | trim }}{{ continuation_delimiter }}{{ example.continuation }}

{% endfor -%}
{{ item.context | trim }}{{ continuation_delimiter }}{% if include_continuation %}{{ item.continuation }}{% endif %}""".strip()


TEMPLATES = {"multiple_choice": MC_TEMPLATE, "schema": SCHEMA_TEMPLATE, "language_modeling": LM_TEMPLATE}
_TEMPLATES = {}


def render(task_type, item, delim, shots):
    ctx = {"fewshot_examples": shots, "continuation_delimiter": delim, "item": item}
    if task_type not in _TEMPLATES:
        _TEMPLATES[task_type] = Template(TEMPLATES[task_type])
    t = _TEMPLATES[task_type]
    if task_type == "multiple_choice":
        return [t.render(choice=c, **ctx) for c in item["choices"]]
    if task_type == "schema":
        return [t.render(context=c, **ctx) for c in item["context_options"]]
    return [t.render(include_continuation=False, **ctx).strip(), t.render(include_continuation=True, **ctx)]


def common_length(seqs, direction):
    min_len = min(len(s) for s in seqs)
    idx = range(min_len) if direction == "left" else range(-1, -min_len - 1, -1)
    for i, k in enumerate(idx):
        if not all(s[k] == seqs[0][k] for s in seqs):
            return i
    return min_len


def spans(task_type, toks):
    """(sequences, starts, ends) as the reference's batch_sequences_* make them."""
    if task_type == "multiple_choice":
        s = common_length(toks, "left")
        return toks, [s] * len(toks), [len(t) for t in toks]
    if task_type == "schema":
        s = common_length(toks, "right")
        return toks, [len(t) - s for t in toks], [len(t) for t in toks]
    without, with_ = toks
    assert len(without) < len(with_) and with_[:len(without)] == without, "LM prefix property"
    return [with_], [len(without)], [len(with_)]


def truncate(seqs, starts, ends, T):
    out = []
    for t, s, e in zip(seqs, starts, ends):
        crop = max(0, len(t) - T)
        assert s - crop >= 0, "span outside the context"
        out.append((t[crop:], s - crop, e - crop))
    return out


@torch.no_grad()
def score_item(model, task_type, cands, bos, gold):
    """(predicted candidate, correct) with the reference's loss, argmax and choice rules."""
    width = max(len(t) for t, _, _ in cands)
    ids = torch.full((len(cands), width), bos, dtype=torch.long)
    for i, (t, _, _) in enumerate(cands):
        ids[i, :len(t)] = torch.tensor(t, dtype=torch.long)
    logits = model(ids)
    B, T, V = logits.shape
    targets = torch.roll(ids, shifts=-1, dims=1)
    losses = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T), reduction="none").view(B, T)
    losses[:, -1] = float("nan")
    preds = logits.argmax(dim=-1)
    if task_type == "language_modeling":
        _, s, e = cands[0]
        return 0, bool(torch.all(preds[0, s - 1:e - 1] == ids[0, s:e]).item())
    means = [losses[i, s - 1:e - 1].mean().item() for i, (_, s, e) in enumerate(cands)]
    p = means.index(min(means))
    return p, p == gold


def encode_all(binary, run_dir, texts):
    out = subprocess.run([binary, "tokenizer", "encode", "--run-dir", run_dir, "--json"],
                         input=json.dumps(texts).encode(), capture_output=True, check=True)
    res = json.loads(out.stdout)
    assert len(res["ids"]) == len(texts)
    return res["bos"], res["ids"]


def load_task(bundle, task, max_per_task):
    with open(os.path.join(bundle, "eval_data", task["dataset_uri"]), encoding="utf-8") as f:
        data = [(n + 1, json.loads(line.strip())) for n, line in enumerate(f)]
    random.Random(1337).shuffle(data)
    if max_per_task > 0:
        data = data[:max_per_task]
    return data


def run_task(a, model, T, task, baseline):
    kind = task["icl_task_type"]
    delim = task.get("continuation_delimiter", " ")
    data = load_task(a.bundle, task, a.max_per_task)
    k = min(task["num_fewshot"][0], len(data) - 1)
    prompts = []
    for idx, (_, item) in enumerate(data):
        shots = []
        if k > 0:
            rng = random.Random(1234 + idx)
            shots = [data[i][1] for i in rng.sample([i for i in range(len(data)) if i != idx], k)]
        prompts.append(render(kind, item, delim, shots))
    flat = [p for ps in prompts for p in ps]
    bos, ids = encode_all(a.nanotrain, a.run_dir, flat)
    decisions, pos = [], 0
    for (line, item), ps in zip(data, prompts):
        toks = [[bos] + t for t in ids[pos:pos + len(ps)]]
        pos += len(ps)
        cands = truncate(*spans(kind, toks), T)
        pred, correct = score_item(model, kind, cands, bos, item.get("gold"))
        decisions.append({"line": line, "pred": pred, "correct": bool(correct)})
    acc = sum(d["correct"] for d in decisions) / len(decisions)
    b = 0.01 * baseline
    return {"label": task["label"], "type": kind, "shots": k, "items": len(decisions), "accuracy": acc,
            "centered": (acc - b) / (1.0 - b), "decisions": decisions}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nanotrain", required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--max-per-task", type=int, default=0)
    ap.add_argument("--tasks", default="")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    a = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    weights, meta = read_safetensors(os.path.join(a.run_dir, "model.safetensors"))
    model = GPT.from_weights(meta["config"], weights, getattr(torch, a.dtype)).eval()
    T = model.config["seq_len"]
    with open(os.path.join(a.bundle, "core.yaml"), encoding="utf-8") as f:
        tasks = yaml.safe_load(f)["icl_tasks"]
    with open(os.path.join(a.bundle, "eval_meta_data.csv"), encoding="utf-8") as f:
        baselines = {row["Eval Task"]: float(row["Random baseline"]) for row in csv.DictReader(f)}
    wanted = [t for t in a.tasks.split(",") if t]
    results, centered = [], []
    for task in tasks:
        if wanted and task["label"] not in wanted:
            continue
        results.append(run_task(a, model, T, task, baselines[task["label"]]))
        centered.append(results[-1]["centered"])
    print(json.dumps({"core": sum(centered) / len(centered), "tasks": results}))


if __name__ == "__main__":
    main()
