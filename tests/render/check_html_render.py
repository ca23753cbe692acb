#!/usr/bin/env python3
"""Renders a dtsim HTML report in headless Chromium and checks that its charts are drawn.

Usage: check_html_render.py DTSIM SOURCE_DIR WORK_DIR

1. `dtsim sweep scenarios/default.json` (weak scaling over nodes and fabrics) writes an HTML report.
2. The HTML parses as XML; it has the scaling, breakdown and memory charts (SVG elements, one line
   per fabric, bars) and no NaN/Inf.
3. At 1,000 and 1,600 px wide, Chromium (Debian package `chromium`, installed by `make deps`) lays the
   page out and a probe script (added to a copy of the report; the report itself has none) reports
   whether anything is cut: the page wider than the window, or a chart or table whose right edge
   passes the body's. Then Chromium takes a screenshot at each width (kept in WORK_DIR, printed); the PNG
   is decoded (zlib from the standard library) and must not be blank: enough non-white pixels and
   several colours.
Fails loudly, never skips: a missing chromium is a failure with the fix in the message.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def decode_png(path):
    """Returns (width, height, rows of RGB tuples) for 8-bit RGB/RGBA non-interlaced PNGs."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        fail(f"unexpected PNG format depth={depth} colour={colour} interlace={interlace}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        filt = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if filt == 1:
                line[x] = (line[x] + a) & 255
            elif filt == 2:
                line[x] = (line[x] + b) & 255
            elif filt == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def main():
    dtsim, source, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    report = os.path.join(work, "weak_scaling.html")
    if os.path.exists(report):
        os.remove(report)
    cmd = [dtsim, "sweep", os.path.join(source, "scenarios", "default.json"), "--set", "/cluster/nodes=1,2,4,8",
           "--set", "/cluster/network/fabric=tcp,efa,infiniband", "--scaling", "weak", "--report", report]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        fail(f"{' '.join(cmd)} exited {run.returncode}: {run.stderr}")

    text = open(report, encoding="utf-8").read()
    for bad in ("nan", "inf\"", "NaN", "Infinity"):
        if bad in text:
            fail(f"the report contains '{bad}'")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        fail(f"the report is not well-formed XML: {e}")
    svgs = list(root.iter(SVG + "svg"))
    lines = [p for p in root.iter(SVG + "polyline") if p.get("class") == "series"]
    bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
    print(f"report: {len(svgs)} charts, {len(lines)} lines, {len(bars)} bars")
    if len(svgs) < 6:
        fail(f"expected at least 6 charts (throughput, efficiency, TFLOP/s, MFU, breakdown, memory), "
             f"found {len(svgs)}")
    if len(lines) != 12:
        fail(f"expected 4 scaling charts x 3 fabrics = 12 lines, found {len(lines)}")
    if not bars:
        fail("no bars drawn")

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        fail("chromium is not installed: run `make deps` (Debian package chromium) to render HTML reports")
    base = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--disable-dev-shm-usage",
            f"--user-data-dir={os.path.join(work, 'chromium-profile')}"]

    # The layout probe: a copy of the report with a script that writes what overflows into the DOM.
    probe = os.path.join(work, "weak_scaling_probe.html")
    script = """<script>//<![CDATA[
window.addEventListener('load', function () {
  var body = document.body.getBoundingClientRect();
  var cut = [];
  if (document.documentElement.scrollWidth > window.innerWidth) cut.push('page ' + document.documentElement.scrollWidth);
  document.querySelectorAll('svg, table').forEach(function (e, i) {
    var r = e.getBoundingClientRect();
    if (r.right > body.right + 0.5 || r.left < body.left - 0.5) cut.push(e.tagName + ' ' + i + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  });
  var out = document.createElement('pre');
  out.id = 'layout-probe';
  out.textContent = JSON.stringify({width: window.innerWidth, body: Math.round(body.width), cut: cut});
  document.body.appendChild(out);
});
//]]></script>"""
    with open(probe, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", script + "</body>"))
    for width in (1000, 1600):
        dom = subprocess.run(base + [f"--window-size={width},1600", "--virtual-time-budget=5000", "--dump-dom",
                                     "file://" + os.path.abspath(probe)],
                             capture_output=True, text=True, timeout=120, check=False)
        found = re.search(r'<pre id="layout-probe">(.*?)</pre>', dom.stdout)
        if dom.returncode != 0 or not found:
            fail(f"chromium --dump-dom at {width} px exited {dom.returncode} without the probe's result: "
                 f"{dom.stderr[-2000:]}")
        layout = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
        print(f"layout at {width} px: window {layout['width']} px, body {layout['body']} px, "
              f"cut: {layout['cut'] or 'nothing'}")
        if layout["cut"]:
            fail(f"at {width} px wide, part of the report is cut or scrolls sideways: {layout['cut']}")

        png = os.path.join(work, f"weak_scaling_{width}.png")
        if os.path.exists(png):
            os.remove(png)
        shot = subprocess.run(base + [f"--screenshot={png}", f"--window-size={width},1600",
                                      "file://" + os.path.abspath(report)],
                              capture_output=True, text=True, timeout=120, check=False)
        if shot.returncode != 0 or not os.path.exists(png):
            fail(f"chromium exited {shot.returncode} without a screenshot: {shot.stderr[-2000:]}")
        shot_width, height, rows = decode_png(png)
        pixels = [p for row in rows for p in row]
        non_white = sum(1 for p in pixels if min(p) < 240)
        colours = len(set(pixels))
        share = non_white / len(pixels)
        print(f"screenshot {png}: {shot_width}x{height}, {share:.1%} non-white pixels, {colours} colours")
        if shot_width != width:
            fail(f"the screenshot is {shot_width} px wide, not {width}")
        if share < 0.02 or colours < 8:
            fail("the screenshot looks blank")
        # The palette's first series colour (#1f77b4) must be on screen: a chart line or bar was painted.
        if not any(abs(p[0] - 0x1f) < 24 and abs(p[1] - 0x77) < 24 and abs(p[2] - 0xb4) < 24 for p in pixels):
            fail("no chart colour in the screenshot")
    print("ok")


if __name__ == "__main__":
    main()
