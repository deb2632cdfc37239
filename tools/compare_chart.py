#!/usr/bin/env python3
"""The picture of tools/compare_pytorch.sh's results, as one SVG file.

Left: tokens/s of every model, PyTorch fp32 and bf16 beside nanotrain, with the ratio to the
better PyTorch figure. Right (when the val_bpb half ran): both training losses over the same
training-time budget, with each side's val_bpb.

  compare_chart.py --throughput T.json [--nt-metrics metrics.jsonl --pt-run run.json
                   --bpb bpb.json] --out chart.svg

T.json is the script's throughput list; run.json is train_bench.py's result (its loss_curve);
bpb.json the script's val_bpb record. Standard library only.
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

PT_FP32, PT_BF16, NT = "#9e9e9e", "#ffbb78", "#1f77b4"
PT_LINE = "#ff7f0e"


def nice_ticks(lo, hi, target):
    """Round ticks (1, 2 or 5 times a power of ten) from at or below lo to at or above hi."""
    if not hi > lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, target)
    mag = 10 ** math.floor(math.log10(raw))
    step = next((m * mag for m in (1, 2, 5) if m * mag >= raw), 10 * mag)
    v, ticks = math.floor(lo / step) * step, []
    while len(ticks) < 1000:
        ticks.append(0.0 if abs(v) < step * 1e-9 else v)
        if v >= hi - step * 1e-9:
            break
        v += step
    return ticks


class Svg:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.parts = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']

    def line(self, x1, y1, x2, y2, stroke, width=1):
        self.parts.append(f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="{stroke}" '
                          f'stroke-width="{width}"/>')

    def rect(self, x, y, w, h, fill, title):
        self.parts.append(f'<rect class="bar" x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
                          f'fill="{fill}"><title>{escape(title)}</title></rect>')

    def polyline(self, points, stroke, width, cls):
        pts = " ".join(f"{x:.2f},{y:.2f}" for x, y in points)
        self.parts.append(f'<polyline class="{cls}" fill="none" stroke="{stroke}" stroke-width="{width}" '
                          f'points="{pts}"/>')

    def text(self, x, y, s, size=11, anchor="start", fill="#222222", bold=False, rotate=0):
        extra = ' font-weight="bold"' if bold else ""
        if rotate:
            extra += f' transform="rotate({rotate} {x:.2f} {y:.2f})"'
        self.parts.append(f'<text x="{x:.2f}" y="{y:.2f}" font-family="sans-serif" font-size="{size}" '
                          f'text-anchor="{anchor}" fill="{fill}"{extra}>{escape(s)}</text>')

    def finish(self):
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}">\n' + "\n".join(self.parts) + "\n</svg>\n")


def throughput_panel(svg, rows, left, right, top, bottom):
    """Grouped bars: PyTorch fp32, PyTorch bf16, nanotrain per model; the ratio over each group."""
    top_value = max(max(r["pytorch_fp32"], r["pytorch_bf16"], r["nanotrain"]) for r in rows)
    ticks = nice_ticks(0, top_value * 1.12, 6)
    y = lambda v: bottom - (v - ticks[0]) / (ticks[-1] - ticks[0]) * (bottom - top)
    for t in ticks:
        svg.line(left, y(t), right, y(t), "#e4e4e4")
        svg.text(left - 6, y(t) + 4, f"{t:,.0f}", 10, "end")
    svg.line(left, bottom, right, bottom, "#000000")
    svg.text(left - 58, (top + bottom) / 2, "tokens/s (median of the timed steps)", 11, "middle", rotate=-90)
    group = (right - left) / len(rows)
    bar = min(40.0, group / 4.5)
    for i, r in enumerate(rows):
        x0 = left + i * group + (group - 3 * bar) / 2
        for j, (key, colour, who) in enumerate((("pytorch_fp32", PT_FP32, "PyTorch fp32"),
                                                ("pytorch_bf16", PT_BF16, "PyTorch bf16 autocast"),
                                                ("nanotrain", NT, f"nanotrain ({r['nanotrain_dtype']})"))):
            v = r[key]
            svg.rect(x0 + j * bar, y(v), bar - 2, bottom - y(v), colour, f"{r['model']}: {who} {v:,} tokens/s")
        svg.text(x0 + 2.5 * bar - 1, y(r["nanotrain"]) - 6, f"{r['ratio']:.2f}x", 11, "middle", NT, bold=True)
        svg.text(left + (i + 0.5) * group, bottom + 16, r["model"], 11, "middle")
    for j, (colour, label) in enumerate(((PT_FP32, "PyTorch fp32"), (PT_BF16, "PyTorch bf16 autocast"),
                                         (NT, "nanotrain"))):
        svg.rect(left + j * 150, bottom + 30, 12, 12, colour, label)
        svg.text(left + j * 150 + 18, bottom + 40, label, 11)


def loss_panel(svg, nt_curve, pt_curve, bpb, left, right, top, bottom):
    """Both training losses over the training time, each side's val_bpb in the legend."""
    curves = [c for c in (nt_curve, pt_curve) if c]
    x_max = max(s for c in curves for s, _ in c)
    losses = [l for c in curves for _, l in c]
    xt, yt = nice_ticks(0, x_max, 6), nice_ticks(min(losses), max(losses), 6)
    x = lambda v: left + (v - xt[0]) / (xt[-1] - xt[0]) * (right - left)
    y = lambda v: bottom - (v - yt[0]) / (yt[-1] - yt[0]) * (bottom - top)
    for t in xt:
        svg.line(x(t), top, x(t), bottom, "#e4e4e4")
        svg.text(x(t), bottom + 16, f"{t:g}", 10, "middle")
    for t in yt:
        svg.line(left, y(t), right, y(t), "#e4e4e4")
        svg.text(left - 6, y(t) + 4, f"{t:g}", 10, "end")
    svg.line(left, bottom, right, bottom, "#000000")
    svg.line(left, top, left, bottom, "#000000")
    svg.text((left + right) / 2, bottom + 34, "training time (s)", 11, "middle")
    svg.text(left - 40, (top + bottom) / 2, "training loss (nats per token)", 11, "middle", rotate=-90)
    entries = []
    if pt_curve:
        svg.polyline([(x(s), y(l)) for s, l in pt_curve], PT_LINE, 2, "pytorch")
        entries.append((PT_LINE, f"PyTorch ({bpb['pytorch']['dtype']}): {bpb['pytorch']['steps']} steps, "
                                 f"val_bpb {bpb['pytorch']['val_bpb']:.4f}"))
    if nt_curve:
        svg.polyline([(x(s), y(l)) for s, l in nt_curve], NT, 2, "nanotrain")
        entries.append((NT, f"nanotrain ({bpb['nanotrain']['dtype']}): {bpb['nanotrain']['steps']} steps, "
                            f"val_bpb {bpb['nanotrain']['val_bpb']:.4f}"))
    for k, (colour, label) in enumerate(entries):  # under the axis title
        yy = bottom + 56 + 16 * k
        svg.line(left, yy - 4, left + 24, yy - 4, colour, 2)
        svg.text(left + 30, yy, label, 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--throughput", required=True, help="the script's throughput JSON (a list of models)")
    ap.add_argument("--nt-metrics", help="nanotrain's metrics.jsonl of the val_bpb run")
    ap.add_argument("--pt-run", help="train_bench.py's result JSON of the val_bpb run")
    ap.add_argument("--bpb", help="the script's val_bpb JSON")
    ap.add_argument("--out", required=True, help="the SVG file to write")
    a = ap.parse_args()
    try:
        rows = json.load(open(a.throughput))
        if not rows:
            raise ValueError("no models")
        bpb = json.load(open(a.bpb)) if a.bpb else None
        nt_curve = pt_curve = None
        if bpb:
            nt_curve = [(r["train_seconds"], r["loss"]) for r in map(json.loads, open(a.nt_metrics))
                        if r.get("type") == "step"]
            pt_curve = [tuple(p) for p in json.load(open(a.pt_run)).get("loss_curve", [])]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"compare_chart.py: {e}", file=sys.stderr)
        return 1
    svg = Svg(1000, 470)
    svg.text(40, 28, "nanotrain against PyTorch, side by side on this machine", 16, bold=True)
    first = rows[0]
    svg.text(40, 48, f"{first['batch_size']} x {first['seq_len']} tokens a step, 2 threads; "
                     "ratio: nanotrain over the better PyTorch dtype", 11, fill="#555555")
    throughput_panel(svg, rows, 100, 460, 80, 380)
    if bpb and (nt_curve or pt_curve):
        svg.text(590, 70, f"the same {bpb['budget_seconds']:g} s of training, same data ({first['model']})", 12,
                 bold=True)
        loss_panel(svg, nt_curve, pt_curve, bpb, 590, 960, 80, 380)
    try:
        with open(a.out, "w") as f:
            f.write(svg.finish())
    except OSError as e:
        print(f"compare_chart.py: {a.out}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
