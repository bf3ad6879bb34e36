#!/usr/bin/env bash
# `make test`: runs every test step (the Makefile's test-layers, test-build, test-asan,
# test-fuzz, test-windows, test-python), in order, each even after one failed, with a line
# per step and its time as it ends; then a summary that counts what ran and
# what was skipped, and why. A run that skipped tests (a clone without
# ../shared skips the corpus checks) ends with "passed, with skips", never
# with "all passed"; a failed step makes the exit status 1.
#
#   scripts/test.sh                  every step
#   scripts/test.sh test-python      some of them
#
# Each step's output still streams to the terminal; it is also kept in
# .cache/test/<step>.log, which the summary reads.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

steps=("$@")
((${#steps[@]})) || steps=(test-layers test-build test-asan test-fuzz test-windows test-python)
logs=.cache/test
mkdir -p "$logs"
MAKE="${MAKE:-make}"
start=$(date +%s)

fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

declare -A status took
failed=()
for step in "${steps[@]}"; do
    echo "==> make test: $step ($(date +%H:%M:%S))"
    t0=$(date +%s)
    if "$MAKE" --no-print-directory "$step" 2>&1 | tee "$logs/$step.log"; then
        status[$step]=ok
    else
        status[$step]=FAILED
        failed+=("$step")
    fi
    took[$step]=$(($(date +%s) - t0))
    echo "==> make test: $step ${status[$step]} in $(fmt "${took[$step]}")"
done

# ---- summary ------------------------------------------------------------------

# What a step's log says it ran, in a few words.
ran() {
    local log="$logs/$1.log"
    case "$1" in
    test-layers)
        grep -hE '^check_layers: ' "$log" | tail -n 1
        ;;
    test-build | test-asan | test-windows)
        grep -hoE '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+|100% tests passed out of [0-9]+' "$log" |
            tail -n 1 | sed 's/^/ctest: /'
        grep -hoE '[0-9]+ fault and crash points in all' "$log" | tail -n 1 | sed 's/^/test_faults: /'
        ;;
    test-fuzz)
        local n units
        n=$(grep -c '^==> fuzz: fuzz_[a-z]* for' "$log")
        units=$(grep -hoE '^stat::number_of_executed_units: *[0-9]+' "$log" | awk '{s += $2} END {print s + 0}')
        echo "$n fuzzers, $units inputs run"
        ;;
    test-python)
        grep -hE '^=* ?[0-9]+ (passed|failed).* in [0-9.]+s' "$log" | tail -n 1 | sed 's/=//g; s/^ *//; s/^/pytest: /'
        ;;
    esac
}

skip_lines=()
# pytest: every skip, with its reason (-rs gives "SKIPPED [N] file:line: reason").
if [[ -f "$logs/test-python.log" ]]; then
    n_shared=$(grep -E '^SKIPPED \[[0-9]+\]' "$logs/test-python.log" | grep -E '/shared\b' |
        sed -E 's/^SKIPPED \[([0-9]+)\].*/\1/' | awk '{s += $1} END {print s + 0}')
    n_other=$(grep -E '^SKIPPED \[[0-9]+\]' "$logs/test-python.log" | grep -vE '/shared\b' |
        sed -E 's/^SKIPPED \[([0-9]+)\].*/\1/' | awk '{s += $1} END {print s + 0}')
    ((n_shared)) && skip_lines+=("$n_shared corpus tests (no ../shared)")
    if ((n_other)); then
        skip_lines+=("$n_other other pytest tests:")
        while IFS= read -r line; do skip_lines+=("    $line"); done < <(grep -E '^SKIPPED \[[0-9]+\]' \
            "$logs/test-python.log" | grep -vE '/shared\b' | sed -E 's/^SKIPPED //' | head -n 10)
    fi
fi
# C tests and fuzzers say "skip ..." / "skipped: ..." themselves (a C test's
# line comes after its name: the Makefile's CTEST_NOTES).
# The Windows build names each part of a test compiled out ("skipped on
# Windows: ...").
for step in test-build test-asan test-fuzz test-windows; do
    [[ -f "$logs/$step.log" ]] || continue
    while IFS= read -r line; do skip_lines+=("$step: $line"); done < <(grep -hoE '(test_[a-z_]+: )?(skip checks|skipped:|skipped on Windows:) .*' \
        "$logs/$step.log" | sed 's/^ *//' | sort | uniq -c | sed -E 's/^ *([0-9]+) (.*)/\2 (x\1)/')
done

echo
echo "==> make test: summary ($(fmt $(($(date +%s) - start))))"
for step in "${steps[@]}"; do
    printf '  %-12s %-6s %7s  %s\n' "$step" "${status[$step]}" "$(fmt "${took[$step]}")" \
        "$(ran "$step" | paste -sd ';' - | sed 's/;/; /g')"
done
if ((${#skip_lines[@]})); then
    echo "  skipped:"
    printf '    %s\n' "${skip_lines[@]}"
fi
if ((${#failed[@]})); then
    echo "==> make test: FAILED: ${failed[*]}" >&2
    exit 1
fi
if ((${#skip_lines[@]})); then
    echo "==> make test: passed, with skips (listed above)"
else
    echo "==> make test: all steps passed, nothing skipped"
fi
