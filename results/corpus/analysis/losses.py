#!/usr/bin/env python3
"""Where Salsify-2c does not lead: per trace, Salsify-2c's mean / p95 delay, SSIM and frames shown
against a peer's, for every trace where it does not lead the peer on all three.

Usage: results/corpus/analysis/losses.py EVAL_OUT_DIR [PEER]   (PEER default: conventional)
Reads each run's summary.json (kept in git); prints a markdown table, slowest links first.
"""
import json
import os
import sys


def main():
    root = sys.argv[1]
    peer = sys.argv[2] if len(sys.argv) > 2 else "conventional"
    runs = {}
    for run in os.listdir(os.path.join(root, "runs")):
        d = os.path.join(root, "runs", run)
        s = json.load(open(os.path.join(d, "summary.json")))
        link = json.load(open(os.path.join(d, "run.json")))["link"]
        runs.setdefault(link, {})[run.split("__")[0]] = s
    print(f"| trace | capacity Mb/s | salsify-2c mean / p95 ms | {peer} mean / p95 ms | SSIM dB (2c - {peer}) | fps 2c / {peer} | 2c skipped | what 2c loses |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for link, by in runs.items():
        a, b = by.get("salsify-2c"), by.get(peer)
        if not a or not b or a["delay_p95_ms"] is None or b["delay_p95_ms"] is None:
            continue
        lost = []
        if a["delay_mean_ms"] >= b["delay_mean_ms"]:
            lost.append("mean")
        if a["delay_p95_ms"] >= b["delay_p95_ms"]:
            lost.append("p95")
        if a["ssim_db_mean"] <= b["ssim_db_mean"]:
            lost.append("SSIM")
        if a["displayed_fps"] < 0.9 * b["displayed_fps"]:
            lost.append("fps")
        if not lost:
            continue
        cap = (a.get("network") or {}).get("capacity_kbps", 0) / 1000
        rows.append((cap, f"| {link} | {cap:.2f} | {a['delay_mean_ms']:.0f} / {a['delay_p95_ms']:.0f} | "
                    f"{b['delay_mean_ms']:.0f} / {b['delay_p95_ms']:.0f} | {a['ssim_db_mean'] - b['ssim_db_mean']:+.2f} | "
                    f"{a['displayed_fps']:.1f} / {b['displayed_fps']:.1f} | {a['skip_share'] * 100:.0f}% | {', '.join(lost)} |"))
    for _, row in sorted(rows):
        print(row)


if __name__ == "__main__":
    main()
