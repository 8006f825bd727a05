#!/usr/bin/env bash
# gofuzz.sh TARGET PKG DURATION [go test flags...]: one coverage-guided
# `go test -fuzz` run for a duration. Go 1.26's fuzz coordinator can race
# its own -fuzztime deadline and fail with a bare "context deadline
# exceeded", no failing input written and nothing wrong with the target
# (go.dev/issue/75804, fixed in Go 1.27). That one outcome is reported and
# passed; every other failure (a failing input written, a panic, a test
# error, a build error) fails as before.
set -uo pipefail
target=$1 pkg=$2 dur=$3
shift 3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
${GO:-go} test -run '^$' -fuzz "^${target}\$" -fuzztime "$dur" "$@" "$pkg" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] && exit 0
# The boundary race: the target's only failure line is the deadline, and
# no input was written.
if grep -q '^    context deadline exceeded$' "$log" &&
	! grep -qE 'Failing input written|^panic|_test\.go:[0-9]+:|build failed|fuzzing process hung' "$log" &&
	[ "$(grep -c -- '^--- FAIL' "$log")" = 1 ]; then
	echo "gofuzz.sh: $target: go test -fuzz stopped at its -fuzztime deadline with no failing input (go.dev/issue/75804): not a finding"
	exit 0
fi
exit "$rc"
