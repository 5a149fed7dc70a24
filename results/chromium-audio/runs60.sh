#!/bin/bash
S=./salsify-bin; T=/work/shared/traces/Verizon-LTE-short
run() { name=$1; shift; echo "$name $(date -u +%T) load $(cat /proc/loadavg)" >> loads.txt; "$@" > $name.stdout 2> $name.stderr; echo "$name exit $? $(date -u +%T)" >> loads.txt; }
run vp8-60 $S peer chromium --audio synthetic --duration 60 --trace $T --out vp8-60
run salsify-60 $S demo --trace $T --duration 60 --out salsify-60
$S audio-marks salsify-60/audio.wav --delay salsify-60/audio.csv --out salsify-60/marks > salsify-60.marks 2>&1
echo all-done-60 >> loads.txt
