#!/usr/bin/env bash
# build.sh LUADIR OUT: makes a Redis 7 function library (FUNCTION LOAD) of
# LUADIR's lib.lua, acquire.lua and release.lua, with as few changes as
# possible: the prelude's TIME and V literal become init(), run at the
# start of each call; F's functions are made once, when the library loads
# (not on every call, as EVALSHA must; cold() too); KEYS and ARGV become upvalues set
# by each call. The functions are luacost_acq and luacost_rel (roles facq
# and frel of luacost).
set -euo pipefail
d=$1; out=$2
start=$(grep -n "^local t = redis.call('TIME')" "$d/lib.lua" | cut -d: -f1)
vend=$(awk -v s="$start" 'NR>s && /^}$/ {print NR; exit}' "$d/lib.lua")
{
  echo '#!lua name=luacost'
  echo 'local KEYS, ARGV, V'
  echo 'local function init()'
  sed -n "${start},${vend}p" "$d/lib.lua" | sed '0,/^local V = {/s//V = {/'
  echo 'end'
  # Functions cannot use setmetatable: cold() runs once, at load.
  sed -n "$((vend + 1)),\$p" "$d/lib.lua" | sed 's/^setmetatable(F, .*/cold()/' 
  echo "redis.register_function('luacost_acq', function(k, a) KEYS, ARGV = k, a; init()"
  cat "$d/acquire.lua"
  echo 'end)'
  echo "redis.register_function('luacost_rel', function(k, a) KEYS, ARGV = k, a; init()"
  cat "$d/release.lua"
  echo 'end)'
} > "$out"
