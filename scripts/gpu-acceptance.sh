#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: the GPU tests, the NVRTC test, cold and warm
# builds, an edit that must re-measure one lab only, and fresh recordings of every lab.
# Binaries are built elsewhere and carried in: KERNELBOOK (the CLI) and TESTS (a folder holding
# the `gpu` and `book` test binaries). OUT receives summary.txt, the recorded results and the
# step logs (few files: the device tool brings back at most eight).
set -uo pipefail
KERNELBOOK=${KERNELBOOK:-target/release/kernelbook}
TESTS=${TESTS:-.device-bin}
OUT=${OUT:-/tmp/kernelbook-acceptance}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
export KERNELBOOK_REPO=$PWD

step() { echo; echo "== $*"; }
seconds() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f} s')"; }

step "device" | tee "$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$OUT/summary.txt"
"$KERNELBOOK" info 2>&1 | tee -a "$OUT/summary.txt"
"$KERNELBOOK" compile copy_float4 2>&1 | tee -a "$OUT/summary.txt"

step "GPU tests"
"$TESTS/gpu" --test-threads=1 --nocapture 2>&1 | tee "$LOGS/gpu-tests.txt"
step "NVRTC test"
CUDA_CACHE_DISABLE=1 "$TESTS/book" nvrtc --nocapture 2>&1 | tee "$LOGS/nvrtc-test.txt"

step "cold build (empty cache: measures every lab)"
rm -rf .kernelbook
t0=$(seconds); "$KERNELBOOK" build 2>&1 | tee "$LOGS/build-cold.txt"; t1=$(seconds)
echo "cold build: $(elapsed "$t0" "$t1")" | tee -a "$OUT/summary.txt"
step "warm build (nothing changed: no GPU work)"
t0=$(seconds); "$KERNELBOOK" build 2>&1 | tee "$LOGS/build-warm.txt"; t1=$(seconds)
echo "warm build: $(elapsed "$t0" "$t1")" | tee -a "$OUT/summary.txt"
step "edit transpose_padded: only the transpose lab is measured again"
cp book/src/labs/lab2-transpose.md /tmp/lab2.md
sed -i 's|__shared__ float tile\[TILE\]\[TILE + 1\];|__shared__ float tile[TILE][TILE + 1];  /* edited */|' book/src/labs/lab2-transpose.md
t0=$(seconds); "$KERNELBOOK" build 2>&1 | tee "$LOGS/build-edit.txt"; t1=$(seconds)
echo "build after one edit: $(elapsed "$t0" "$t1")" | tee -a "$OUT/summary.txt"
grep -o "lab \`[a-z_]*\`: preparing" "$LOGS/build-edit.txt" | sort | uniq -c | tee -a "$OUT/summary.txt"
cp /tmp/lab2.md book/src/labs/lab2-transpose.md

step "record every lab"
t0=$(seconds); "$KERNELBOOK" record 2>&1 | tee "$LOGS/record.txt"; t1=$(seconds)
echo "record (all labs, compile included): $(elapsed "$t0" "$t1")" | tee -a "$OUT/summary.txt"
cp labs/recorded/*.json "$OUT/"
grep -hE "^test |test result|GB/s|wrong kernel|cached lookup|NVRTC" "$LOGS/gpu-tests.txt" "$LOGS/nvrtc-test.txt" >> "$OUT/summary.txt"
cat "$LOGS"/*.txt > "$OUT/logs.txt"

step "repeatability: every lab measured once more, medians compared with the recording"
for lab in bandwidth transpose; do
    "$KERNELBOOK" run "$lab" --json "$LOGS/$lab-again.json" > /dev/null 2>&1
    python3 - "labs/recorded/$lab.json" "$LOGS/$lab-again.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
first, second = (json.load(open(path)) for path in sys.argv[1:3])
def medians(results):
    return {v["name"]: v["outcome"]["summary"]["median_ms"] for v in results["variants"]
            if v["outcome"]["status"] == "measured"}
a, b = medians(first), medians(second)
for name in a:
    if name in b:
        print(f"repeat {first['lab']}/{name}: {a[name]:.4f} ms then {b[name]:.4f} ms ({100 * (b[name] - a[name]) / a[name]:+.2f} %)")
PY
done
