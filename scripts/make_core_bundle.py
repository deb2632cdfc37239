#!/usr/bin/env python3
"""Builds a CORE evaluation bundle, in the layout of the official one, from plain text.

usage: scripts/make_core_bundle.py --input FILE_OR_DIR... --out DIR [--items 500] [--seed 0]
           [--max-words 40]
       scripts/make_core_bundle.py --official-shapes --input ... --out DIR [--items 500]

Inputs are text files, folders of them (recursively) or .jsonl files (field "text"). The text is
cut into sentences, and three kinds of task are made from them:
  language_modeling  a passage without its last word; the continuation is that word (or, in
                     the common_next_word tasks, a passage cut before one of the text's most
                     frequent words, which small models learn to predict early)
  multiple_choice    a sentence; the choices are the sentence that followed it and distractors
                     drawn from elsewhere in the text
  schema             the context options are the sentence that preceded a sentence and
                     distractors; the continuation is the sentence
By default the bundle holds these three at a few shot counts. --official-shapes writes the 22
tasks of the official bundle instead (their labels, types, shot counts, random baselines and
numbers of choices), each with --items items made the same way: a bundle with the official
shapes for timing, not for meaning.
"""
import argparse
import json
import os
import random
import re

# label, type, shots, random baseline (percent): the official CORE tasks.
OFFICIAL = [
    ("hellaswag_zeroshot", "multiple_choice", 0, 25), ("jeopardy", "language_modeling", 10, 0),
    ("bigbench_qa_wikidata", "language_modeling", 10, 0), ("arc_easy", "multiple_choice", 10, 25),
    ("arc_challenge", "multiple_choice", 10, 25), ("copa", "multiple_choice", 0, 50),
    ("commonsense_qa", "multiple_choice", 10, 20), ("piqa", "multiple_choice", 10, 50),
    ("openbook_qa", "multiple_choice", 0, 25), ("lambada_openai", "language_modeling", 0, 0),
    ("hellaswag", "multiple_choice", 10, 25), ("winograd", "schema", 0, 50), ("winogrande", "schema", 0, 50),
    ("bigbench_dyck_languages", "language_modeling", 10, 0), ("agi_eval_lsat_ar", "multiple_choice", 3, 20),
    ("bigbench_cs_algorithms", "language_modeling", 10, 0), ("bigbench_operators", "language_modeling", 10, 0),
    ("bigbench_repeat_copy_logic", "language_modeling", 10, 0), ("squad", "language_modeling", 10, 0),
    ("coqa", "language_modeling", 0, 0), ("boolq", "multiple_choice", 10, 62),
    ("bigbench_language_identification", "multiple_choice", 10, 9.1),
]

# label, type, shots, baseline, choices: the project's own small bundle.
OWN = [
    ("last_word", "language_modeling", 0, 0, 1), ("last_word_5shot", "language_modeling", 5, 0, 1),
    ("common_next_word", "language_modeling", 0, 0, 0), ("common_next_word_5shot", "language_modeling", 5, 0, 0),
    ("next_sentence", "multiple_choice", 0, 25, 4), ("next_sentence_3shot", "multiple_choice", 3, 25, 4),
    ("previous_sentence", "schema", 0, 50, 2), ("previous_sentence_2shot", "schema", 2, 50, 2),
]


def read_texts(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                out += read_texts([os.path.join(root, f) for f in sorted(files)])
        elif p.endswith(".jsonl"):
            with open(p, encoding="utf-8") as f:
                out += [json.loads(line)["text"] for line in f if line.strip()]
        else:
            with open(p, encoding="utf-8", errors="replace") as f:
                out.append(f.read())
    return out


def sentence_runs(texts, max_words):
    """Runs of consecutive sentences (each run from one paragraph) of 4 to max_words words."""
    runs = []
    for text in texts:
        for para in re.split(r"\n\s*\n", text):
            words = " ".join(para.split())
            sents = [s for s in re.split(r"(?<=[.!?])\s+", words) if 4 <= len(s.split()) <= max_words]
            if len(sents) >= 2:
                runs.append(sents)
    return runs


def common_next_word_items(runs, count, rng):
    """Passages of 6 to 16 words ending just before one of the 30 most frequent words."""
    words = [w for r in runs for w in " ".join(r).split()]
    freq = {}
    for w in words:
        freq[w] = freq.get(w, 0) + 1
    common = {w for w, _ in sorted(freq.items(), key=lambda kv: -kv[1]) if re.fullmatch(r"[a-z]+", w)}
    common = set(sorted(common, key=lambda w: -freq[w])[:30])
    spots = [i for i in range(16, len(words)) if words[i] in common and re.search(r"[A-Za-z]$", words[i - 1])]
    items = []
    for _ in range(count):
        i = rng.choice(spots)
        items.append({"context": " ".join(words[i - rng.randint(6, 16):i]), "continuation": words[i]})
    return items


def make_items(kind, n_choices, runs, count, rng):
    if n_choices == 0:
        return common_next_word_items(runs, count, rng)
    pairs = [(r[i], r[i + 1]) for r in runs for i in range(len(r) - 1)]
    singles = [s for r in runs for s in r]
    if not pairs:
        raise SystemExit("make_core_bundle: the input has no consecutive sentences")
    items = []
    for _ in range(count):
        first, second = rng.choice(pairs)
        if kind == "language_modeling":
            words = second.split()
            items.append({"context": first + " " + " ".join(words[:-1]), "continuation": words[-1]})
            continue
        true = second if kind == "multiple_choice" else first
        options = [true] + [s for s in rng.sample(singles, min(len(singles), 4 * n_choices)) if s != true]
        options = options[:n_choices]
        while len(options) < n_choices:
            options.append(rng.choice(singles))
        order = list(range(n_choices))
        rng.shuffle(order)
        shuffled = [options[i] for i in order]
        gold = order.index(0)
        if kind == "multiple_choice":
            items.append({"query": first, "choices": shuffled, "gold": gold})
        else:
            items.append({"context_options": shuffled, "continuation": second, "gold": gold})
    return items


def write_bundle(out, tasks, runs, count, seed):
    os.makedirs(os.path.join(out, "eval_data"), exist_ok=True)
    yaml_lines, csv_lines = ["icl_tasks:"], ["Eval Task,Random baseline"]
    for i, (label, kind, shots, baseline, n_choices) in enumerate(tasks):
        rng = random.Random(seed * 1000 + i)
        uri = f"{kind}/{label}.jsonl"
        os.makedirs(os.path.join(out, "eval_data", kind), exist_ok=True)
        with open(os.path.join(out, "eval_data", uri), "w", encoding="utf-8") as f:
            for item in make_items(kind, n_choices, runs, count, rng):
                f.write(json.dumps(item, ensure_ascii=False) + "\n")
        yaml_lines += [f"- label: {label}", f"  dataset_uri: {uri}", f"  num_fewshot: [{shots}]",
                       f"  icl_task_type: {kind}", "  continuation_delimiter: ' '"]
        csv_lines.append(f"{label},{baseline}")
    with open(os.path.join(out, "core.yaml"), "w", encoding="utf-8") as f:
        f.write("\n".join(yaml_lines) + "\n")
    with open(os.path.join(out, "eval_meta_data.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(csv_lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--items", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-words", type=int, default=40, help="longest sentence used, in words")
    ap.add_argument("--official-shapes", action="store_true")
    a = ap.parse_args()
    runs = sentence_runs(read_texts(a.input), a.max_words)
    if a.official_shapes:
        tasks = [(l, k, s, b, 1 if k == "language_modeling" else 2 if k == "schema" else max(2, round(100 / b)))
                 for l, k, s, b in OFFICIAL]
    else:
        tasks = OWN
    write_bundle(a.out, tasks, runs, a.items, a.seed)
    print(f"wrote {a.out}: {len(tasks)} tasks x {a.items} items from {sum(len(r) for r in runs)} sentences")


if __name__ == "__main__":
    main()
