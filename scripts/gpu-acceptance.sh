#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: the GPU tests, the NVRTC test, the runner
# benchmark (scripts/bench: cold build of every lab, warm builds, a rebuild after editing one
# kernel), fresh recordings of every lab (into the folder the chapters show, book.toml's
# recorded-gpu), every lab recorded on every GPU of the machine at once (`record --devices all`,
# its wall time beside one GPU's), and a repeatability check of every lab against them.
# Binaries are built elsewhere and carried in: KERNELBOOK (the CLI) and TESTS (a folder holding
# the `gpu`, `book` and `check` test binaries). OUT receives summary.txt, recorded.tgz (the new
# recordings, the fixture book's and every GPU's (devices/) included) and logs.txt (few files: the device tool brings back
# at most eight). SKIP_BENCH=1 and SKIP_REPEAT=1 leave out the benchmark and the repeatability
# runs, where device time is short, and SKIP_DEVICES=1 the `record --devices all` step. Fresh
# recordings go to the measuring GPU's own folder; RECORD_FOLDER=NAME writes them into that one. RUNS_OF="bandwidth transpose" runs those labs three times one
# after the other (runs.tgz, and each run's ratios in the summary); LIVE_BOOK=1 builds the book
# live after recording (book.tgz).
set -uo pipefail
KERNELBOOK=${KERNELBOOK:-target/release/kernelbook}
TESTS=${TESTS:-.device-bin}
OUT=${OUT:-/tmp/kernelbook-acceptance}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
export KERNELBOOK_REPO=$PWD
RECORD_FOLDER=${RECORD_FOLDER:-}

step() { echo; echo "== $*"; }
seconds() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f} s')"; }

step "device" | tee "$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$OUT/summary.txt"
"$KERNELBOOK" info 2>&1 | tee -a "$OUT/summary.txt"

step "GPU tests"
"$TESTS/gpu" --test-threads=1 --nocapture 2>&1 | tee "$LOGS/gpu-tests.txt"
step "exercise checker on the GPU"
"$TESTS/check" --test-threads=1 --nocapture 2>&1 | tee "$LOGS/check-tests.txt"
step "NVRTC test"
CUDA_CACHE_DISABLE=1 "$TESTS/book" nvrtc --nocapture 2>&1 | tee "$LOGS/nvrtc-test.txt"

if [ "${SKIP_BENCH:-}" != 1 ]; then
    step "benchmark (scripts/bench): cold build, warm builds, rebuild after one edit" | tee -a "$OUT/summary.txt"
    scripts/bench "$KERNELBOOK" 2>&1 | tee -a "$OUT/summary.txt"
fi

step "labs an author wrote (tests/author-labs): recorded, and each shown in the terminal" | tee -a "$OUT/summary.txt"
"$KERNELBOOK" --root tests/author-labs record 2>&1 | tee "$LOGS/author-labs-record.txt"
for lab in softplus row_sums axpy; do
    "$KERNELBOOK" --root tests/author-labs run "$lab" 2>&1 | tee -a "$OUT/summary.txt"
done

step "record every lab" | tee -a "$OUT/summary.txt"
t0=$(seconds); "$KERNELBOOK" record ${RECORD_FOLDER:+--folder "$RECORD_FOLDER"} 2>&1 | tee "$LOGS/record.txt"; t1=$(seconds)
# The folder written: the one named, else this GPU's own (the newest under labs/recorded).
RECORDED=labs/recorded/${RECORD_FOLDER:-$(ls -t labs/recorded | grep -v -e '^experiments$' -e '\.md$' | head -1)}
echo "record (all labs, compile included): $(elapsed "$t0" "$t1")" | tee -a "$OUT/summary.txt"
python3 - "$RECORDED"/*.json <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(f"  {r['lab']:<22} {r['provenance']['wall_seconds']:6.1f} s")
PY

DEVICES="$LOGS/devices"
mkdir -p "$DEVICES"
if [ "${SKIP_DEVICES:-}" != 1 ]; then
    step "every GPU of this machine at once (record --devices all)" | tee -a "$OUT/summary.txt"
    t0=$(seconds); "$KERNELBOOK" record --devices all --out "$DEVICES" 2>&1 | tee "$LOGS/record-devices.txt"; t1=$(seconds)
    echo "record --devices all ($(nvidia-smi -L | wc -l) GPUs): $(elapsed "$t0" "$t1"), against one GPU's above" | tee -a "$OUT/summary.txt"
    grep -E "^│|GPUs measured side by side" "$LOGS/record-devices.txt" | tee -a "$OUT/summary.txt"
fi

# The recordings of every GPU come back as devices/<gpu>/ beside the book's.
tar czf "$OUT/recorded.tgz" labs/recorded tests/author-labs/labs/recorded -C "$LOGS" devices

step "repeatability: every lab measured again, medians compared with the recording" | tee -a "$OUT/summary.txt"
[ "${SKIP_REPEAT:-}" = 1 ] && echo "skipped (SKIP_REPEAT=1)" | tee -a "$OUT/summary.txt"
for recorded in "$RECORDED"/*.json; do
    [ "${SKIP_REPEAT:-}" = 1 ] && break
    lab=$(basename "$recorded" .json)
    "$KERNELBOOK" run "$lab" --json "$LOGS/$lab-again.json" > "$LOGS/$lab-again.txt" 2>&1
    python3 - "$recorded" "$LOGS/$lab-again.json" <<'PY' | tee -a "$OUT/summary.txt"
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

for lab in ${RUNS_OF:-}; do
    step "$lab three times, one run after the other" | tee -a "$OUT/summary.txt"
    mkdir -p "$LOGS/runs"
    for run in 1 2 3; do
        "$KERNELBOOK" run "$lab" --json "$LOGS/runs/$lab-$run.json" > "$LOGS/$lab-run$run.txt" 2>&1
        python3 - "$LOGS/runs/$lab-$run.json" "$run" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
results, run = json.load(open(sys.argv[1])), sys.argv[2]
rate = {v["name"]: v["bytes_moved"] / v["outcome"]["summary"]["median_ms"] / 1e6
        for v in results["variants"] if v["outcome"]["status"] == "measured"}
ceiling = rate.get(results.get("ceiling") or "memcpy")
print(f"run {run} {results['lab']}: " + ", ".join(
    f"{name} {gbs:.0f} GB/s ({gbs / ceiling:.3f}×)" for name, gbs in rate.items()))
PY
    done
done
[ -n "${RUNS_OF:-}" ] && tar czf "$OUT/runs.tgz" -C "$LOGS" runs

if [ "${LIVE_BOOK:-}" = 1 ]; then
    step "the book built live" | tee -a "$OUT/summary.txt"
    t0=$(seconds); "$KERNELBOOK" build 2>&1 | tail -5 | tee -a "$OUT/summary.txt"; t1=$(seconds)
    echo "live build: $(elapsed "$t0" "$t1")" | tee -a "$OUT/summary.txt"
    tar czf "$OUT/book.tgz" target/book
fi

grep -hE "^test |test result|GB/s|wrong kernel|cached lookup|NVRTC|solutions passed" \
    "$LOGS/gpu-tests.txt" "$LOGS/check-tests.txt" "$LOGS/nvrtc-test.txt" >> "$OUT/summary.txt"
cat "$LOGS"/*.txt > "$OUT/logs.txt"
