#!/bin/bash
S=./salsify-bin; T=/work/shared/traces/Verizon-LTE-short
run() { name=$1; shift; echo "$name $(date -u +%T) load $(cat /proc/loadavg)" >> loads.txt; "$@" > $name.stdout 2> $name.stderr; echo "$name exit $?" >> loads.txt; }
run salsify-2 $S demo --trace $T --duration 30 --out salsify-2
$S audio-marks salsify-2/audio.wav --delay salsify-2/audio.csv --out salsify-2/marks > salsify-2.marks 2>&1
run vp8-3 $S peer chromium --audio synthetic --duration 30 --trace $T --out vp8-3
run av1-1 $S peer chromium --audio synthetic --codec av1 --duration 30 --trace $T --out av1-1
run salsify-nosync-1 $S demo --trace $T --duration 30 --sync none --out salsify-nosync-1
$S audio-marks salsify-nosync-1/audio.wav --delay salsify-nosync-1/audio.csv --out salsify-nosync-1/marks > salsify-nosync-1.marks 2>&1
echo all-done >> loads.txt
