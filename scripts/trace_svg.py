#!/usr/bin/env python3
"""Draws a `wsp run --trace` file (Chrome trace events) as an SVG timeline: one lane per core
that ran a task, each task a bar coloured by its kernel, time in microseconds of modelled time.
Standard library only.

    python3 scripts/trace_svg.py TRACE.json OUT.svg [TITLE]
"""
import json
import sys
from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#59a14f", "#edc948", "#e15759", "#b07aa1", "#f28e2b", "#76b7b2",
           "#ff9da7", "#9c755f", "#bab0ac"]


def main(src, dst, title):
    with open(src) as f:
        events = json.load(f)["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    tasks = [e for e in events if e.get("ph") == "X" and e.get("cat") == "task"]
    if not tasks:
        sys.exit(f"{src}: no tasks in the trace")
    used = sorted({e["tid"] for e in tasks})
    kernels = []
    for e in sorted(tasks, key=lambda e: e["ts"]):
        k = e.get("args", {}).get("kernel", e["name"])
        if k not in kernels:
            kernels.append(k)
    colour = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kernels)}
    end = max(e["ts"] + e["dur"] for e in tasks)
    left, top, lane_h, width = 110, 46, 16, 1100
    height = top + lane_h * len(used) + 60
    x = lambda t: left + t / end * width
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
           f'height="{height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">{escape(title)}</text>']
    # Time axis: about ten ticks at a round step.
    step = 10 ** len(str(int(end / 10))) / 10 if end >= 10 else 1
    while end / step > 12:
        step *= 2
    t = 0.0
    while t <= end:
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" '
                   f'y2="{top + lane_h * len(used)}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{x(t):.1f}" y="{top - 10}" text-anchor="middle" '
                   f'fill="#606060">{t:g} µs</text>')
        t += step
    for row, tid in enumerate(used):
        y = top + row * lane_h
        out.append(f'<text x="{left - 8}" y="{y + lane_h - 4}" text-anchor="end">'
                   f'{escape(lanes.get(tid, str(tid)))}</text>')
    for e in tasks:
        y = top + used.index(e["tid"]) * lane_h + 2
        k = e.get("args", {}).get("kernel", e["name"])
        w = max(e["dur"] / end * width, 0.5)
        out.append(f'<rect x="{x(e["ts"]):.2f}" y="{y}" width="{w:.2f}" height="{lane_h - 4}" '
                   f'fill="{colour[k]}"><title>{escape(e["name"])}</title></rect>')
    ly = top + lane_h * len(used) + 24
    lx = left
    for k in kernels:
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour[k]}"/>')
        out.append(f'<text x="{lx + 16}" y="{ly}">{escape(k)}</text>')
        lx += 30 + 7 * len(k)
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else sys.argv[1])
