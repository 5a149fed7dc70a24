#!/usr/bin/env python3
"""Per outage in a corpus run's window, each scheme's delay over the 2 s after the link comes back.

Usage: results/corpus/analysis/after_outage.py EVAL_OUT_DIR CORPUS_DIR [WINDOW_S]

Reads each run's frames.csv (written by `salsify eval`, not kept in git) and the run's rate log; an
outage is a gap of more than 1.5 intervals between two lines of the log (netem's rule), from the
earlier line to the later line's interval start. For each outage that ends at least WINDOW_S (default 2) before the
run's end, prints per scheme the mean and largest delay of the pictures captured in the WINDOW_S
after it ends, how many were shown then, and how long after the link's return the first picture
captured after it was shown.
"""
import csv
import json
import os
import sys


def outages(path):
    times = []
    with open(path) as f:
        for line in f:
            parts = line.replace(",", " ").split()
            if len(parts) == 2:
                try:
                    times.append(float(parts[0]))
                except ValueError:
                    pass
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    step = gaps[(len(gaps) - 1) // 2]
    origin = times[0] - step
    out = []
    for a, b in zip(times, times[1:]):
        if b - a > 1.5 * step:
            out.append((a - origin, b - step - origin))
    return out


def main():
    root, corpus = sys.argv[1], sys.argv[2]
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    rows = {}
    for run in sorted(os.listdir(os.path.join(root, "runs"))):
        d = os.path.join(root, "runs", run)
        meta = json.load(open(os.path.join(d, "run.json")))
        summary = json.load(open(os.path.join(d, "summary.json")))
        scheme = run.split("__")[0]
        link = meta["link"]
        log = os.path.join(corpus, link + ".rate")
        if not os.path.exists(log) or not os.path.exists(os.path.join(d, "frames.csv")):
            continue
        end_s = summary["duration_s"]
        frames = list(csv.DictReader(open(os.path.join(d, "frames.csv"))))
        for start, stop in outages(log):
            if stop + window > end_s or stop - start < 0.3:
                continue
            after = [f for f in frames if stop * 1000 <= float(f["capture_ms"]) < (stop + window) * 1000]
            delays = [float(f["delay_ms"]) for f in after if f["delay_ms"]]
            shown_at = [float(f["display_ms"]) for f in after if f["display_ms"]]
            shown = len(shown_at)
            # The first picture captured after the link came back, shown: when, from its return.
            back = min(shown_at) - stop * 1000 if shown_at else float("nan")
            key = (link, round(start, 1), round(stop, 1))
            mean = sum(delays) / len(delays) if delays else float("nan")
            rows.setdefault(key, {})[scheme] = (mean, max(delays) if delays else float("nan"), shown, back)
    schemes = sorted({s for v in rows.values() for s in v})
    print("| link | outage (s) | " + " | ".join(f"{s}: delay mean / max ms, shown, first fresh picture +ms" for s in schemes) + " |")
    print("|---|---|" + "---|" * len(schemes))
    for (link, start, stop), v in sorted(rows.items()):
        cells = []
        for s in schemes:
            if s in v:
                m, x, n, b = v[s]
                cells.append(f"{m:.0f} / {x:.0f}, {n}, +{b:.0f}")
            else:
                cells.append("-")
        print(f"| {link} | {start:.1f}-{stop:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
