#!/usr/bin/env bash
# The valnet GitHub Action's step (action.yml): install valnet, run the
# suite, write the step's outputs. Inputs come in the environment:
#   VALNET_SCENARIOS    files, directories, built-in names (spaces/newlines)
#   VALNET_VERSION      "action": build this checkout; else a module version
#   VALNET_ARGS         more valnet run flags
#   VALNET_OUT          the suite directory
#   VALNET_ACTION_PATH  this action's checkout
# and GitHub's GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP.
# Exits with valnet's exit code.
set -uo pipefail

fail() {
	echo "valnet action: $*" >&2
	if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
		printf '## ⚠️ valnet could not run\n\n%s\n' "$*" >>"$GITHUB_STEP_SUMMARY"
	fi
	[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=2" >>"$GITHUB_OUTPUT"
	exit 2
}

[ -n "${VALNET_SCENARIOS//[[:space:]]/}" ] || fail "input scenarios is empty: give scenario files, directories or built-in names"
command -v go >/dev/null || fail "no Go toolchain on PATH: keep setup-go: true, or install Go before this step"
version="${VALNET_VERSION:-action}"
out="${VALNET_OUT:-runs/valnet-suite}"
tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
bin="$(mktemp -d "$tmp/valnet-bin.XXXXXX")" || fail "cannot make a directory under $tmp"
trap 'rm -rf "$bin"' EXIT

if [ "$version" = action ]; then
	[ -n "${VALNET_ACTION_PATH:-}" ] && [ -f "$VALNET_ACTION_PATH/go.mod" ] || fail "version action: VALNET_ACTION_PATH ($VALNET_ACTION_PATH) is not valnet's checkout"
	(cd "$VALNET_ACTION_PATH" && GOBIN="$bin" go install ./cmd/valnet) || fail "building valnet from $VALNET_ACTION_PATH failed"
else
	GOBIN="$bin" go install "github.com/valnet/valnet/cmd/valnet@$version" || fail "go install github.com/valnet/valnet/cmd/valnet@$version failed"
fi

# Word splitting is what the inputs mean: scenarios and flags separated
# by spaces or newlines (a path with a space is not supported).
# shellcheck disable=SC2086
read -r -d '' -a scenarios <<<"$VALNET_SCENARIOS"
# shellcheck disable=SC2086
read -r -d '' -a args <<<"${VALNET_ARGS:-}"
errlog="$bin/stderr"
# stderr goes to the log through tee in a pipeline, which the shell waits
# for (stdout stays stdout via fd 3). A process substitution's tee was not
# waited for: under load the summary below read an empty log.
{ "$bin/valnet" run --suite "${scenarios[@]}" --out "$out" "${args[@]}" 2>&1 1>&3 3>&- | tee "$errlog" >&2; } 3>&1
code=${PIPESTATUS[0]}
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	{
		echo "exit-code=$code"
		echo "suite-dir=$out"
		[ -f "$out/junit.xml" ] && echo "junit=$out/junit.xml"
	} >>"$GITHUB_OUTPUT"
fi
# A suite refused before it ran writes no suite.md: say why in the summary.
if [ ! -f "$out/suite.md" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	printf '## ⚠️ valnet could not run (exit %d)\n\n```\n%s\n```\n' "$code" "$(cat "$errlog")" >>"$GITHUB_STEP_SUMMARY"
fi
exit "$code"
