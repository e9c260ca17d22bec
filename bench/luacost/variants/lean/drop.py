#!/usr/bin/env python3
"""drop.py IN OUT NAME...: IN without the definitions of the functions
F.NAME (from 'function F.NAME(' to the next line 'end'), for a prelude
that makes only what one script uses. For luacost only."""
import re, sys

text = open(sys.argv[1]).read()
for name in sys.argv[3:]:
    m = re.search(r'^function F\.%s\(.*?^end\n' % re.escape(name), text, re.S | re.M)
    if not m:
        sys.exit('drop.py: no function F.%s' % name)
    text = text[:m.start()] + text[m.end():]
open(sys.argv[2], 'w').write(text)
