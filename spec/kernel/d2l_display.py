"""Drives `gshell --kernel` for spec/d2l_spec.lua: an Animator publishes a
display_data with a display_id, then update_display_data with that id while
the cell runs (before the cell's own output that follows it), each an SVG;
show_images publishes a PNG (and an SVG with titles).
    python3 d2l_display.py GSHELL OUT.lua
The SVGs are parsed here as XML; their curves and legend come back as text
lines, the PNG as its base64 text (decoded by the spec's PNG reader)."""
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_util as U  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def describe_svg(svg):
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg", root.tag
    out = []
    for p in root.iter(SVG + "polyline"):
        if p.get("class") == "series":
            out.append("series %s %d" % (p.get("data-name"), len(p.get("points").split())))
    for g in root.iter(SVG + "g"):
        if g.get("class") == "legend":
            out.append("legend " + ",".join(t.text for t in g.findall(SVG + "text")))
    for t in root.iter(SVG + "text"):
        if t.text == "epoch":
            out.append("xlabel epoch")
    out.append("images %d" % len(list(root.iter(SVG + "image"))))
    return "\n".join(out)


CELL = """
local a = d2l.Animator({xlabel = 'epoch', xlim = {1, 3}, legend = {'train loss', 'test acc'}})
print('before')
a:add(1, {0.9, 0.5})
a:add(2, {0.6, nil})
a:add(3, {0.4, 0.8})
print('after')
"""


def drive(gshell, r):
    prefix, _ = U.install_kernelspec(gshell)
    km, kc, log = U.start(os.path.join(prefix, "kernel.log"))
    try:
        ex = U.run(kc, CELL)
        msgs = []
        for m in ex["iopub"]:
            c = m["content"]
            if m["msg_type"] in ("display_data", "update_display_data"):
                msgs.append({"type": m["msg_type"], "id": c.get("transient", {}).get("display_id"),
                             "svg": describe_svg(c["data"]["image/svg+xml"]),
                             "text": c["data"].get("text/plain")})
            elif m["msg_type"] == "stream":
                msgs.append({"type": "stream", "text": c["text"]})
        r["animator"] = msgs
        r["animator_reply"] = ex["reply"]["status"]
        ex = U.run(kc, "torch.manual_seed(0); X = torch.randint(0, 256, {3, 4, 5}, {dtype = torch.uint8})\n"
                       "d2l.show_images(X, 1, 3, {titles = {'a', 'b', 'c'}, scale = 0.5})\n"
                       "print(table.concat(X:reshape(-1):tolist(), ','))")
        imgs = []
        for m in ex["iopub"]:
            if m["msg_type"] == "display_data":
                d = m["content"]["data"]
                imgs.append({"png": d.get("image/png"), "svg": describe_svg(d["image/svg+xml"]),
                             "text": d.get("text/plain"), "id": m["content"].get("transient", {}).get("display_id")})
            if m["msg_type"] == "stream":
                r["pixels"] = r.get("pixels", "") + m["content"]["text"]
        r["images"] = imgs
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        log.close()


def through_nbclient(r):
    """The same cell in a notebook run by nbclient: the update_display_data
    messages replace the display's output in place, so the saved notebook
    holds one picture, the chart's last state, between the two prints."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(CELL))
    NotebookClient(nb, kernel_name="gshell", timeout=60).execute()
    outs = []
    for o in nb.cells[0].outputs:
        if o["output_type"] == "stream":
            outs.append({"type": "stream", "text": o["text"]})
        else:
            outs.append({"type": o["output_type"], "text": o["data"].get("text/plain"),
                         "svg": describe_svg(o["data"]["image/svg+xml"])})
    r["nbclient"] = outs


def main(gshell, out):
    r = {}
    drive(gshell, r)
    through_nbclient(r)
    U.write_lua(out, r)


if __name__ == "__main__":
    U.main_guard(main)
