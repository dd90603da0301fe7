#!/bin/bash
# One GPU session for the wgmma family on an H100, about 6 minutes: the compile checks (which also fill the compile
# cache), the structured probe (where a wrong element came from; a deadlock is named), the GPU tests through the real
# backend, the fastest designs against cuBLAS at 4096³ and 8192³ (benchmarks/vs_cublas.py, the project's measuring
# path), compute-sanitizer memcheck on an odd shape, and one Nsight Compute profile. From the checkout's root:
#
#     OUT=/some/folder bash benchmarks/wgmma_check.sh
#
# Logs go to $OUT (8 files; default /tmp/wgmma_check); the lines printed last are a compact table of the outcomes.
set -o pipefail
OUT=${OUT:-/tmp/wgmma_check}
mkdir -p "$OUT"
if [ -f .device/setup.sh ]; then
    source .device/setup.sh || exit 1
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export TUNER_CACHE_DIR=${TUNER_CACHE_DIR:-/tmp/tuner-cache}
started=$SECONDS
BUDGET=${BUDGET:-540}   # seconds for all the steps together: each step's limit shrinks to what is left
step() { echo "[$((SECONDS - started)) s] $*" >&2; }
limit() {  # the smaller of $1 and the seconds left of the budget (at least 5)
    local left=$((BUDGET - (SECONDS - started)))
    echo $(( left < $1 ? (left > 5 ? left : 5) : $1 ))
}

step "compile checks"
timeout $(limit 100) python3 -m pytest -q -p no:cacheprovider tests/test_wgmma_compile.py > "$OUT/compile.txt" 2>&1

step "structured probe"
{
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
    for dtype in bfloat16 float16 tf32; do  # one process per dtype: a deadlock ends only its own dtype's rungs
        timeout $(limit 60) python3 benchmarks/wgmma_probe.py --dtypes $dtype
    done
} > "$OUT/probe.txt" 2>&1

step "GPU tests"
timeout $(limit 180) python3 -m pytest -q -p no:cacheprovider -m gpu -rfE tests/gpu/test_wgmma.py > "$OUT/gpu_tests.txt" 2>&1

step "against cuBLAS"
timeout $(limit 170) python3 benchmarks/vs_cublas.py --configs benchmarks/wgmma_timing.json --rounds 2 --max-time 0.3 \
    --out "$OUT" --name wgmma_vs_cublas > "$OUT/timing_log.txt" 2>&1

step "memcheck"
timeout $(limit 80) compute-sanitizer --tool memcheck --print-limit 20 \
    python3 benchmarks/wgmma_probe.py --random-only --rungs 0,3 --shape 333,520,200 > "$OUT/memcheck.txt" 2>&1

step "profile"
timeout $(limit 60) ncu --kernel-name matmul --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    python3 benchmarks/wgmma_probe.py --launch-only --dtypes bfloat16 --rungs 3 --shape 8192,8192,8192 \
    > "$OUT/ncu.txt" 2>&1
step "done"

echo
echo "== wgmma check ($((SECONDS - started)) s; logs in $OUT)"
echo "compile:   $(tail -n 1 "$OUT/compile.txt")"
echo "probe:     $(grep -c ': ok' "$OUT/probe.txt") cases ok, $(grep -Ec 'wrong|WRONG|never written|HANG|Error|error' "$OUT/probe.txt") not"
grep -E 'wrong|WRONG|never written|HANG|Error|error' "$OUT/probe.txt" | head -n 8 | cut -c1-230
echo "gpu tests: $(tail -n 1 "$OUT/gpu_tests.txt")"
grep -E '^FAILED' "$OUT/gpu_tests.txt" | head -n 8 | cut -c1-230
echo "memcheck:  $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tr '\n' ' ') $(grep -c ': ok' "$OUT/memcheck.txt") random cases ok"
echo "profile:   $(grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per Thread|Achieved Occupancy' "$OUT/ncu.txt" | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
echo "against cuBLAS (TFLOP/s, ratio = kernel/cuBLAS):"
grep -E '^[0-9]+x[0-9]+x[0-9]+ ' "$OUT/timing_log.txt" | awk '{printf "  %-15s %-9s %8s %8s %6s  %s\n", $1, $2, $3, $4, $5, substr($0, index($0, "wgmma"))}' \
    | sed -E 's/ BK=[0-9]+//; s/ STAGES=/ S=/; s/ CONSUMERS=/ C=/; s/ CLUSTER=/ CL=/; s/ PERSISTENT=/ P=/; s/ GROUP=/ G=/; s/ REGALLOC=/ R=/'
grep -E '/wgmma/|Error|error:' "$OUT/timing_log.txt" | grep -v 'against cuBLAS…' | head -n 6 | cut -c1-230
