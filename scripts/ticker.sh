#!/usr/bin/env bash
# Runs a long, quiet command and says on stderr that it is still running,
# every ONNXIO_TICK_SECONDS (default 10) seconds, so that a step of
# `make demo` or `make bootstrap` never goes 15 seconds without a line.
#
#   scripts/ticker.sh LABEL CMD [ARG...]
#
# Prints "LABEL: still running, N s" while CMD runs; exits with CMD's status.
set -uo pipefail

label="$1"
shift
every="${ONNXIO_TICK_SECONDS:-10}"
start=$(date +%s)

"$@" &
pid=$!
(
    # One-second sleeps with their output closed: a ticker killed mid-sleep
    # leaves nothing holding the caller's pipes.
    n=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1 </dev/null >/dev/null 2>&1
        n=$((n + 1))
        if ((n % every == 0)) && kill -0 "$pid" 2>/dev/null; then
            printf '%s: still running, %d s\n' "$label" $(($(date +%s) - start)) >&2
        fi
    done
) &
tick=$!
trap 'kill "$pid" "$tick" 2>/dev/null' INT TERM HUP
wait "$pid"
rc=$?
kill "$tick" 2>/dev/null
wait "$tick" 2>/dev/null
exit "$rc"
