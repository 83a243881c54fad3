#!/usr/bin/env bash
# Adopting the library must not move an app's Go version or its SQLite
# driver. Each app under testdata/ (a go.mod with its go line and its one
# driver, the README's sync loop, one test) is copied to a temporary
# directory, requires the library through a replace of this checkout,
# then: go mod tidy, go build, go test; then its go.mod must still have
# the go line and the driver version it had. Usage: run.sh [app...]
# (default: every app). ADOPT_GO, ADOPT_MODERNC, ADOPT_MATTN override the
# apps' go line and driver versions (to try another app). Only the local
# toolchain and the module proxy are used.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off
lib=github.com/syncfilter/syncfilter
drivers="modernc.org/sqlite github.com/mattn/go-sqlite3 github.com/ncruces/go-sqlite3"

apps=("$@")
if [ ${#apps[@]} -eq 0 ]; then
	for d in "$here"/testdata/*/; do apps+=("$(basename "$d")"); done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gover() { awk '$1 == "go" { print $2 }' go.mod; }
toolchain() { awk '$1 == "toolchain" { print $2 }' go.mod; }
required() { # the version go.mod requires of module $1, or "none"
	"$GO" mod edit -json | awk -v m="\"$1\"" '$1 == "\"Path\":" && $2 == m"," { getline; gsub(/[",]/, "", $2); print $2; found = 1 } END { if (!found) print "none" }'
}

status=0
for app in "${apps[@]}"; do
	start=$(date +%s)
	dir="$work/$app"
	cp -R "$here/testdata/$app" "$dir" || { status=1; continue; }
	cd "$dir" || exit 1
	# The app's driver: the module its go.mod requires (one of them).
	drv=$(awk '$1 == "require" { print $2 }' go.mod)
	case $drv in
	modernc.org/sqlite)
		cgo=0 # a program on modernc builds without cgo (README)
		[ -n "${ADOPT_MODERNC:-}" ] && "$GO" mod edit -require="$drv@$ADOPT_MODERNC" ;;
	github.com/mattn/go-sqlite3)
		cgo=1
		[ -n "${ADOPT_MATTN:-}" ] && "$GO" mod edit -require="$drv@$ADOPT_MATTN" ;;
	*)
		echo "adopt $app: testdata/$app/go.mod requires no driver this check knows: $drv"
		status=1
		continue ;;
	esac
	[ -n "${ADOPT_GO:-}" ] && "$GO" mod edit -go="$ADOPT_GO"
	go_before=$(gover)
	declare -A before=()
	for m in $drivers; do before[$m]=$(required "$m"); done

	"$GO" mod edit -require="$lib@v0.0.0" -replace="$lib=$root"
	log="$work/$app.log"
	failed=
	for step in "mod tidy" "build ./..." "test -count=1 ./..."; do
		# shellcheck disable=SC2086 # step is the go subcommand and its arguments
		if ! CGO_ENABLED=$cgo "$GO" $step >>"$log" 2>&1; then
			failed="go $step"
			break
		fi
	done

	problems=()
	[ -n "$failed" ] && problems+=("$failed failed:"$'\n'"$(sed 's/^/    /' "$log")")
	go_after=$(gover)
	if [ "$go_after" != "$go_before" ]; then
		need=$(CGO_ENABLED=$cgo "$GO" list -deps -test -f '{{with .Module}}{{if .GoVersion}}{{.Path}} {{.Version}} {{.GoVersion}}{{end}}{{end}}' ./... 2>/dev/null |
			sort -u | while read -r p v g; do
				[ "$(printf '%s\n%s\n' "$go_before" "$g" | sort -V | tail -1)" != "$go_before" ] && echo "$p $v (go $g)"
			done | paste -sd ',' | sed 's/,/, /g')
		problems+=("its go line moved from $go_before to $go_after; the modules of its build that ask for more than $go_before: ${need:-?}")
	fi
	if [ -n "$(toolchain)" ]; then
		problems+=("go mod tidy added a toolchain line: toolchain $(toolchain)")
	fi
	moved=()
	for m in $drivers; do
		after=$(required "$m")
		if [ "${before[$m]}" != none ] && [ "$after" != "${before[$m]}" ]; then
			why=$("$GO" mod graph 2>/dev/null | awk -v t="$m@$after" '$2 == t && $1 !~ /^example\.com\// { print $1 }' | paste -sd ',' | sed 's/,/, /g')
			problems+=("its driver $m moved from ${before[$m]} to $after (required by ${why:-?})")
		elif [ "${before[$m]}" = none ] && [ "$after" != none ]; then
			moved+=("$m $after")
		fi
	done
	secs=$(($(date +%s) - start))
	if [ ${#problems[@]} -gt 0 ]; then
		echo "adopt $app: FAIL ($secs s), an app on go $go_before and $drv ${before[$drv]} adopting the library:"
		for p in "${problems[@]}"; do echo "  - $p"; done
		status=1
	else
		extra=
		[ ${#moved[@]} -gt 0 ] && extra="; its go.mod now also lists $(printf '%s, ' "${moved[@]}" | sed 's/, $//') (required by the library)"
		echo "adopt $app: ok ($secs s): go $go_after and $drv ${before[$drv]} kept; tidy, build and the README's loop passed$extra"
	fi
	unset before
	cd "$root" || exit 1
done
exit $status
