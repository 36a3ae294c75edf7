"""Drives `gshell --kernel` through %prof for spec/profiler_spec.lua: the
timeline is a display_data with image/svg+xml before the table's Out[n];
%explain's roofline is the cell's Out[n].
    python3 prof.py GSHELL OUT.lua"""
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def lanes_and_boxes(svg):
    """The SVG parsed as XML: 'lane <id> <label>' and 'box <lane> <class>
    <tooltip>' lines."""
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg", root.tag
    out = []
    for g in root.iter(SVG + "g"):
        if g.get("class") != "lane":
            continue
        label = [t.text for t in g.findall(SVG + "text") if t.get("class") == "lane-label"][0]
        out.append("lane %s %s" % (g.get("data-lane"), label))
        for r in g.findall(SVG + "rect"):
            if r.get("class"):
                out.append("box %s %s %s" % (g.get("data-lane"), r.get("class"), r.find(SVG + "title").text))
    return "\n".join(out)


def prof(gshell, out):
    r = {}
    prefix, _ = U.install_kernelspec(gshell)
    km, kc, log = U.start(os.path.join(prefix, "kernel.log"))
    try:
        U.run(kc, "x = torch.ones(300)")
        r["prof"] = U.run(kc, "%prof for i = 1, 3 do x = x * 2 end")
        svg = [m for m in r["prof"]["iopub"] if m["msg_type"] == "display_data"]
        r["svg_check"] = lanes_and_boxes(svg[0]["content"]["data"]["image/svg+xml"]) if svg else ""
        r["value"] = U.run(kc, "(torch.profiler.profile(function() return x + 1 end))")
        r["plain"] = U.run(kc, "x:sum():item()")
        r["explain"] = U.run(kc, "%explain local y = torch.ones(1 << 20, {device = 'cuda:0'}):neg()")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        log.close()
    U.write_lua(out, r)


if __name__ == "__main__":
    U.main_guard(prof)
