#!/usr/bin/env python3
"""Offline model of audio playout on a simulated run's link log (issue 46): a player that waits for a late packet
(never concealing on a FIFO link) and sheds delay by playing two frames in the time of one (2x), at a fixed target
delay D or at a target following the pictures. What share of the time it stalls (plays filler while waiting) and
what share of the shown pictures keep their audio in BT.1359's window.

Usage: playout_model.py SIM_OUT      (a `salsify sim --audio synthetic` output folder, as bound.py reads)
A model, not the player: it ignores DTX, FEC and the player's exact rules; its figures are for the trade's shape.
"""
import csv, sys, bisect, statistics

def load(folder, prop=20):
    arr, dep = [], []
    for line in open(folder + "/packets.log"):
        if line.startswith("#"): continue
        f = line.split()
        if len(f) < 3: continue
        if f[1] == "+": arr.append((int(f[0]), int(f[2])))
        elif f[1] == "-": dep.append(int(f[3]))
    audio = {}
    for i, (t, s) in enumerate(arr):
        if t % 20 == 0 and s < 200:
            audio[t // 20] = t + dep[i] + prop
    frames = list(csv.DictReader(open(folder + "/frames.csv")))
    shown = [(float(r["capture_ms"]), float(r["display_ms"])) for r in frames if r["display_ms"]]
    return audio, shown

def play(audio, shown, skip_lag=None, accel_remove=10, bias=40, span=500, own_pct=0.9, window=75, thresh=20, sync=True, max_lag=100):
    """Returns list of played segments (start, dur, kind, cap_start, cap_len)"""
    n = max(audio) + 1
    k = min(audio)
    T = audio[k] + 50
    out = []
    recent = []  # (shown_at, delay)
    si = 0
    arrivals_sorted = sorted((a, f) for f, a in audio.items())
    ai = 0
    own_delays = []
    while k < n - 1 and T < 60000:
        # pictures shown up to T
        while si < len(shown) and shown[si][1] <= T:
            recent.append((shown[si][1], shown[si][1] - shown[si][0])); si += 1
        while recent and T - recent[0][0] > span: recent.pop(0)
        while ai < len(arrivals_sorted) and arrivals_sorted[ai][0] <= T:
            f = arrivals_sorted[ai][1]; own_delays.append(arrivals_sorted[ai][0] - 20 * f); ai += 1
        w = sorted(own_delays[-window:])
        own = w[min(len(w) - 1, int(own_pct * len(w)))] if w else 50
        tgt = own
        if sync and recent:
            v = sorted(d for _, d in recent)[len(recent) // 2]
            tgt = min(max(own, v + bias), v + max(max_lag, bias))
        if skip_lag and recent and audio.get(k, 1e18) <= T and (T - 20 * k) - recent[-1][1] > skip_lag and audio.get(k + 1, 1e18) <= T:
            out.append((T, 0, "skip", 20 * k, 0)); k += 1; continue
        if audio.get(k, 1e18) <= T:
            cur = T - 20 * k
            if cur > tgt + thresh and audio.get(k + 1, 1e18) <= T:
                d = 40 - accel_remove
                out.append((T, d, "acc", 20 * k, 40)); T += d; k += 2
            elif cur < tgt - thresh:
                out.append((T, 20, "stretch", 20 * k, 0)); T += 20
            else:
                out.append((T, 20, "pkt", 20 * k, 20)); T += 20; k += 1
        else:
            out.append((T, 20, "wait", 20 * k, 0)); T += 20
    return out

def score(out, shown):
    starts = [o[0] for o in out]
    delays = []
    for (t, d, kind, c, cl) in out:
        if cl == 20: delays.append(t - c)
        elif cl == 40: delays += [t - c, t + d / 2 - c - 20]
    delays.sort()
    ins, tot = 0, 0
    for cap, at in shown:
        i = bisect.bisect_right(starts, at) - 1
        if i < 0: continue
        t, d, kind, c, cl = out[i]
        if at - t > d: continue
        heard = c if cl == 0 else c + (at - t) * cl / d
        lead = heard - cap
        tot += 1; ins += -125 <= lead <= 45
    kinds = {}
    for o in out: kinds[o[2]] = kinds.get(o[2], 0) + 1
    n = len(delays)
    return dict(mean=round(statistics.mean(delays), 1), p95=delays[int(0.95 * n)], win=round(100 * ins / tot, 1),
                **{k: round(100 * v / n, 1) for k, v in kinds.items()})

def oneway(audio):
    d = sorted(a - 20 * f for f, a in audio.items())
    return {q: d[int(q * len(d))] for q in (0.5, 0.9, 0.95, 0.98)}

def fixed(audio, shown, D, accel_remove=20, thresh=10):
    n = max(audio) + 1; k = min(audio); T = 20 * k + D; out = []
    while k < n - 1:
        if audio.get(k, 1e18) <= T:
            cur = T - 20 * k
            if cur > D + thresh and audio.get(k + 1, 1e18) <= T:
                d = 40 - accel_remove; out.append((T, d, "acc", 20 * k, 40)); T += d; k += 2
            else:
                out.append((T, 20, "pkt", 20 * k, 20)); T += 20; k += 1
        else:
            out.append((T, 20, "wait", 20 * k, 0)); T += 20
    return out

if __name__ == "__main__":
    audio, shown = load(sys.argv[1])
    print("waiting player at a fixed delay D: D ms | stall share | pictures in window | delay p95")
    for D in (100, 120, 140, 160, 180, 200, 240):
        r = score(fixed(audio, shown, D), shown)
        print(f"{D} | {r.get('wait', 0)}% | {r['win']}% | {r['p95']}")
