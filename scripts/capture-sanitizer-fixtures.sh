#!/usr/bin/env bash
# Runs on a GPU machine with the CUDA toolkit (nvcc, compute-sanitizer), from the repository
# root: captures what compute-sanitizer prints for each probe kernel of
# runner/tests/fixtures/sanitizer/probes/, for the parser's fixtures (issue 30).
#
#   OUT=/some/folder [KERNELBOOK=target/release/kernelbook] bash scripts/capture-sanitizer-fixtures.sh
#
# Each probe is one small kernel with one deliberate bug (an out-of-bounds write, a shared-
# memory race, a halo never loaded, a read of unwritten global memory, a divergent barrier, a
# misaligned vector access) and a clean one. The harness (probes/harness.cu) runs it once the
# way kernelbook runs a variant; it is built twice: by nvcc with -lineinfo, and with the kernel
# compiled at run time by NVRTC as kernelbook compiles it (program NAME.cu, -lineinfo, the
# CUBIN loaded with cuModuleLoadData), once also behind a `#line 40 "book/src/…md"` directive.
# Every probe runs plain first (its output dumped, for the poisoned-output analysis), then
# under the tools with the options the runner will use, most important runs first.
#
# Everything lands in one folder, tarred to $OUT/sanitizer-fixtures.tgz: environment.txt (GPU,
# driver, nvcc, compute-sanitizer --version), help.txt (compute-sanitizer --help), build/*.txt
# (the compilers' output), plain/ (each probe without the tool: stdout, dumps), runs/ (per run:
# ID.cmd, ID.log — the tool's text, from --log-file —, ID.stdout, ID.stderr, ID.xml where asked,
# ID.rc) and runs.tsv (id, build, tool, kernel, exit status, seconds, state). Never hangs: every
# command has a time limit (RUN_TIMEOUT_S, default 15 s), and no run starts once BUDGET_S
# (default 95 s) has passed since the start; those left are listed as skipped. A sanitizer that
# refuses the machine ("Device not supported", …) is recorded in refused.txt; then only a few
# more runs are tried, to show the refusal for every tool. With KERNELBOOK=path/to/kernelbook
# (a release build carried in), one more run grades a learner's drill_coalesce kernel with
# `kernelbook check` under memcheck (run K1, at most KERNELBOOK_TIMEOUT_S, default 30 s).
# Worst case about 110 s; a GPU that runs each tool in a second or two takes about a minute.
set -uo pipefail

START_NS=$(date +%s%N)
OUT=${OUT:-/tmp/sanitizer-fixtures-out}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-15}
BUDGET_S=${BUDGET_S:-95}
PROBES=$PWD/runner/tests/fixtures/sanitizer/probes
WORK=$(mktemp -d)
FIX=$WORK/sanitizer-fixtures
mkdir -p "$OUT" "$FIX/build" "$FIX/plain" "$FIX/runs"

NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
SANITIZER=${KERNELBOOK_SANITIZER:-$(command -v compute-sanitizer || true)}
for candidate in "$CUDA_HOME/bin/compute-sanitizer" "$CUDA_HOME/compute-sanitizer/compute-sanitizer"; do
    [ -n "$SANITIZER" ] || { [ -x "$candidate" ] && SANITIZER=$candidate; }
done
export LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

elapsed_ms() { echo $(( ($(date +%s%N) - START_NS) / 1000000 )); }
seconds_since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

# The sanitizer options every run gets: what the runner's command line will hold.
COMMON=(--print-limit 64 --error-exitcode 86 --show-backtrace device --launch-timeout 60)

# The launch of each probe: grid x, grid y, block x, block y, n, in length, out length, flags.
shape() {
    case $1 in
        shared_race) echo "2 2 32 8 64 4096 4096" ;;
        divergent_barrier) echo "2 1 64 1 128 128 128" ;;
        early_return_barrier) echo "4 1 256 1 1000 1000 1000" ;;
        misaligned_vector) echo "1 1 256 1 1024 1024 1024" ;;
        uninit_accumulate) echo "4 1 256 1 1024 1024 1024 --unwritten-output" ;;
        *) echo "4 1 256 1 1024 1024 1024" ;;
    esac
}

# The harness command line for KERNEL built BUILD: nvcc, nvrtc, nvrtc-line (behind a #line
# directive), nvrtc-next (a buffer allocated right after `out`).
harness() {
    local build=$1 kernel=$2
    local nvrtc="$WORK/harness-nvrtc $kernel $(shape "$kernel") --source $PROBES/kernels/$kernel.cu"
    case $build in
        nvcc) echo "$WORK/harness-nvcc $kernel $(shape "$kernel")" ;;
        nvrtc) echo "$nvrtc" ;;
        nvrtc-line) echo "$nvrtc --line-directive 40:book/src/exercises/drill-sanitizer.md" ;;
        nvrtc-next) echo "$nvrtc --next" ;;
    esac
}

{
    echo "== date"; date -u
    echo "== nvidia-smi"; timeout 20 nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap,memory.total --format=csv 2>&1
    echo "== uname"; uname -a
    echo "== nvcc ($NVCC)"; timeout 20 "$NVCC" --version 2>&1
    echo "== compute-sanitizer (${SANITIZER:-not found})"
    [ -n "$SANITIZER" ] && timeout 20 "$SANITIZER" --version 2>&1
    echo "== CUDA_HOME=$CUDA_HOME"
    ls "$CUDA_HOME/bin" 2>&1 | tr '\n' ' '; echo
} > "$FIX/environment.txt" 2>&1
cat "$FIX/environment.txt"
[ -n "$SANITIZER" ] && timeout 20 "$SANITIZER" --help > "$FIX/help.txt" 2>&1

ARCH=sm_$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ "$ARCH" = sm_ ] && ARCH=sm_90
echo "== building the harness for $ARCH ($(elapsed_ms) ms)"
(
    cd "$PROBES" &&
        timeout 120 "$NVCC" -arch="$ARCH" -lineinfo -o "$WORK/harness-nvcc" harness.cu -ldl \
            > "$FIX/build/nvcc.txt" 2>&1
    echo "exit $?" >> "$FIX/build/nvcc.txt"
) &
(
    cd "$PROBES" &&
        timeout 120 "$NVCC" -arch="$ARCH" -DWITH_NVRTC -o "$WORK/harness-nvrtc" harness.cu \
            -lnvrtc -ldl -Xlinker -rpath="$CUDA_HOME/lib64" > "$FIX/build/nvrtc.txt" 2>&1
    echo "exit $?" >> "$FIX/build/nvrtc.txt"
) &
wait
tail -n 3 "$FIX/build/"*.txt
echo "== built ($(elapsed_ms) ms)"

# Each probe without the tool: does it fail as meant, and what is in its output afterwards.
plain() {
    local kernel=$1 started
    started=$(date +%s%N)
    # shellcheck disable=SC2046
    timeout -k 2 10 $(harness "${2:-nvrtc}" "$kernel") --dump "$FIX/plain/$kernel" \
        > "$FIX/plain/$kernel.stdout" 2> "$FIX/plain/$kernel.stderr"
    echo "exit $? after $(seconds_since "$started") s" >> "$FIX/plain/$kernel.stdout"
}
for kernel in clean_copy oob_tail shared_race halo_unloaded uninit_accumulate misaligned_vector; do
    plain "$kernel"
done
plain oob_neighbour nvrtc-next
echo "== plain runs ($(elapsed_ms) ms)"

printf 'id\tbuild\ttool\tkernel\texit\tseconds\tstate\toptions\n' > "$FIX/runs.tsv"
REFUSED=
AFTER_REFUSAL=0

# sanitize ID BUILD TOOL KERNEL [EXTRA OPTIONS…]: one run under the tool, recorded as runs/ID.*.
sanitize() {
    local id=$1 build=$2 tool=$3 kernel=$4
    shift 4
    local extra=("$@") base=$FIX/runs/$id
    if [ -z "$SANITIZER" ]; then
        printf '%s\t%s\t%s\t%s\t\t\tno-sanitizer\t%s\n' "$id" "$build" "$tool" "$kernel" "${extra[*]}" >> "$FIX/runs.tsv"
        return
    fi
    if (( $(elapsed_ms) > BUDGET_S * 1000 )) || { [ -n "$REFUSED" ] && (( AFTER_REFUSAL >= 3 )); }; then
        printf '%s\t%s\t%s\t%s\t\t\tskipped\t%s\n' "$id" "$build" "$tool" "$kernel" "${extra[*]}" >> "$FIX/runs.tsv"
        return
    fi
    [ -n "$REFUSED" ] && AFTER_REFUSAL=$((AFTER_REFUSAL + 1))
    local xml=() shown="${extra[*]}"
    if [ "${extra[0]:-}" = xml ]; then
        xml=(--xml --save "$base.xml")
        extra=("${extra[@]:1}")
    fi
    local filter=(--kernel-name "kne=$kernel" --launch-count 1)
    if [ "${extra[0]:-}" = nofilter ]; then
        filter=()
        extra=("${extra[@]:1}")
    fi
    # shellcheck disable=SC2206
    local command=("$SANITIZER" --tool "$tool" --log-file "$base.log" "${COMMON[@]}" "${filter[@]}"
        "${extra[@]}" "${xml[@]}" -- $(harness "$build" "$kernel"))
    printf '%q ' "${command[@]}" | sed "s#$WORK/##g; s#$PROBES/##g; s#$FIX/##g" > "$base.cmd"
    local started rc seconds state=ran
    started=$(date +%s%N)
    timeout -k 5 "$RUN_TIMEOUT_S" "${command[@]}" > "$base.stdout" 2> "$base.stderr"
    rc=$?
    seconds=$(seconds_since "$started")
    echo "$rc" > "$base.rc"
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && state=timeout
    if [ -z "$REFUSED" ] && grep -qiE 'not supported|Internal Sanitizer Error|Unable to (connect|initialize)|Error: .*(initiali|permission|debugger)' \
        "$base.log" "$base.stdout" "$base.stderr" 2>/dev/null; then
        REFUSED=$id
        { echo "first refusal in run $id:"; cat "$base.log" "$base.stdout" "$base.stderr" 2>/dev/null; } > "$FIX/refused.txt"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$build" "$tool" "$kernel" "$rc" "$seconds" "$state" "$shown" >> "$FIX/runs.tsv"
    echo "-- $id $tool $kernel ($build $shown): exit $rc in $seconds s"
    grep -m 3 -E 'Invalid|Race|Uninitialized|Barrier|Hazard|hazard|SUMMARY|Error' "$base.log" 2>/dev/null | sed 's/^/     /'
}

# With the kernelbook binary (KERNELBOOK=path, built elsewhere), a learner's kernel that reads
# past `in`, graded by `kernelbook check` under memcheck with the runner's options: does the
# measuring child run under the tool, where is the finding, and what does it cost at the
# exercise's full size (every launch of the kernel checked). At most KERNELBOOK_TIMEOUT_S
# (default 30 s).
kernelbook_run() {
    [ -n "${KERNELBOOK:-}" ] && [ -x "$KERNELBOOK" ] && [ -n "$SANITIZER" ] || return 0
    local base=$FIX/runs/K1 limit=${KERNELBOOK_TIMEOUT_S:-30} started rc state=ran
    local command=("$SANITIZER" --tool memcheck --log-file "$base.log" "${COMMON[@]}" --padding 4096
        --kernel-name kne=scale_strided -- "$KERNELBOOK" check drill_coalesce "$PROBES/learner_drill_coalesce_oob.cu")
    printf '%q ' "${command[@]}" | sed "s#$WORK/##g; s#$PROBES/##g; s#$FIX/##g" > "$base.cmd"
    started=$(date +%s%N)
    timeout -k 5 "$limit" "${command[@]}" > "$base.stdout" 2> "$base.stderr"
    rc=$?
    echo "$rc" > "$base.rc"
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && state=timeout
    printf 'K1\tkernelbook\tmemcheck\tscale_strided\t%s\t%s\t%s\tkernelbook check drill_coalesce (limit %s s)\n' \
        "$rc" "$(seconds_since "$started")" "$state" "$limit" >> "$FIX/runs.tsv"
    echo "-- K1 kernelbook check drill_coalesce under memcheck: exit $rc in $(seconds_since "$started") s"
    grep -m 3 -E 'Invalid|SUMMARY|Error' "$base.log" 2>/dev/null | sed 's/^/     /'
}

# Most important first: each bug under the tool meant to find it, through NVRTC as kernelbook
# compiles; then the #line mapping, the report modes, the tools that should find nothing, the
# clean kernel under every tool, the XML output, and the nvcc builds.
sanitize 01 nvrtc memcheck clean_copy
sanitize 02 nvrtc memcheck oob_tail
sanitize 03 nvcc memcheck oob_tail
sanitize 04 nvrtc racecheck shared_race --racecheck-report all
sanitize 05 nvrtc initcheck halo_unloaded --initcheck-address-space all
sanitize 06 nvrtc synccheck divergent_barrier
sanitize 07 nvrtc initcheck uninit_accumulate
sanitize 08 nvrtc memcheck misaligned_vector
# A write past `out` into the buffer allocated after it, as a lab's buffers lie: seen only
# with --padding (what the runner passes)?
sanitize 34 nvrtc-next memcheck oob_neighbour
sanitize 35 nvrtc-next memcheck oob_neighbour --padding 4096
sanitize 36 nvrtc-next memcheck oob_tail
sanitize 37 nvrtc-next memcheck oob_tail --padding 4096
kernelbook_run
sanitize 09 nvrtc-line memcheck oob_tail
sanitize 10 nvrtc-line memcheck oob_tail --strip-paths no
sanitize 11 nvrtc racecheck shared_race --racecheck-report analysis
sanitize 12 nvrtc racecheck shared_race --racecheck-report hazard
sanitize 13 nvrtc initcheck halo_unloaded
sanitize 14 nvrtc initcheck halo_unloaded --initcheck-address-space shared
sanitize 15 nvrtc racecheck halo_unloaded --racecheck-report all
sanitize 16 nvrtc memcheck halo_unloaded
sanitize 17 nvrtc synccheck early_return_barrier
sanitize 18 nvrtc initcheck early_return_barrier --initcheck-address-space all
sanitize 19 nvrtc racecheck clean_copy --racecheck-report all
sanitize 20 nvrtc initcheck clean_copy --initcheck-address-space all
sanitize 21 nvrtc synccheck clean_copy
sanitize 22 nvrtc memcheck shared_race
sanitize 23 nvrtc memcheck oob_tail --padding 4096
sanitize 24 nvrtc memcheck oob_tail xml
sanitize 25 nvrtc racecheck shared_race xml --racecheck-report all
sanitize 26 nvrtc initcheck halo_unloaded xml --initcheck-address-space all
sanitize 27 nvrtc synccheck divergent_barrier xml
sanitize 28 nvcc racecheck shared_race
sanitize 29 nvcc synccheck divergent_barrier
sanitize 30 nvcc initcheck halo_unloaded --initcheck-address-space all
sanitize 31 nvcc memcheck misaligned_vector
sanitize 32 nvcc initcheck uninit_accumulate
sanitize 33 nvrtc memcheck oob_tail nofilter
echo "== sanitizer runs ($(elapsed_ms) ms)"


# Last, the probes whose plain run may hang (a barrier not every thread reaches).
if (( $(elapsed_ms) < (BUDGET_S - 10) * 1000 )); then
    plain divergent_barrier
    plain early_return_barrier
fi

echo "total $(elapsed_ms) ms" > "$FIX/total.txt"
column -t -s $'\t' "$FIX/runs.tsv" 2>/dev/null || cat "$FIX/runs.tsv"
[ -n "$REFUSED" ] && { echo "== the sanitizer refused (see refused.txt):"; head -20 "$FIX/refused.txt"; }
tar czf "$OUT/sanitizer-fixtures.tgz" -C "$WORK" sanitizer-fixtures
echo "== wrote $OUT/sanitizer-fixtures.tgz in $(elapsed_ms) ms"
rm -rf "$WORK"
