#!/usr/bin/env python3
"""One trace's runs over time: per window, each scheme's pictures shown, mean delay of the
pictures captured in it, and bytes sent, from frames.csv (written by `salsify eval`, not in git).

Usage: results/corpus/analysis/series.py EVAL_OUT_DIR LINK [WINDOW_S] [FROM_S] [TO_S]
"""
import csv
import json
import os
import sys


def main():
    root, link = sys.argv[1], sys.argv[2]
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    lo = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    hi = float(sys.argv[5]) if len(sys.argv) > 5 else 1e9
    series = {}
    for run in sorted(os.listdir(os.path.join(root, "runs"))):
        d = os.path.join(root, "runs", run)
        if json.load(open(os.path.join(d, "run.json")))["link"] != link:
            continue
        per = {}
        for f in csv.DictReader(open(os.path.join(d, "frames.csv"))):
            t = float(f["capture_ms"]) / 1000
            if not lo <= t < hi:
                continue
            w = int((t - lo) / window)
            slot = per.setdefault(w, [0, [], 0])
            slot[0] += 1 if f["display_ms"] else 0
            if f["delay_ms"]:
                slot[1].append(float(f["delay_ms"]))
            slot[2] += int(f["bytes"] or 0)
        series[run.split("__")[0]] = per
    schemes = sorted(series)
    print("| from s | " + " | ".join(f"{s}: shown, delay ms, kB" for s in schemes) + " |")
    print("|---|" + "---|" * len(schemes))
    for w in sorted({w for per in series.values() for w in per}):
        cells = []
        for s in schemes:
            n, delays, b = series[s].get(w, (0, [], 0))
            mean = sum(delays) / len(delays) if delays else float("nan")
            cells.append(f"{n}, {mean:.0f}, {b / 1000:.0f}")
        print(f"| {lo + w * window:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
