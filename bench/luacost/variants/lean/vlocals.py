#!/usr/bin/env python3
"""vlocals.py LUADIR OUTDIR: core/lua's lib.lua, acquire.lua and
release.lua with the table V replaced by locals (V.x -> V_x): the V literal
becomes local declarations, and the functions capture the locals as
upvalues instead of indexing V. Semantics unchanged; for luacost only."""
import re, sys, os

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
lib = open(os.path.join(src, 'lib.lua')).read()
start = lib.index('local V = {')
end = lib.index('\n}\n', start) + 3
lit = lib[start:end]
body = lit[len('local V = {'):lit.rindex('}')]
body = re.sub(r'--[^\n]*', '', body)
# split the fields on top-level commas (the values hold calls with commas)
fields, depth, cur = [], 0, ''
for ch in body:
    if ch in '({':
        depth += 1
    elif ch in ')}':
        depth -= 1
    if ch == ',' and depth == 0:
        fields.append(cur); cur = ''
    else:
        cur += ch
if cur.strip():
    fields.append(cur)
decl = []
for f in fields:
    f = f.strip()
    if not f:
        continue
    k, v = f.split('=', 1)
    decl.append('local V_%s = %s' % (k.strip(), v.strip()))
lib = lib[:start] + '\n'.join(decl) + '\n' + lib[end:]
sub = lambda t: re.sub(r'\bV\.(\w+)', r'V_\1', t)
open(os.path.join(out, 'lib.lua'), 'w').write(sub(lib))
for n in ('acquire.lua', 'release.lua'):
    open(os.path.join(out, n), 'w').write(sub(open(os.path.join(src, n)).read()))
