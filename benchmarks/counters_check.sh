#!/bin/bash
# The GPU check of the hardware counters (tuner.counters), in one go, from the repository root of a GPU machine with
# Nsight Compute's ncu (about 5 minutes on an H100):
#
#     OUT=/some/folder bash benchmarks/counters_check.sh
#
# 1. python -m tuner device --remeasure: the ceilings, the new L2, L1 and shared-memory bandwidths among them;
# 2. the GPU tests of the counters (tests/gpu/test_counters.py): the seed kernels counted at 1024³, a run with
#    counters and python -m tuner profile;
# 3. benchmarks/counters.py: fermi_like.yaml with every configuration counted against none (wall time), and the
#    tile's cut at the L1 at 4096³, whose raw Nsight Compute page it saves as a test fixture.
#
# Writes under $OUT (eight files): counters_check.log (everything printed), device.txt, counters_<gpu>.txt and
# .json (for benchmarks/results/), ncu_raw_counters_<gpu>.csv and .json (for tests/data/), the fermi_like run folder
# with its counters (fermi_like_counters_run.tgz) and its hierarchical roofline at 4096³ (a PNG). Never touches the
# card's clocks, power limit or modes; ncu runs with --clock-control none.
set -o pipefail
OUT=${OUT:-/tmp/counters_check}
mkdir -p "$OUT"
exec > >(tee "$OUT/counters_check.log") 2>&1
if [ -f .device/setup.sh ]; then source .device/setup.sh || exit 1; fi
export TUNER_CACHE_DIR=${TUNER_CACHE_DIR:-/tmp/tuner-cache}
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $1 ($(date +%T))"; }

step "the GPU and Nsight Compute"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
command -v ncu && ncu --version | tail -1

step "1. python -m tuner device --remeasure"
timeout 300 python3 -m tuner device --remeasure | tee "$OUT/device.txt"

step "2. GPU tests of the counters"
timeout 420 python3 -m pytest -m gpu -q -rs -s -p no:cacheprovider tests/gpu/test_counters.py 2>&1 | tail -60

step "3. benchmarks/counters.py"
RUNS=$(mktemp -d)
timeout 900 python3 benchmarks/counters.py --rounds 1 --out "$OUT" --fixture "$OUT" --keep "$RUNS/fermi_like"
if [ -d "$RUNS/fermi_like" ]; then
    cp "$RUNS"/fermi_like/roofline_hierarchical_float32_4096x4096x4096.png "$OUT/" 2>/dev/null
    tar czf "$OUT/fermi_like_counters_run.tgz" -C "$RUNS" --exclude='*.png' --exclude='report.html' fermi_like
    python3 - "$RUNS/fermi_like" <<'PY'
import sys, pandas as pd
df = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
ok = df[(~df["family"].isin(["baseline", "cublas"])) & (df["status"] == "ok")]
cols = ["problem", "family", "p_BLOCK_X", "p_BLOCK_Y", "p_TILE_WIDTH", "gflops", "intensity", "intensity_l1",
        "intensity_l2", "intensity_dram", "l1_vs_model", "requested_vs_model", "flops_vs_model"]
print(ok[[c for c in cols if c in ok]].sort_values(["problem", "family", "gflops"]).to_string(index=False))
PY
fi
rm -rf "$RUNS"

step "done: files in $OUT"
ls -l "$OUT"
