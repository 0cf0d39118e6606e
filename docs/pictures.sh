#!/usr/bin/env bash
# Redraws README's three pictures (docs/*.png) from demo games with fixed seeds, as every seat
# sees them (no --role): the same bytes on any machine. The demo games are made under target/
# (they hold host keys; nothing is written outside the checkout) and kept for a look.
#
#   docs/pictures.sh [PBEM_BINARY]     (default: target/release/pbem)
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-target/release/pbem}
T=target/docs-pictures
rm -rf "$T" && mkdir -p "$T"
seed() { printf "$1%.0s" $(seq 64); }
# Gettysburg: turn 1, round 6, a corps of each side advancing along a road.
"$P" demo --out "$T/gc" --seed "$(seed 1)" >/dev/null
"$P" report "$T/gc" --record 5 --picture docs/gettysburg-campaign.png >/dev/null
# Flag Dash, alternate board with abilities: flags carried, a secret tunnel, a round's paths.
"$P" demo --rules flag-dash --scenario alternate --option abilities=true --out "$T/fd" --seed "$(seed c)" >/dev/null
"$P" report "$T/fd" --record 8 --picture docs/flag-dash.png >/dev/null
# Throw Down That Flag, July 2: round 2, a breakthrough, the colors, the company asked ringed.
"$P" demo --rules throw-down-that-flag --out "$T/td" --seed "$(seed 3)" >/dev/null
"$P" report "$T/td" --record 20 --picture docs/throw-down-that-flag.png >/dev/null
echo "redrew docs/gettysburg-campaign.png docs/flag-dash.png docs/throw-down-that-flag.png"
