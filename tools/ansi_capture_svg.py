#!/usr/bin/env python3
"""Renders a terminal capture with colours (`tmux capture-pane -e -p`) as SVG,
for pictures of what gshell draws at a terminal in docs/ (docs/d2l.md):
    python3 tools/ansi_capture_svg.py capture.txt > capture.svg
Handles the SGR codes tmux writes (256 colours, the basic eight, resets);
the upper half block is drawn as two rectangles so images show exactly."""
import re, sys, html
BASIC = {30:'#000',31:'#d00',32:'#0a0',33:'#cc0',34:'#36f',35:'#c0c',36:'#0cc',37:'#ccc',39:'#ddd'}
def c256(n):
    if n >= 232: v = 8 + (n - 232) * 10; return '#%02x%02x%02x' % (v, v, v)
    if n < 16: return ['#000','#800','#080','#880','#008','#808','#088','#ccc','#888','#f00','#0f0','#ff0','#00f','#f0f','#0ff','#fff'][n]
    n -= 16; r, g, b = n // 36, (n // 6) % 6, n % 6
    f = lambda x: 0 if x == 0 else 55 + 40 * x
    return '#%02x%02x%02x' % (f(r), f(g), f(b))
lines = open(sys.argv[1], encoding='utf-8').read().split('\n')
visible = [re.sub(r'\x1b\[[0-9;]*m', '', l).rstrip() for l in lines]
while lines and not visible[-1]:
    lines.pop(); visible.pop()
cols = max((len(v) for v in visible), default=1)
cw, ch = 8, 16
out = []
fg, bg = '#ddd', None
for y, line in enumerate(lines):
    x = 0
    for tok in re.split(r'(\x1b\[[0-9;]*m)', line):
        if tok.startswith('\x1b['):
            codes = [int(c) for c in tok[2:-1].split(';') if c] or [0]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0: fg, bg = '#ddd', None
                elif c == 38 and codes[i+1] == 5: fg = c256(codes[i+2]); i += 2
                elif c == 48 and codes[i+1] == 5: bg = c256(codes[i+2]); i += 2
                elif c == 39: fg = '#ddd'
                elif c == 49: bg = None
                elif c in BASIC: fg = BASIC[c]
                i += 1
            continue
        for chr_ in tok:
            if bg: out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>' % (x*cw, y*ch, cw, ch, bg))
            if chr_ == '\u2580':
                out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>' % (x*cw, y*ch, cw, ch//2, fg))
            elif chr_ != ' ':
                out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (x*cw, y*ch+12, fg, html.escape(chr_)))
            x += 1
W = cols*cw; H = len(lines)*ch
print('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans Mono" font-size="13"><rect width="%d" height="%d" fill="#111"/>%s</svg>' % (W, H, W, H, ''.join(out)))
