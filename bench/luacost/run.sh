#!/usr/bin/env bash
# Reruns the comparisons of README.md on a fresh redis-server on
# 127.0.0.1:$PORT (default 7450), started and stopped by luacost.
#
#   bench/luacost/run.sh             # scripts: main, general, floors, seedsem, empty
#   PART=micro bench/luacost/run.sh  # the micro scripts (per nested call, per Lua operation)
#   PART=floors bench/luacost/run.sh # floor4 without TIME, on keys that stay small,
#                                    # with main's field lists, with the state packed
#   PART=loop bench/luacost/run.sh   # one round trip per script: the uncontended pair
#                                    # rate of main, the floors, seedsem and refsem
#   PART=phases bench/luacost/run.sh # prefixes of the prelude, acquire.lua and release.lua
#                                    # (the cut lines follow an older acquire.lua: check them)
#   ROUNDS=21 N=2000 OUT=/tmp/x bench/luacost/run.sh
#   BASE=/tmp/lua bench/luacost/run.sh  # adds "base": main's scripts as in /tmp/lua,
#                                       # e.g. git archive <commit> core/redissem/lua | tar -x -C /tmp/b
#                                       # before core/redissem/lua/inline.lua; since, the scripts a
#                                       # checkout's core writes (DISTSEM_LUA_OUT, see main)
#
# Only figures within one run compare: the machine may be shared.
set -euo pipefail
cd "$(dirname "$0")" # bench/luacost
PORT=${PORT:-7450}
ROUNDS=${ROUNDS:-21}
N=${N:-2000}
PART=${PART:-scripts}
OUT=${OUT:-$(mktemp -d /tmp/luacost.XXXXXX)}
mkdir -p "$OUT"
L=${L:-../../core/redissem/lua}
# The fcall, vlocals and subset variants rewrite an older lib.lua, from
# before the prelude was split into warm() and cold(); they no longer apply
# to today's scripts, so the default run leaves them out. LEGACY=1 runs
# them against a checkout of such a lib (L=<dir>, e.g. git archive of
# commit 25adde2's core/redissem/lua).
if [ -n "${LEGACY:-}" ]; then
  variants/fcall/build.sh "$L" "$OUT/fn.lua"
  variants/lean/vlocals.py "$L" "$OUT/vl"
  variants/lean/drop.py "$L/lib.lua" "$OUT/lib_acq.lua" tombstone
fi
# main: the scripts as redissem sends them (core/redissem/scripts.go: the constants, the
# clock, the state read, the fast paths, the prelude, the body, with
# core/redissem/lua/inline.lua's expressions in place), written by a test of core/redissem;
# general: the same without the fast paths. P is the prelude with its
# constants and clock, B the bodies alone, expanded likewise.
X=$OUT/core
mkdir -p "$X"
(cd ../../core/redissem && DISTSEM_LUA_OUT="$X" go test -count=1 -run '^TestScriptsInlined$' . >/dev/null)
P="$X/prelude.lua"
M="acq:$X/acquire.lua,rel:$X/release.lua"
G="acq:$X/general_acquire.lua,rel:$X/general_release.lua"
F=$OUT/variants.txt
# Variants that several parts run: floor4 with and without TIME and
# tombstones, bench/seedsem, and a script that only returns.
D=variants/floor
FLOOR4="floor4=acq:$D/acq4.lua,rel:$D/rel4.lua
floor4_notime=acq:$D/acq3_notime.lua,rel:$D/rel3_notime.lua
floor4_small=acq:$D/acq4.lua,rel:$D/rel4_small.lua"
SEEDSEM=seedsem=sacq:../seedsem/acquire.lua,srel:../seedsem/release.lua
EMPTY=empty=acq:variants/empty.lua,rel:variants/empty2.lua
case $PART in
scripts)
  cat > "$F" <<V
main=$M
general=$G
$SEEDSEM
$EMPTY
empty_seedsemargs=sacq:variants/empty.lua,srel:variants/empty2.lua
empty_nokeys=none:variants/empty.lua,none:variants/empty2.lua
fcall_empty=facq:variants/fcall/empty.lua,frel:variants/fcall/empty.lua
floor6=acq:variants/floor/acq6.lua,rel:variants/floor/rel6.lua
floor4=acq:variants/floor/acq4.lua,rel:variants/floor/rel4.lua
fcall_floor4=facq:variants/fcall/floor4.lua,frel:variants/fcall/floor4.lua
V
  if [ -n "${BASE:-}" ]; then
    B=$BASE; C=""; [ -f "$B/const.lua" ] && C="$B/const.lua+"
    if [ -f "$B/general_acquire.lua" ]; then
      echo "base=acq:$B/acquire.lua,rel:$B/release.lua" >> "$F"
    else
      echo "base=acq:$C$B/fast_acquire.lua+$B/lib.lua+$B/acquire.lua,rel:$C$B/fast_release.lua+$B/lib.lua+$B/release.lua" >> "$F"
    fi
  fi
  if [ -n "${LEGACY:-}" ]; then cat >> "$F" <<V
fcall=facq:$OUT/fn.lua,frel:$OUT/fn.lua
vlocals=acq:$OUT/vl/lib.lua+$OUT/vl/acquire.lua,rel:$OUT/vl/lib.lua+$OUT/vl/release.lua
subset=acq:$OUT/lib_acq.lua+$L/acquire.lua,rel:$L/lib.lua+$L/release.lua
V
  fi
  ;;
floors)
  # What the no-Lua floor of 4 calls (floor4) pays for, against seedsem.
  cat > "$F" <<V
$FLOOR4
floor4_fields=acq:$D/acq4_fields.lua,rel:$D/rel4.lua
floor4_packed=acq:$D/acq4_packed.lua,rel:$D/rel4_packed.lua
$SEEDSEM
$EMPTY
V
  ;;
loop)
  # One round trip per script (-pipe 1), one connection, no library: the
  # uncontended pair rate each design's scripts allow (iterations per
  # second), beside seedsem's and the reference design's (bench/refsem).
  cat > "$F" <<V
$SEEDSEM
main=$M
$FLOOR4
floor4_bare=acq:$D/acq3_notime.lua,rel:$D/rel3_bare.lua
floor4_int=acq:$D/acq4_int.lua,rel:$D/rel4_int.lua
ref=racq:../refsem/acquire.lua,rrel:../refsem/release.lua
$EMPTY
V
  ;;
micro)
  # Each micro script runs after main's acquire and release, on their keys
  # (a realistic state hash); compare its third step with m_base's.
  echo "main=$M" > "$F"
  for f in variants/micro/*.lua; do
    echo "m_$(basename "$f" .lua)=$M,acq:$f" >> "$F"
  done
  ;;
phases)
  # A prefix runs third, after main's acquire and release of the same id:
  # cut past the id's lookup and it takes the tombstone path, not the
  # uncontended one, so the cuts stop before.
  echo "main=$M" > "$F"
  echo "m_base=$M,acq:variants/micro/base.lua" >> "$F"
  for p in V:50 VF:172 all:351; do
    head -n "${p#*:}" "$P" > "$OUT/lib_${p%:*}.lua"; echo 'do return 1 end' >> "$OUT/lib_${p%:*}.lua"
    echo "lib_${p%:*}=$M,acq:$OUT/lib_${p%:*}.lua" >> "$F"
  done
  for k in 13 14 15 16; do
    ./cut.sh "$X/body_acquire.lua" $k "$OUT/acut$k.lua"; echo "acut$k=$M,acq:$P+$OUT/acut$k.lua" >> "$F"
  done
  for k in 7 8 9; do
    ./cut.sh "$X/body_release.lua" $k "$OUT/rcut$k.lua"; echo "rcut$k=$M,rel:$P+$OUT/rcut$k.lua" >> "$F"
  done
  ;;
*) echo "PART is scripts, floors, loop, micro or phases" >&2; exit 2 ;;
esac
PIPE=100 EXTRA=()
[ "$PART" = loop ] && PIPE=1 EXTRA=(-base seedsem)
go run . -start -port "$PORT" -rounds "$ROUNDS" -n "$N" -pipe "$PIPE" "${EXTRA[@]}" -f "$OUT/variants.txt" | tee "$OUT/luacost.txt"
echo "output in $OUT" >&2
