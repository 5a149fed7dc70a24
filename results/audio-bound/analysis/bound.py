#!/usr/bin/env python3
"""Bounds on what an audio receiver could reach on a simulated run (issue 46).

Usage: bound.py SIM_OUT [PROPAGATION_MS]   (a `salsify sim --audio synthetic` output folder)

Reads packets.log (the link's log: '+' arrivals, '- size delay' departures, FIFO, no drops on these runs) and
frames.csv. Audio packets are the small ones (< 200 bytes) entering the link on the 20 ms grid. For each audio
packet its one-way delay is the link's delay plus the propagation (20 ms by default).

1. A fixed playout delay D: the share of audio frames whose packet arrives after D (concealed or skipped), and the
   share of shown pictures whose audio at display is within ITU-R BT.1359's window (-125..+45 ms), if the audio
   played at D throughout.
2. Audio that follows each picture: the share of audio packets that arrive more than 125 ms after the picture
   captured with them is shown (late even for a receiver that knew each picture's delay in advance).
"""
import bisect
import csv
import sys


def audio_delays(folder, propagation):
    arrivals, departures = [], []
    for line in open(folder + "/packets.log"):
        if line.startswith("#"):
            continue
        f = line.split()
        if len(f) < 3:
            continue
        if f[1] == "+":
            arrivals.append((int(f[0]), int(f[2])))
        elif f[1] == "-":
            departures.append(int(f[3]))
        elif f[1] == "d":
            sys.exit("drops in the log: FIFO matching does not hold")
    return [(t, departures[i] + propagation) for i, (t, size) in enumerate(arrivals)
            if t % 20 == 0 and size < 200]


def main():
    folder = sys.argv[1]
    propagation = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    audio = audio_delays(folder, propagation)
    frames = list(csv.DictReader(open(folder + "/frames.csv")))
    shown = [float(r["delay_ms"]) for r in frames if r["display_ms"] and r["choice"] != "skip"]
    delays = sorted(a for _, a in audio)
    n = len(delays)
    print(f"{folder}: {n} audio packets, one-way delay p50 {delays[n // 2]} p95 {delays[int(0.95 * n)]} "
          f"p98 {delays[int(0.98 * n)]} p99 {delays[int(0.99 * n)]} ms; {len(shown)} pictures shown")
    print("fixed D ms | audio late | pictures in window")
    for d in range(60, 261, 20):
        late = sum(1 for a in delays if a > d) / n
        inside = sum(1 for v in shown if -45 <= d - v <= 125) / len(shown)
        print(f"{d} | {100 * late:.1f}% | {100 * inside:.1f}%")
    captures = [float(r["capture_ms"]) for r in frames]
    picture_delay = [float(r["delay_ms"]) if r["delay_ms"] else None for r in frames]
    late, scored = 0, 0
    for t, a in audio:
        i = bisect.bisect_right(captures, t) - 1
        if i < 0 or picture_delay[i] is None:
            continue
        scored += 1
        late += a > picture_delay[i] + 125
    print(f"following each picture: {100 * late / scored:.2f}% of {scored} audio packets later than "
          f"their picture + 125 ms")


main()
