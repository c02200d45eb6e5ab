#!/usr/bin/env bash
# Records the real-Pi byte streams replayed by e2e/pi_recordings_test.go.
# Run once per Pi version; see README.md beside this file.
#
#   record.sh VERSION PI_BIN [NODE_BIN_DIR]
#
# ONLY="moment …" records just those moments (the others are kept).
# Needs tmux, util-linux script, python3 and ../shared/tools/fakellm.py.
set -euo pipefail
ver=$1 pi=$2 nodebin=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
fakellm=${FAKELLM:-$here/../../../../shared/tools/fakellm.py}
work=$(mktemp -d /tmp/pirec.XXXXXX)
sock=pirec$$
out=$here/$ver
mkdir -p "$out" "$work/agent" "$work/home" "$work/proj"

python3 "$fakellm" --port 0 --slow-delay 0.4 \
	--reply 'Let me look at the project layout first. I will read the tests, then the code, and then tell you which file to edit.\n:input_needed:' \
	>"$work/fake.out" 2>"$work/fake.err" &
fake=$!
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null || true
	kill "$fake" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
until grep -q listening "$work/fake.out" 2>/dev/null; do sleep 0.1; done
port=$(sed -n 's/^fakellm: listening on 127.0.0.1://p' "$work/fake.out")

cat >"$work/agent/models.json" <<JSON
{ "providers": { "fake": { "baseUrl": "http://127.0.0.1:$port/v1", "api": "openai-completions",
  "apiKey": "fake-key",
  "models": [{ "id": "fake-model", "name": "Fake Model", "contextWindow": 32000, "maxTokens": 4096 }] } } }
JSON
cat >"$work/agent/settings.json" <<'JSON'
{ "defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false,
  "retry": { "enabled": true, "maxRetries": 3, "baseDelayMs": 2000 } }
JSON
printf 'set -g extended-keys on\nset -g status off\n' >"$work/tmux.conf"

path=$PATH
[ -n "$nodebin" ] && path=$nodebin:$PATH
tmux -L "$sock" -f "$work/tmux.conf" new-session -d -x 100 -y 30 -s rec -c "$work/proj" \
	"env PATH=$path PI_CODING_AGENT_DIR=$work/agent PI_OFFLINE=1 HOME=$work/home TERM=xterm-256color \
	 script -q -f -O $work/session.raw -c $pi; sleep 600"

screen() { tmux -L "$sock" capture-pane -p -t rec; }
keys() { tmux -L "$sock" send-keys -t rec "$@"; }
waitfor() { # regex, timeout seconds
	local i=0
	until screen | grep -Eq "$1"; do
		sleep 0.1; i=$((i + 1))
		[ $i -lt $(($2 * 10)) ] || { echo "timeout waiting for $1" >&2; screen >&2; exit 1; }
	done
}
waitgone() {
	local i=0
	while screen | grep -Eq "$1"; do
		sleep 0.1; i=$((i + 1))
		[ $i -lt $(($2 * 10)) ] || { echo "timeout waiting for $1 to go" >&2; screen >&2; exit 1; }
	done
}
snap() { # name: keep the stream so far and what tmux showed at that moment
	sleep 0.3
	# script's log starts with a "Script started on …" line of its own:
	# keep only what Pi wrote.
	tail -n +2 "$work/session.raw" >"$out/$1.raw"
	screen >"$out/$1.tmux.txt"
	echo "recorded $1 ($(stat -c %s "$out/$1.raw") bytes)"
}
busy='[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] '
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
only() { [ -z "${ONLY:-}" ] || { echo "ONLY=$ONLY: done"; exit 0; }; }

waitfor '^─{20}' 20
sleep 1.5
want idle && snap idle

if want working-tall; then
	# A follow-up of twelve lines typed (Ctrl+J is Pi's newline) while a
	# reply streams: the editor grows to its most (30 % of the rows) and
	# pushes its top border, where Pi 1.x says it works, up the screen.
	keys -l 'SLOW please look at the tests'; keys Enter
	waitfor "$busy" 10
	for i in 1 2 3 4 5 6 7 8 9 10 11; do keys -l "line $i of a follow-up"; keys C-j; done
	keys -l 'line 12 of a follow-up'
	sleep 1.2
	snap working-tall
	keys C-c # clears the editor (once: twice quits)
	waitgone "$busy" 30
	sleep 0.8
fi
only

keys -l 'SLOW please look at the project'; keys Enter
waitfor "$busy" 10
sleep 1.2
snap working

waitgone "$busy" 30
sleep 0.8
snap reply

keys -l 'SLOW and now the tests'; keys Enter
waitfor "$busy" 10
sleep 1.5
keys Escape
waitfor 'aborted' 10
waitgone "$busy" 10
sleep 0.5
snap aborted

keys -l '/compact'; keys Enter
waitfor 'ompact' 10
waitgone "$busy" 60
sleep 0.5
snap after-compact

# A model server that went away: Pi retries with a countdown.
kill "$fake"; wait "$fake" 2>/dev/null || true
keys -l 'are you there'; keys Enter
waitfor 'Retrying' 20
sleep 0.3
snap retry
waitgone "$busy" 60
sleep 0.5
snap retry-failed
