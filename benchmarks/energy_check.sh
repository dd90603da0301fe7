#!/bin/bash
# The energy work's whole check on a GPU machine, in one call of about five minutes:
#   1. the NVML energy counter itself: its resolution and update interval, idle and under load
#      (benchmarks/energy_counter.py);
#   2. the GPU tests of energy (tests/gpu/test_energy.py);
#   3. fermi_like recorded again with energy: every valid configuration (brute force), time and energy;
#   4. h100_sgemm recorded again with energy: time and energy searched together (the experiment's TPE, multi-objective),
#      16 configurations per study;
#   5. benchmarks/energy.py on that recording: energy per GEMM over 5 rounds (repeatability, goal 2%), and the
#      energy-optimal configuration at 4096³ against the time-optimal one.
# Clocks and power limits are only read (NVML, nvidia-smi -q), never set.
#
# Run from the project root, with the staged wheels carried in .device (../shared/device/stage.sh):
#   OUT=/some/folder bash benchmarks/energy_check.sh
# Writes $OUT/energy_check.log (everything), $OUT/energy_summary.txt (the tables) and $OUT/energy_results.zip
# (the benchmarks' .txt/.json, and results.parquet, results.csv and metadata.json of both recordings).
set -u
: "${OUT:?set OUT to the folder the results go to}"
started=$SECONDS
work=$(mktemp -d)
log=$OUT/energy_check.log
mkdir -p "$OUT" "$work/bench"
exec > >(tee -a "$log") 2>&1

step() { echo; echo "=== [$((SECONDS - started)) s] $*"; }
status() { echo "--- exit status $1 after $((SECONDS - started)) s"; }

step "setup"
source .device/setup.sh || { echo "setup failed"; exit 1; }
export TUNER_GIT_COMMIT=${TUNER_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}
export TUNER_GIT_DIRTY=${TUNER_GIT_DIRTY:-0}
echo "commit: ${TUNER_GIT_COMMIT:-unknown}"
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,power.draw,clocks.sm,clocks.max.sm,temperature.gpu,persistence_mode --format=csv

step "1. the energy counter: resolution and update interval"
timeout -s TERM 40 python benchmarks/energy_counter.py --seconds 2 --out "$work/bench"
status $?

step "2. GPU tests of energy"
timeout -s TERM 120 python -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_energy.py 2>&1 | tee "$work/gpu_tests.txt"
status "${PIPESTATUS[0]}"

step "3. fermi_like recorded with energy (brute force, time and energy)"
timeout -s TERM 130 python -m tuner run experiments/fermi_like.yaml --backend pycuda --strategy bruteforce \
    --trials 100 --objective time,energy --out "$work/fermi_like_h100" --no-report 2>&1 | tee "$work/fermi_like.txt"
status "${PIPESTATUS[0]}"

step "4. h100_sgemm recorded with energy (time and energy, 16 configurations per study)"
timeout -s TERM 170 python -m tuner run experiments/h100_sgemm.yaml --objective time,energy --trials 16 \
    --timeout 30 --out "$work/h100_sgemm_h100" --no-report 2>&1 | tee "$work/h100_sgemm.txt"
status "${PIPESTATUS[0]}"

step "5. benchmarks/energy.py: repeatability and the energy-optimal configuration at 4096³"
timeout -s TERM 150 python benchmarks/energy.py "$work/h100_sgemm_h100" --rounds 5 --out "$work/bench"
status $?

step "packing"
(cd "$work" && python -c '
import sys, zipfile
from pathlib import Path
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for path in sorted(Path("bench").glob("*")):
        z.write(path)
    for run in ("fermi_like_h100", "h100_sgemm_h100"):
        for name in ("results.parquet", "results.csv", "metadata.json"):
            if (Path(run) / name).is_file():
                z.write(Path(run) / name)
    for name in ("gpu_tests.txt", "fermi_like.txt", "h100_sgemm.txt"):
        if Path(name).is_file():
            z.write(name)
    print("\n".join(z.namelist()))
' "$OUT/energy_results.zip")
{
  echo "=== the energy counter"; cat "$work"/bench/energy_counter_*.txt 2>/dev/null
  echo; echo "=== GPU tests"; tail -n 3 "$work/gpu_tests.txt" 2>/dev/null
  for run in fermi_like h100_sgemm; do
    echo; echo "=== $run: summary"
    sed -n '/^problem /,$p' "$work/$run.txt" 2>/dev/null | grep -v '^report' | head -n 60
  done
  echo; echo "=== benchmarks/energy.py"
  for found in "$work"/bench/energy_*.txt; do
    case $found in *energy_counter_*) ;; *) cat "$found" ;; esac
  done
} > "$OUT/energy_summary.txt"
rm -rf "$work"
step "done"
cat "$OUT/energy_summary.txt"
