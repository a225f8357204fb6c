#!/usr/bin/env bash
# The GPU checks in one call of under 8 minutes: the `gpu` tests, then benchmarks/bench_gpu.py.
#
# Run from the repository root on a machine with a CUDA device, CuPy, torch (CUDA) and the
# test dependencies, with no install step (the package is imported from the checkout):
#
#     OUT=/tmp/gpu bash benchmarks/gpu_check.sh
#
# Writes under $OUT (default: benchmarks/results): gpu.json (the benchmark),
# gpu_tests.txt (the test log), gpu_junit.xml (one entry per test) and gpu_check.txt
# (what ran, with the exit codes). The tests take about 5 minutes with 12 workers on an
# H100; each step has its own time limit (320 s and 130 s) so the whole stays under 8
# minutes, the benchmark runs even when a test fails, and it rewrites gpu.json after each
# workload, so a benchmark cut by its limit still leaves the workloads it finished. The exit status is the tests' (0: all passed),
# or the benchmark's when the tests passed.
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
TEST_LIMIT_S="${TEST_LIMIT_S:-320}"
BENCH_LIMIT_S="${BENCH_LIMIT_S:-130}"
summary="$OUT/gpu_check.txt"

{
    echo "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
    "$PYTHON" -c "import cupy, torch; print('cupy', cupy.__version__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())" 2>&1
} > "$summary"

start=$(date +%s)
timeout -k 10 "$TEST_LIMIT_S" "$PYTHON" -m pytest tests -m gpu -o addopts="" -p no:cacheprovider \
    -p no:benchmark -n "$WORKERS" --dist=loadfile -q --junitxml="$OUT/gpu_junit.xml" \
    > "$OUT/gpu_tests.txt" 2>&1
tests_rc=$?
echo "tests: exit $tests_rc in $(( $(date +%s) - start )) s ($(tail -n 1 "$OUT/gpu_tests.txt"))" >> "$summary"

start=$(date +%s)
timeout -k 10 "$BENCH_LIMIT_S" "$PYTHON" benchmarks/bench_gpu.py --repeat 5 --json "$OUT/gpu.json" \
    > "$OUT/gpu_bench.txt" 2>&1
bench_rc=$?
echo "benchmark: exit $bench_rc in $(( $(date +%s) - start )) s" >> "$summary"

cat "$summary"
tail -n 40 "$OUT/gpu_tests.txt"
cat "$OUT/gpu_bench.txt"
if [ "$tests_rc" -ne 0 ]; then
    exit "$tests_rc"
fi
exit "$bench_rc"
