#!/usr/bin/env python3
"""Render a `paraplan simulate --trace` Chrome trace as a static SVG timeline.

Usage:
  python3 docs/simulate/render_trace.py TRACE.json -o OUT.svg
      [--start-ms MS] [--end-ms MS] [--ranks 0,8,16-24] [--width PX] [--title TEXT]

One band per process (a simulated rank; --ranks picks them by pid, the global rank), one lane
per thread (a stream: compute, tp, pp, dp, "dp reduce", ...). On the compute lane the schedule
steps are outlined bands with their compute inside: forward, backward, the input- and
weight-gradient halves and recomputation in shades of blue, other compute (the optimizer) grey.
Each communication stream has its own colour, its "reduce" stream a lighter one. Under each
rank, its "memory" counter (GB in use) as a step plot, one scale for all ranks shown. In a
browser, hovering a box shows its name and duration. Standard library only; the output depends
only on the input and the options.
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

# Compute by the op name's first word (stage_program.cc writes "fwd layer 3: ...",
# "bwd-input ...", "recompute ..."); the optimizer and the like fall through to grey.
COMPUTE = {"fwd": "#4f93dd", "bwd": "#1f3f7a", "bwd-input": "#3b6fc2", "bwd-weight": "#7a5cc4",
           "recompute": "#9cc5ea", "other compute": "#7d8a96"}
STEP_FILL = {"fwd": "#e4eefa", "bwd": "#e9e4f6"}
# Communication by mesh axis: (the axis's stream, its "<axis> reduce" stream).
AXIS_COLOURS = {"tp": ("#e8850c", "#f5b86b"), "pp": ("#3f9a3a", "#8ccf86"), "dp": ("#d1383d", "#f2999b"),
                "cp": ("#b8860b", "#e3c46b"), "ep": ("#a0509a", "#d59bd0"), "edp": ("#8c564b", "#c9a097"),
                "host": ("#5f6b73", "#5f6b73")}
SPARE_COLOURS = [("#17a2a2", "#86d6d6"), ("#c4478a", "#e9a1c6"), ("#6d8a1f", "#b6cc78")]
MEMORY_COLOUR = "#6a3d9a"
TRACE_FORMAT = 2                                     # the newest chrome_trace.h format this script reads

LEFT, RIGHT, TOP = 96, 16, 40                        # margins; TOP holds the title and the axis
HEADER, LANE, COMPUTE_LANE, MEMORY = 15, 14, 24, 30  # band geometry, px
STEP_BAND = 8                                        # the step's own strip in the compute lane
CHAR_PX = 5.3                                        # one 9 px sans-serif character, roughly


def parse_ranks(text):
    """'0,8,16-24' -> {0, 8, 16, ..., 24}."""
    ranks = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        ranks.update(range(int(low), int(high or low) + 1))
    return ranks


def load(path, ranks):
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    # Format 1 (no otherData.trace_format) counted memory in GiB.
    version = trace.get("otherData", {}).get("trace_format", 1)
    if version > TRACE_FORMAT:
        sys.exit(f"{path}: trace format {version} is newer than this script's {TRACE_FORMAT}")
    memory_key, to_gb = ("GB", 1.0) if version >= 2 else ("GiB", 2**30 / 1e9)
    processes, threads, slices, memory = {}, {}, [], {}
    for e in events:
        pid = e.get("pid")
        if ranks is not None and pid not in ranks:
            continue
        if e["ph"] == "M" and e["name"] == "process_name":
            processes[pid] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(pid, e["tid"])] = e["args"]["name"]
        elif e["ph"] == "X":
            slices.append(e)
        elif e["ph"] == "C" and e["name"] == "memory":
            memory.setdefault(pid, []).append((e["ts"], e["args"][memory_key] * to_gb))
    return processes, threads, slices, memory


def stream_colours(names):
    """Colour per communication stream; axes the table lacks take spare colours in name order,
    so a stream keeps its colour in every picture of the same plan."""
    axes = sorted({n[:-7] if n.endswith(" reduce") else n for n in names} - {"compute"})
    spare = iter(SPARE_COLOURS * (1 + len(axes) // len(SPARE_COLOURS)))
    by_axis = {a: AXIS_COLOURS.get(a) or next(spare) for a in axes}
    return {n: by_axis[n[:-7]][1] if n.endswith(" reduce") else by_axis[n][0] for n in names if n != "compute"}


def compute_colour(name):
    return COMPUTE.get(name.split(" ", 1)[0], COMPUTE["other compute"])


def label_colour(fill):
    """Dark text on light boxes, white on dark ones."""
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return "#1a1a1a" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def nice_step(span, target):
    """A tick interval of 1, 2 or 5 times a power of ten giving about `target` ticks."""
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def fit_label(text, width):
    """The text, cut with an ellipsis, if at least four characters fit in `width` px."""
    room = int((width - 4) / CHAR_PX)
    if room < 4:
        return None
    return text if len(text) <= room else text[:room - 1] + "\u2026"


def fmt(x):
    return f"{x:.2f}".rstrip("0").rstrip(".")


class Svg:
    def __init__(self):
        self.parts = []

    def rect(self, x, y, w, h, fill, stroke=None, title=None):
        outline = f' stroke="{stroke}" stroke-width="0.6"' if stroke else ""
        end = f"><title>{escape(title)}</title></rect>" if title else "/>"
        self.parts.append(f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}" '
                          f'fill="{fill}"{outline}{end}')

    def text(self, x, y, s, size=9, anchor="start", fill="#222", bold=False):
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(f'<text x="{fmt(x)}" y="{fmt(y)}" font-size="{size}" text-anchor="{anchor}" '
                          f'fill="{fill}"{weight}>{escape(s)}</text>')

    def line(self, x1, y1, x2, y2, stroke="#eee", width=0.6):
        self.parts.append(f'<line x1="{fmt(x1)}" y1="{fmt(y1)}" x2="{fmt(x2)}" y2="{fmt(y2)}" '
                          f'stroke="{stroke}" stroke-width="{width}"/>')


def draw_lane(svg, boxes, x_of, y, h):
    """Boxes (start us, end us, name, colour) on one lane. A whole step of a large plan has far
    more ops than pixels, and thousands of invisible rectangles only make the file slow to open:
    a box under half a pixel joins the box before it when they touch, up to a pixel wide, and
    the run takes the colour that has most of its time (what a zoomed-out viewer shows)."""
    dominant = lambda weights: max(sorted(weights), key=lambda colour: weights[colour])
    runs = []  # [x0, x1, name, {colour: us}, events]
    for start, end, name, colour in sorted(boxes, key=lambda b: (b[0], b[1], b[2])):
        x0, x1 = x_of(start), x_of(end)
        last = runs[-1] if runs else None
        narrow = x1 - x0 < 0.5
        if last and x0 - last[1] < 0.5 and (narrow or last[1] - last[0] < 0.5) and (
                colour == dominant(last[3]) or (narrow and last[1] - last[0] < 1)):
            last[1], last[4] = max(last[1], x1), last[4] + 1
            last[3][colour] = last[3].get(colour, 0) + end - start
            continue
        runs.append([x0, x1, name, {colour: end - start}, 1])
    for x0, x1, name, weights, events in runs:
        fill = dominant(weights)
        title = f"{name} ({sum(weights.values()) / 1e3:.3f} ms)" if events == 1 else f"{events} events"
        svg.rect(x0, y, max(x1 - x0, 0.3), h, fill, title=title)
        label = fit_label(name, x1 - x0) if events == 1 else None
        if label:
            svg.text(x0 + 2, y + h / 2 + 3, label, fill=label_colour(fill))


def draw_compute(svg, lane, x_of, y, h):
    """Steps behind, as outlined bands labelled in their top strip; their compute inside."""
    for e in sorted((e for e in lane if e.get("cat") == "step"), key=lambda e: e["ts"]):
        x0, x1 = x_of(e["ts"]), x_of(e["ts"] + e["dur"])
        fill = STEP_FILL["fwd" if e["name"].startswith("fwd") else "bwd"]
        svg.rect(x0, y + 1, max(x1 - x0, 0.3), h - 2, fill, stroke="#8a97a6",
                 title=f"{e['name']} ({e['dur'] / 1e3:.3f} ms)")
        label = fit_label(e["name"], x1 - x0)
        if label:
            svg.text(x0 + 2, y + STEP_BAND, label, size=7, fill="#34495e")
    ops = [(e["ts"], e["ts"] + e["dur"], e["name"], compute_colour(e["name"]))
           for e in lane if e.get("cat") != "step"]
    draw_lane(svg, ops, x_of, y + STEP_BAND + 1, h - STEP_BAND - 2)


def draw_memory(svg, samples, x_of, start, end, y, low, high):
    """The rank's memory counter as a step plot; the level at the window's left edge is the
    last sample before it, so a zoomed view starts at the right height."""
    height = lambda g: y + MEMORY - 3 - (g - low) / (high - low) * (MEMORY - 6)
    level = next((g for t, g in reversed(samples) if t <= start), samples[0][1])
    points = [(x_of(start), height(level))]
    for t, g in samples:
        if start < t < end:
            points += [(x_of(t), points[-1][1]), (x_of(t), height(g))]
    points.append((x_of(end), points[-1][1]))
    svg.text(LEFT - 6, y + 12, "memory", anchor="end")
    svg.text(LEFT - 6, y + 22, f"peak {max(g for _, g in samples):.1f} GB", size=7, anchor="end", fill="#555")
    svg.parts.append(f'<polyline fill="none" stroke="{MEMORY_COLOUR}" stroke-width="1" points="'
                     + " ".join(f"{fmt(px)},{fmt(py)}" for px, py in points) + '"/>')


def draw_axis(svg, start, end, x_of, plot_w, bottom):
    """Tick labels above the first band; grid lines behind every band."""
    step = nice_step((end - start) / 1e3, max(plot_w / 90, 2)) * 1e3
    grid = []
    tick = math.ceil(start / step) * step
    while tick <= end + 1e-6:
        grid.append(f'<line x1="{fmt(x_of(tick))}" y1="{TOP - 4}" x2="{fmt(x_of(tick))}" y2="{fmt(bottom)}" '
                    'stroke="#e4e4e4" stroke-width="0.6"/>')
        svg.text(x_of(tick), TOP - 8, f"{fmt(tick / 1e3)} ms", size=8, anchor="middle", fill="#555")
        tick += step
    svg.parts[:0] = grid


def draw_legend(svg, colours, y, width, memory_scale):
    items = list(COMPUTE.items()) + sorted(colours.items()) + [(memory_scale, None)]
    x = LEFT
    for name, colour in items:
        if x + 16 + len(name) * CHAR_PX > width - RIGHT:
            x, y = LEFT, y + 14
        if colour:
            svg.rect(x, y, 10, 10, colour)
        else:
            svg.line(x, y + 5, x + 10, y + 5, stroke=MEMORY_COLOUR, width=1.5)
        svg.text(x + 13, y + 9, name)
        x += 26 + len(name) * CHAR_PX
    return y + 14


def render(args):
    processes, threads, slices, memory = load(args.trace, parse_ranks(args.ranks) if args.ranks else None)
    if not slices:
        sys.exit("render_trace.py: no events to draw (check --ranks)")
    start = args.start_ms * 1e3 if args.start_ms is not None else min(e["ts"] for e in slices)
    end = args.end_ms * 1e3 if args.end_ms is not None else max(e["ts"] + e["dur"] for e in slices)
    if end <= start:
        sys.exit("render_trace.py: the window is empty (--end-ms at or before --start-ms)")
    plot_w = args.width - LEFT - RIGHT
    x_of = lambda us: LEFT + (min(max(us, start), end) - start) / (end - start) * plot_w
    visible = [e for e in slices if e["ts"] < end and e["ts"] + e["dur"] > start]
    colours = stream_colours(set(threads.values()))
    pids = sorted({pid for pid, _ in threads} | {e["pid"] for e in slices})
    levels = [g for pid in pids for _, g in memory.get(pid, [])]
    low, high = (min(levels), max(levels)) if levels else (0.0, 1.0)
    if high - low < 1e-9:
        low, high = low - 0.5, high + 0.5

    svg, y = Svg(), TOP
    if args.title:
        svg.text(LEFT, 14, args.title, size=11, bold=True)
    for pid in pids:
        svg.rect(0, y, args.width, HEADER, "#eef0f3")
        svg.text(6, y + 11, processes.get(pid, f"pid {pid}"), size=10, bold=True)
        y += HEADER
        for tid in sorted({t for p, t in threads if p == pid} | {e["tid"] for e in slices if e["pid"] == pid}):
            name = threads.get((pid, tid), f"tid {tid}")
            h = COMPUTE_LANE if name == "compute" else LANE
            svg.text(LEFT - 6, y + h / 2 + 3, name, anchor="end")
            svg.line(LEFT, y + h, LEFT + plot_w, y + h)
            lane = [e for e in visible if e["pid"] == pid and e["tid"] == tid]
            if name == "compute":
                draw_compute(svg, lane, x_of, y, h)
            else:
                colour = colours.get(name, COMPUTE["other compute"])
                draw_lane(svg, [(e["ts"], e["ts"] + e["dur"], e["name"], colour) for e in lane], x_of, y + 1, h - 2)
            y += h
        if memory.get(pid):
            draw_memory(svg, sorted(memory[pid]), x_of, start, end, y, low, high)
            y += MEMORY
        y += 6
    draw_axis(svg, start, end, x_of, plot_w, y)
    y = draw_legend(svg, colours, y + 6, args.width, f"memory, {low:.1f}\u2013{high:.1f} GB for every rank")
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{args.width}" height="{y + 8}" '
            f'viewBox="0 0 {args.width} {y + 8}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n'
            '<rect width="100%" height="100%" fill="#fff"/>\n')
    return head + "\n".join(svg.parts) + "\n</svg>\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", help="Chrome trace JSON written by paraplan simulate --trace")
    parser.add_argument("-o", "--output", help="SVG file to write (default: standard output)")
    parser.add_argument("--start-ms", type=float, help="left edge of the window, ms")
    parser.add_argument("--end-ms", type=float, help="right edge of the window, ms")
    parser.add_argument("--ranks", help="ranks (trace pids) to draw: 0,8,16-24")
    parser.add_argument("--width", type=int, default=1400, help="image width, px (default 1400)")
    parser.add_argument("--title", help="a title above the time axis")
    args = parser.parse_args()
    if args.width < LEFT + RIGHT + 100:
        parser.error(f"--width must be at least {LEFT + RIGHT + 100}")
    out = render(args)
    with open(args.output, "w", encoding="utf-8") if args.output else sys.stdout as f:
        f.write(out)


if __name__ == "__main__":
    main()
