#!/usr/bin/env bash
# Intake of MAILS order mails by several pbem binaries in turn (an A/B of a change), on copies of
# a root `benches/host.sh` built (its games and its Maildir of order mails). Each copy is made,
# warmed by one message (the routing cache written, as on a real host) and synced before any
# timing, and nothing is deleted meanwhile (an ext4 disk slows for minutes after mass deletions).
# Prints each run's wall time (bash's clock) and user + system CPU; asserts nothing.
#
#   benches/intake_ab.sh ROOT ROUNDS BINARY...      e.g.
#   benches/host.sh --games 1000 --mails 1000 --due 100 --fast --no-cargo-bench --dir /tmp/ib
#   benches/intake_ab.sh /tmp/ib/root-1000-100 4 /path/to/pbem-before target/release/pbem
#
# The copies (ROUNDS × binaries of them) are left in ROOT/../ab-PID: delete them when done.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROOT ROUNDS BINARY..." >&2; exit 2; }
R=$(realpath "$1"); ROUNDS=$2; shift 2
MD=$(ls -d "$R"/maildir-* | head -1)
CFG=$(dirname "$R")/pbem-mail.toml
[ -f "$CFG" ] || printf 'from = "judge <judge@example.net>"\n[transport]\nkind = "none"\n' >"$CFG"
C=$(dirname "$R")/ab-$$; mkdir -p "$C"
N=$(( ROUNDS * $# ))
for i in $(seq 1 "$N"); do
  cp -a "$R/games" "$C/g$i"; cp -a "$MD" "$C/m$i"
  mkdir -p "$C/w$i/new" "$C/w$i/cur" "$C/w$i/tmp"
  printf 'From: nobody@example.org\nTo: judge@example.net\nSubject: hello\nMessage-ID: <warm@example.org>\nDate: Wed, 01 Jul 2026 12:05:00 +0000\n\nhello\n' >"$C/w$i/new/1.warm:2,"
  "$1" intake --root "$C/g$i" --maildir "$C/w$i" --config "$CFG" --quiet --now 2026-07-01T12:05:00Z >/dev/null 2>&1 || true
done
sync; sleep 5
i=0
for r in $(seq 1 "$ROUNDS"); do
  for b in "$@"; do
    i=$((i + 1))
    s=$EPOCHREALTIME
    /usr/bin/time -f "%U + %S" -o "$C/cpu" "$b" intake --root "$C/g$i" --maildir "$C/m$i" --config "$CFG" --quiet --now 2026-07-01T12:10:00Z >/dev/null 2>&1 || true
    e=$EPOCHREALTIME
    echo "$b, round $r: $(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }') s wall ($(cat "$C/cpu") s CPU), $(ls "$C/m$i/done" 2>/dev/null | wc -l) mails filed in done/"
  done
done
echo "copies in $C"
