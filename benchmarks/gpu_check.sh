#!/usr/bin/env bash
# The GPU checks in one call of under 8 minutes: the `gpu` tests, then benchmarks/bench_gpu.py.
#
# Run from the repository root on a machine with a CUDA device, CuPy, torch (CUDA) and the
# test dependencies, with no install step (the package is imported from the checkout):
#
#     OUT=/tmp/gpu bash benchmarks/gpu_check.sh
#
# Writes under $OUT (default: benchmarks/results): gpu.json (the benchmark),
# gpu_tests_first.txt and gpu_tests_rest.txt (the test logs), gpu_junit_first.xml and
# gpu_junit_rest.xml (one entry per test) and gpu_check.txt (what ran, with the exit
# codes). The `gpu` tests have grown past what one call can be sure to finish (about
# 1,900 now, against 619 that took 297 s with 12 workers on an H100), so they run in two
# steps, each with its own time limit: first the files of the kernels most recently
# changed (FIRST, 150 s: embedding, the segment kernels, the gather path, the dispatch
# counts), then every other `gpu` test (170 s); then the benchmark (130 s). The whole
# stays under 8 minutes, a step cut by its limit still leaves its log and says so
# (exit 124), the benchmark runs even when a test fails, and it rewrites gpu.json after
# each workload, so a benchmark cut by its limit still leaves the workloads it finished.
# The exit status is the first failing step's (0: all passed).
#
# `-p no:benchmark` matters: a pytest-benchmark plugin warns under xdist, and the
# project's `filterwarnings = error` turns that warning into an INTERNALERROR before any
# test runs. `-o addopts=""` drops the project's default options (coverage, markers
# filter) so that exactly `-m gpu` runs.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=ci
PYTHON="${PYTHON:-python3}"
WORKERS="${WORKERS:-12}"
FIRST="${FIRST:-tests/embedding tests/segment/test_kernels.py tests/segment/test_gather.py tests/test_cuda_dispatch.py}"
FIRST_LIMIT_S="${FIRST_LIMIT_S:-150}"
REST_LIMIT_S="${REST_LIMIT_S:-170}"
BENCH_LIMIT_S="${BENCH_LIMIT_S:-130}"
summary="$OUT/gpu_check.txt"

{
    echo "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
    "$PYTHON" -c "import cupy, torch; print('cupy', cupy.__version__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())" 2>&1
} > "$summary"

# run_tests NAME LIMIT ARGS...: one step of the gpu tests, logged and summarised
run_tests() {
    local name="$1" limit="$2"
    shift 2
    local start
    start=$(date +%s)
    timeout -k 10 "$limit" "$PYTHON" -m pytest "$@" -m gpu -o addopts="" -p no:cacheprovider \
        -p no:benchmark -n "$WORKERS" --dist=loadfile -q --junitxml="$OUT/gpu_junit_$name.xml" \
        > "$OUT/gpu_tests_$name.txt" 2>&1
    local rc=$?
    echo "tests ($name): exit $rc in $(( $(date +%s) - start )) s ($(tail -n 1 "$OUT/gpu_tests_$name.txt"))" >> "$summary"
    return "$rc"
}

ignore=()
for path in $FIRST; do
    ignore+=("--ignore=$path")
done
# shellcheck disable=SC2086  # FIRST is a list of paths
run_tests first "$FIRST_LIMIT_S" $FIRST
first_rc=$?
run_tests rest "$REST_LIMIT_S" tests "${ignore[@]}"
rest_rc=$?
tests_rc=$first_rc
if [ "$tests_rc" -eq 0 ]; then
    tests_rc=$rest_rc
fi

start=$(date +%s)
timeout -k 10 "$BENCH_LIMIT_S" "$PYTHON" benchmarks/bench_gpu.py --repeat 5 --json "$OUT/gpu.json" \
    > "$OUT/gpu_bench.txt" 2>&1
bench_rc=$?
echo "benchmark: exit $bench_rc in $(( $(date +%s) - start )) s" >> "$summary"

cat "$summary"
tail -n 30 "$OUT/gpu_tests_first.txt"
tail -n 30 "$OUT/gpu_tests_rest.txt"
cat "$OUT/gpu_bench.txt"
if [ "$tests_rc" -ne 0 ]; then
    exit "$tests_rc"
fi
exit "$bench_rc"
