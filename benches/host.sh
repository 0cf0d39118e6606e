#!/usr/bin/env bash
# Speed of one judge host (issue 11): every figure of README "Speed" with its ratio to the limits
# measured in the same run (benches/limits.rs: Ed25519 verify, SHA-256, an fsync'd rename; and
# /bin/true for a process start). Whole-process timings, medians. Nothing here asserts a time.
#
#   benches/host.sh [--games N] [--due N] [--mails N] [--batch N] [--dir DIR] [--pbem BINARY]
#                   [--no-cargo-bench] [--fast] [--idle-only] [--no-fresh]
#
# --pbem times that binary instead of building target/release/pbem (e.g. main's, for "before");
# --no-cargo-bench skips the cargo bench targets (the limits other than /bin/true, and one step).
#
# --games 100000 is the issue's large root. Roots are built once and kept in DIR (default
# target/bench-host); a second run of the same size reuses them. By default with real `pbem new`
# runs (two at a time, about 25 ms a game: 100,000 games take ~40 minutes once). --fast (the
# way to build 100,000) makes the same games with `cargo bench --bench roots` (benches/roots.rs:
# `pipeline::create` in one process on every core, one sync per 2,000 games: ~2 ms of CPU a game)
# and marks their opening reports mailed instead of composing them (a PNG picture each); the
# first two idle sweeps then write every game's due index and the root index, as on a real host.
# --idle-only gives the idle sweeps' rows only (time and peak RSS, with and without --mail): the
# other figures work on four copies of the root (4 × ~10 GB at 100,000 games; three with --no-fresh).
# Timed runs work on copies made first, and nothing is deleted right before a timing (an ext4
# disk slows for a while after mass deletions). A copy is first brought to the state a real host's
# cron runs keep its root in: a copy has new inodes and change times, so none of pbem's indexes
# holds there (each game's `DIR/.due` and the root index `.due-index`, the mailed marks' snapshot,
# the routing cache) and the first sweep would load all GAMES games and rewrite every index. So
# the copies swept get two idle sweeps first (`--now` before any deadline: the first rewrites each game's
# `.due`, the second the root index from them; with `--mail` for the cron run's copy, which also
# writes the marks' snapshot and queues the reminders an earlier cron run would have), the intake
# copy one warm-up message (its run rewrites the routing cache), then `sync`, then the timings.
# The due steps are also timed on a copy as made (`fresh copy`: every game loaded, as before
# 2026-12-03), unless --no-fresh (a fourth copy of the root: ~10 GB at 100,000 games).
# Peak RSS is /usr/bin/time's %M (the largest resident set of the process, in KB); the goal is
# ≤ 50 MB at 100,000 games.
set -euo pipefail
GAMES=1000 DUE=100 MAILS=200 BATCH=200 CARGO_BENCH=1 P= FAST=0 IDLE_ONLY=0 FRESH=1
DIR=$(cd "$(dirname "$0")/.." && pwd)/target/bench-host
while [ $# -gt 0 ]; do
  case $1 in
    --games) GAMES=$2; shift;; --due) DUE=$2; shift;; --mails) MAILS=$2; shift;;
    --batch) BATCH=$2; shift;; --dir) DIR=$2; shift;; --no-cargo-bench) CARGO_BENCH=0;;
    --pbem) P=$(realpath "$2"); shift;; --fast) FAST=1;; --idle-only) IDLE_ONLY=1;; --no-fresh) FRESH=0;;
    *) echo "usage: $0 [--games N] [--due N] [--mails N] [--batch N] [--dir DIR] [--pbem BINARY] [--no-cargo-bench] [--fast] [--idle-only] [--no-fresh]" >&2; exit 2;;
  esac
  shift
done
[ "$DUE" -le "$GAMES" ] && [ "$MAILS" -le "$GAMES" ] || { echo "--due and --mails must not exceed --games" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ -z "$P" ]; then cargo build --release --locked -q; P=$PWD/target/release/pbem; fi
mkdir -p "$DIR"
export PBEM_BENCH_DIR=$DIR
NOW=2026-07-01T12:00:00Z        # every game opens at NOW
IDLE=2026-07-01T12:30:00Z       # nothing due yet
LATE=2026-07-01T14:00:00Z       # the 1-hour games are due, the 72-hour ones are not

ns() { date +%s%N; }
# median wall time in ns of RUNS runs of a command (its output discarded), timed with bash's own
# clock ($EPOCHREALTIME, microseconds): `$(ns)` would count a fork and exec of `date` (~1.5 ms here)
# into each run, which matters for a run of a few milliseconds (the audit)
median_ns() {
  local runs=$1; shift; local v=()
  for _ in $(seq "$runs"); do
    local t=${EPOCHREALTIME/./}; "$@" >/dev/null 2>&1 || true; local e=${EPOCHREALTIME/./}
    v+=($(( (e - t) * 1000 )))
  done
  printf '%s\n' "${v[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p"
}
# the process start of pbem against /bin/true's, interleaved: 9 rounds, each a batch of 25 runs of
# /bin/true then 25 of `pbem --version`, so that a machine whose speed drifts during the measure
# (this 2-core VM's moves 20-40% within an hour) slows both alike. Prints each one's median batch
# mean (ns; timed by bash's own clock, as `median_ns`) and the median of the rounds' ratios.
start_vs_true() {
  local t=() s=() r=()
  for _ in $(seq 9); do
    local a=${EPOCHREALTIME/./}; for _ in $(seq 25); do /bin/true >/dev/null 2>&1; done; local b=${EPOCHREALTIME/./}
    for _ in $(seq 25); do "$P" --version >/dev/null 2>&1 || true; done; local c=${EPOCHREALTIME/./}
    t+=($(( (b - a) * 40 ))); s+=($(( (c - b) * 40 )))
    r+=($(awk -v x=$(( c - b )) -v y=$(( b - a )) 'BEGIN { printf "%.3f", x / y }'))
  done
  echo "$(printf '%s\n' "${s[@]}" | sort -n | sed -n 5p) $(printf '%s\n' "${t[@]}" | sort -n | sed -n 5p) $(printf '%s\n' "${r[@]}" | sort -n | sed -n 5p)"
}
us() { awk -v n="$1" -v d="${2:-1}" 'BEGIN { printf "%.1f", n / d / 1000 }'; }
row() { printf '| %-44s | %12s | %s |\n' "$1" "$2" "$3"; }

# --- the roots: N games, the first DUE with 1-hour deadlines, keys and mails for MAILS games ---
ROOT=$DIR/root-$GAMES-$DUE
CFG=$DIR/pbem-mail.toml
printf 'from = "judge <judge@example.net>"\n[transport]\nkind = "none"\n' >"$CFG"
if [ ! -f "$ROOT/.complete" ]; then
  echo "building $ROOT ($GAMES games; kept for the next run)..." >&2
  rm -rf "$ROOT"; mkdir -p "$ROOT/games" "$ROOT/keys"
  ssh-keygen -q -t ed25519 -N '' -C bench -f "$ROOT/keys/player"   # signs the union orders
  ssh-keygen -q -t ed25519 -N '' -C bench -f "$ROOT/keys/conf"     # one key may not hold both sides
  if [ "$FAST" = 1 ]; then
    # The same games in one process; their opening reports marked mailed (see the top).
    cargo bench --locked -q --bench roots -- "$ROOT/games" "$GAMES" "$DUE" "$NOW" "$ROOT/keys/player.pub" "$ROOT/keys/conf.pub"
  else
    seq 1 "$GAMES" | P=$P R=$ROOT DUE=$DUE NOW=$NOW xargs -P 2 -I{} sh -c '
      h=72; [ {} -le "$DUE" ] && h=1
      "$P" new --rules gettysburg-campaign --id g{} --deadline-hours $h --now "$NOW" \
        --player union:union-{}@example.org:"$R/keys/player.pub" \
        --player confederate:conf-{}@example.org:"$R/keys/conf.pub" "$R/games/g{}" >/dev/null 2>&1 ||
        { echo "pbem new failed for game {}" >&2; exit 255; }'
    # The first --mail run queues every game's opening reports (each with its PNG picture): part
    # of building the root, not of the idle sweep timed below.
    echo "queueing the opening reports of $GAMES games..." >&2
    "$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE" --mail "$CFG" >/dev/null 2>&1 || true
  fi
  touch "$ROOT/.complete"
fi
K=$ROOT/keys/player

# a Maildir of MAILS order mails (one signed union order to each of the first MAILS games)
MD=$ROOT/maildir-$MAILS
if [ "$IDLE_ONLY" = 0 ] && [ ! -d "$MD/new" ]; then
  mkdir -p "$MD.part/new" "$MD.part/cur" "$MD.part/tmp" "$ROOT/orders"
  for i in $(seq 1 "$MAILS"); do
    o=$ROOT/orders/g$i.toml
    "$P" form --role union "$ROOT/games/g$i" >"$o" && "$P" sign --key "$K" --append "$o" >/dev/null
    { printf 'From: union-%s@example.org\nTo: judge@example.net\nSubject: orders\nMessage-ID: <o%s@example.org>\nDate: Wed, 01 Jul 2026 12:10:00 +0000\n\n' "$i" "$i"; cat "$o"; } >"$MD.part/new/$i.bench:2,"
  done
  mv "$MD.part" "$MD"
fi

# --- limits ---
echo "measuring limits..." >&2
LIMITS="ed25519_verify nan us
sha256 nan GB/s
fsync_rename nan us"
[ "$CARGO_BENCH" = 1 ] && [ "$IDLE_ONLY" = 0 ] && LIMITS=$(cargo bench --locked -q --bench limits 2>/dev/null)
VERIFY=$(awk '/^ed25519_verify/ { print $2 }' <<<"$LIMITS")
SHA=$(awk '/^sha256/ { print $2 }' <<<"$LIMITS")
FSYNC=$(awk '/^fsync_rename/ { print $2 }' <<<"$LIMITS")
read -r START TRUE_NS START_RATIO <<<"$(start_vs_true)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f×", a / b }'; }
# a / b as a percentage, for figures far below what they are compared with
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
# the peak resident set (KB) of one run of a command, by /usr/bin/time (empty without it)
peak_kb() {
  local t; t=$(mktemp)
  /usr/bin/time -o "$t" -f %M "$@" >/dev/null 2>&1 || true
  tail -1 "$t"; rm -f "$t"
}
mb() { awk -v k="$1" 'BEGIN { if (k == "") print "n/a"; else printf "%.1f MB", k / 1024 }'; }

# --- figures ---
echo "timing..." >&2
# Idle sweeps, twice first to fill the page cache (and any index the sweep keeps).
"$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE" >/dev/null 2>&1 || true
IDLE_NS=$(median_ns 5 "$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE")
"$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE" --mail "$CFG" >/dev/null 2>&1 || true
MAIL_NS=$(median_ns 5 "$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE" --mail "$CFG")
PEAK=$(peak_kb "$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE")
PEAK_MAIL=$(peak_kb "$P" adjudicate --all "$ROOT/games" --quiet --now "$IDLE" --mail "$CFG")
idle_rows() {
  row "idle sweep, per game ($GAMES games)" "$(us "$IDLE_NS" "$GAMES") µs" "100,000 games: $(awk -v n="$IDLE_NS" -v g="$GAMES" 'BEGIN { printf "%.2f s", n / g * 100000 / 1e9 }') (goal ≤ 1 s); $(pct "$(us "$IDLE_NS" "$GAMES")" "$(us "$TRUE_NS")") of a process start"
  row "idle sweep with --mail, per game" "$(us "$MAIL_NS" "$GAMES") µs" "$(ratio "$MAIL_NS" "$IDLE_NS") of the sweep without mail"
  row "peak RSS, idle sweep ($GAMES games)" "$(mb "$PEAK")" "goal ≤ 50 MB at 100,000 games"
  row "peak RSS, idle sweep with --mail" "$(mb "$PEAK_MAIL")" "goal ≤ 50 MB at 100,000 games"
}
if [ "$IDLE_ONLY" = 1 ]; then
  echo
  echo "pbem $("$P" --version | awk '{print $2}'), $(nproc) cores, $GAMES games, $(date -u +%Y-%m-%d), idle sweeps only"
  echo
  row figure measured "ratio to its limit"
  row --- --- ---
  idle_rows
  exit 0
fi

# Due steps: on a copy (made now, timed later; nothing deleted in between).
COPY=$DIR/run-$$; mkdir -p "$COPY"
cp -a "$ROOT/games" "$COPY/due"; cp -a "$ROOT/games" "$COPY/cron"; cp -a "$ROOT/games" "$COPY/intake"; cp -a "$MD" "$COPY/maildir"
[ "$FRESH" = 1 ] && cp -a "$ROOT/games" "$COPY/fresh"
# Each copy brought to a real host's steady state (see the top): its indexes made to hold.
for _ in 1 2; do
  "$P" adjudicate --all "$COPY/due" --quiet --now "$IDLE" >/dev/null 2>&1 || true
  "$P" adjudicate --all "$COPY/cron" --quiet --now "$IDLE" --mail "$CFG" >/dev/null 2>&1 || true
done
mkdir -p "$COPY/warm/new" "$COPY/warm/cur" "$COPY/warm/tmp"
printf 'From: nobody@example.org\nTo: judge@example.net\nSubject: hello\nMessage-ID: <warm@example.org>\nDate: Wed, 01 Jul 2026 12:05:00 +0000\n\nhello\n' >"$COPY/warm/new/1.warm:2,"
"$P" intake --root "$COPY/intake" --maildir "$COPY/warm" --config "$CFG" --quiet --now 2026-07-01T12:05:00Z >/dev/null 2>&1 || true
# Write the copies out first: a durable commit is one syncfs, which would otherwise also flush
# the gigabytes just copied (on a real host, whatever else is writing to the file system).
sync
t=$(ns); "$P" adjudicate --all "$COPY/due" --quiet --now "$LATE" >/dev/null; DUE_NS=$(( $(ns) - t ))
FRESH_NS=
if [ "$FRESH" = 1 ]; then t=$(ns); "$P" adjudicate --all "$COPY/fresh" --quiet --now "$LATE" >/dev/null; FRESH_NS=$(( $(ns) - t )); fi
# The same steps in a cron run (`--mail`): each step's report mails, each with a PNG of the board.
QUEUE=$COPY/cron/.mail/outbox/queue; emls() { find "$QUEUE" \( -name '*.mail' -o -name '*.eml' \) 2>/dev/null | wc -l; }   # ID.mail, or ID.eml with ID.toml
Q0=$(emls)
t=$(ns); "$P" adjudicate --all "$COPY/cron" --quiet --now "$LATE" --mail "$CFG" >/dev/null; CRON_NS=$(( $(ns) - t ))
CRON_MAILS=$(( $(emls) - Q0 ))
t=$(ns); "$P" intake --root "$COPY/intake" --maildir "$COPY/maildir" --config "$CFG" --quiet --now 2026-07-01T12:10:00Z >/dev/null 2>&1 || true; INTAKE_NS=$(( $(ns) - t ))
# Submit: BATCH orders for one game in one run (each a fresh nonce), then each order's cost
mkdir -p "$COPY/batch"; B=$COPY/batch/g
"$P" new --rules gettysburg-campaign --id gb --now "$NOW" --player union:u@example.org:"$K.pub" --player confederate:c@example.org:"$ROOT/keys/conf.pub" "$B" >/dev/null
files=()
for i in $(seq 1 "$BATCH"); do f=$COPY/batch/o$i.toml; "$P" form --role union "$B" >"$f"; "$P" sign --key "$K" "$f" >/dev/null; files+=("$f"); done
t=$(ns); "$P" submit --now 2026-07-01T12:10:00Z "$B" "${files[@]}" >/dev/null; SUBMIT_NS=$(( $(ns) - t ))
EX=turns/demo-gettysburg-campaign-18630701
AUDIT_NS=$(median_ns 7 "$P" audit "$EX")
STEPS=$(ls "$EX/records" | grep -c '\.json$'); STEPS=$((STEPS - 1))
# simulate: games a second for each game on one core (--jobs 1) and on every core
SIMS=("throw-down-that-flag 2000" "gettysburg-campaign 200" "flag-dash 200")
SIM_ROWS=()
for g in "${SIMS[@]}"; do
  set -- $g
  one=$(median_ns 3 "$P" simulate --rules "$1" --games "$2" --jobs 1)
  all=$(median_ns 3 "$P" simulate --rules "$1" --games "$2")
  SIM_ROWS+=("$1|$2|$one|$all")
done

echo
echo "pbem $("$P" --version | awk '{print $2}'), $(nproc) cores, $GAMES games ($DUE due), $(date -u +%Y-%m-%d)"
echo "limits: Ed25519 verify $VERIFY µs, SHA-256 $SHA GB/s, fsync'd rename $FSYNC µs, /bin/true $(us "$TRUE_NS") µs"
echo
row figure measured "ratio to its limit"
row --- --- ---
idle_rows
row "$DUE due steps among $GAMES games" "$(us "$DUE_NS" 1000) ms" "$(us "$DUE_NS" "$DUE") µs a step = $(ratio "$(us "$DUE_NS" "$DUE")" "$FSYNC") fsync'd renames (indexes holding)"
[ -n "$FRESH_NS" ] && row "the same on a fresh copy (every game loaded)" "$(us "$FRESH_NS" 1000) ms" "$(ratio "$FRESH_NS" "$DUE_NS") of the steps with indexes holding"
PER_MAIL="no report mail queued"
[ "$CRON_MAILS" -gt 0 ] && PER_MAIL="$(us "$(( CRON_NS - DUE_NS ))" "$CRON_MAILS") µs a report mail more"
row "the same in a cron run (--mail, $CRON_MAILS mails)" "$(us "$CRON_NS" 1000) ms" "$(ratio "$CRON_NS" "$DUE_NS") of the sweep without mail; $PER_MAIL"
row "intake of $MAILS order mails, per mail" "$(us "$INTAKE_NS" "$MAILS") µs" "$(ratio "$(us "$INTAKE_NS" "$MAILS")" "$FSYNC") fsync'd renames, $(ratio "$(us "$INTAKE_NS" "$MAILS")" "$VERIFY") Ed25519 verifies"
row "submit, per order in a batch of $BATCH" "$(us "$SUBMIT_NS" "$BATCH") µs" "$(ratio "$(us "$SUBMIT_NS" "$BATCH")" "$FSYNC") fsync'd renames"
row "audit of the example game ($STEPS steps)" "$(us "$AUDIT_NS" 1000) ms" "$(ratio "$(us "$AUDIT_NS")" "$VERIFY") Ed25519 verifies"
row "process start (--version)" "$(us "$START") µs" "$(printf '%.2f' "$START_RATIO")× /bin/true (median of 9 rounds in turn)"
for r in "${SIM_ROWS[@]}"; do
  IFS='|' read -r rules games one all <<< "$r"
  row "simulate $rules, $games games" "$(awk -v n="$one" -v g="$games" 'BEGIN { printf "%.0f games/s", g / (n / 1e9) }') on 1 core" "$(awk -v n="$one" -v g="$games" 'BEGIN { printf "%.0f games/min/core (goal ≥ 100,000)", g / (n / 1e9) * 60 }'); $(awk -v n="$all" -v g="$games" 'BEGIN { printf "%.0f games/s", g / (n / 1e9) }') on $(nproc) cores"
done
if [ "$CARGO_BENCH" = 1 ]; then
  echo; echo "one step adjudicated in process (cargo bench --bench pipeline):"
  cargo bench --locked -q --bench pipeline 2>/dev/null | grep -E '^[a-z]|adjudicate one step|audit'
fi
echo "(copies for this run are in $COPY; delete them when done)"
