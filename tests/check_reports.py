#!/usr/bin/env python3
"""Checks of streamdrill's reports, as their readers see them.

    check_reports.py OUT

OUT holds three finished runs (made by run_scenarios.py, test "reports"):

    OUT/multi/     the parcel drill exactly-once and faults/late.drill in one
                   invocation (pass), with OUT/summary.md from --summary
    OUT/alo/       the parcel drill at-least-once (fail: duplicates)
    OUT/hostile/   tests/reports/hostile.drill: a pipeline that writes an id
                   made of markup (fail: unexpected id)

report.html is rendered in headless Chromium, to a PNG (the verdict banner's
colour and the chart lines are looked for in the pixels) and to its DOM (the
verdict, the counts and the charts are looked for in the text and the tree).
junit.xml is read by junitparser, report.md by markdown-it-py (CommonMark
with GFM tables), the export by Python's csv module. Every check compares
with summary.json or with what the drill fixes, never with a copy of the
output. Prints one line per problem; exit 1 if any.
"""
import csv
import glob
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import junitparser
from markdown_it import MarkdownIt
from PIL import Image

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


class Dom(html.parser.HTMLParser):
    """Tags (with their ids and attributes) and the text of a page."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.texts, self.stack, self.in_ids = [], [], [], {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a, list(self.stack)))
        if tag not in ("br", "meta", "img", "input", "link", "hr", "path", "line", "rect", "circle", "use", "polygon", "image"):
            self.stack.append((tag, a.get("id")))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), list(self.stack)))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        self.texts.append((data, [i for _, i in self.stack if i]))

    def text(self, inside=None):
        return " ".join(" ".join(t.split()) for t, ids in self.texts if inside is None or inside in ids)

    def count(self, tag, inside=None):
        return sum(1 for t, _, st in self.tags if t == tag and (inside is None or any(i == inside for _, i in st)))


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    sys.exit("check_reports: Chromium is not installed (scripts/deps.sh installs it)")


def render(html_path, png_path):
    """report.html in headless Chromium: (DOM text, screenshot)."""
    with tempfile.TemporaryDirectory() as profile:
        base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-extensions", f"--user-data-dir={profile}"]
        url = "file://" + os.path.abspath(html_path)
        dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
        check(dom.returncode == 0 and "<html" in dom.stdout, f"{html_path}: Chromium could not load it: {dom.stderr[-300:]}")
        shot = subprocess.run(base + ["--window-size=1100,2600", "--hide-scrollbars", f"--screenshot={png_path}", url],
                              capture_output=True, text=True, timeout=120)
        check(shot.returncode == 0 and os.path.exists(png_path), f"{html_path}: no screenshot: {shot.stderr[-300:]}")
    return dom.stdout


def near(c, rgb, tol=40):
    return all(abs(a - b) <= tol for a, b in zip(c[:3], rgb, strict=True))


def hexrgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def check_html(run, summary, expect_verdict, extra_text=()):
    page = os.path.join(run, "report.html")
    png = os.path.join(run, "report.png")
    dom_text = render(page, png)
    dom = Dom(dom_text)
    name = summary["scenario"]
    V = expect_verdict.upper()
    where = os.path.relpath(page)
    check(f"{name}: {V}" in dom.text("verdict"), f"{where}: the verdict banner does not say '{name}: {V}'")
    # verdict first: the checks, anomalies and faults before the charts, every count last
    html = open(page, encoding="utf-8").read()
    order = [html.find(h) for h in ("<h2>Checks", "<h2>Anomalies", "<h2>Faults", "<h2>Charts", "<h2>Every count")]
    check(all(i >= 0 for i in order) and order == sorted(order), f"{where}: sections not verdict-first: {order}")
    fails = [m.start() for m in re.finditer(r'class="bad">FAIL', html)]
    passes = [m.start() for m in re.finditer(r'class="ok">pass', html)]
    check(not fails or not passes or max(fails) < min(passes), f"{where}: a failed check listed after a passing one")
    counts = dom.text("counts")
    for key in ("observed_unique", "duplicated", "lost", "quarantined"):
        v = summary["counts"].get(key)
        # a whole cell: "lost 0" is also the end of "acked_lost 0"
        check(re.search(rf"(?<![\w]){key} {v}(?!\d)", counts), f"{where}: the counts table lacks '{key} {v}'")
    if "expected_in_target" in summary["counts"]:
        c = summary["counts"]
        line = f"{c['observed_unique']} unique ids in the target for {c['expected_in_target']} expected"
        check(line in dom.text("summary"), f"{where}: the summary line lacks '{line}'")
    # the charts: inlined SVG, drawn (paths), titled
    for chart, title in (("chart-timeline", "events sent and seen in the target"), ("chart-latency", "end-to-end latency"),
                         ("chart-batches", "rows per batch")):
        check(dom.count("svg", chart) == 1, f"{where}: no inline SVG in figure#{chart}")
        check(dom.count("path", chart) >= 5, f"{where}: figure#{chart} draws almost nothing ({dom.count('path', chart)} paths)")
        check(title in dom.text(chart), f"{where}: figure#{chart} lacks its title '{title}'")
    # self-contained: no script, nothing fetched from elsewhere
    check(dom.count("script") == 0, f"{where}: has a <script> element")
    for tag, attrs, _ in dom.tags:
        for k in ("src", "href", "xlink:href"):
            v = attrs.get(k) or ""
            check(not v.startswith(("http:", "https:", "//")), f"{where}: <{tag} {k}={v!r}> fetches from elsewhere")
    for t in extra_text:
        check(t in dom.text(), f"{where}: the page lacks {t!r}")
    failed = [c["name"] for c in summary["checks"] if not c["pass"]]
    for c in failed:
        check(c in dom.text("checks"), f"{where}: failed check {c} not in the checks table")
    # the pixels: the banner in the verdict's colour, the chart lines drawn
    img = Image.open(png).convert("RGB")
    banner = {"pass": "#1e8449", "fail": "#b03a2e", "inconclusive": "#b9770e"}[expect_verdict]
    check(near(img.getpixel((60, 40)), hexrgb(banner), 25), f"{png}: the verdict banner is not {banner} (pixel {img.getpixel((60, 40))})")
    px = img.get_flattened_data() if hasattr(img, "get_flattened_data") else img.getdata()
    hist = {}
    for c in px:
        hist[c] = hist.get(c, 0) + 1
    def pixels(h):
        rgb = hexrgb(h)
        return sum(n for c, n in hist.items() if near(c, rgb, 30))
    for series, h in (("sent", "#2980b9"), ("unique ids in the target", "#27ae60"), ("rows in the target", "#e67e22")):
        # the legend's sample alone is ~80 pixels; lines that overlap others (sent under acknowledged) show little more
        check(pixels(h) >= 60, f"{png}: the timeline's '{series}' line ({h}) is not visible ({pixels(h)} pixels)")
    check(len(hist) >= 200, f"{png}: looks blank ({len(hist)} colours)")
    return dom


def check_junit(path, summaries):
    where = os.path.relpath(path)
    try:
        xml = junitparser.JUnitXml.fromfile(path)
    except Exception as e:  # junitparser raises lxml/ElementTree errors
        check(False, f"{where}: junitparser cannot read it: {e}")
        return
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    check(len(suites) == len(summaries), f"{where}: {len(suites)} testsuites for {len(summaries)} scenarios")
    by_name = {suite.name: suite for suite in suites}
    for s in summaries:
        suite = by_name.get("streamdrill." + s["scenario"])
        if not check(suite is not None, f"{where}: no testsuite streamdrill.{s['scenario']} (have {sorted(by_name)})"):
            continue
        cases = {c.name: c for c in suite}
        check(len(cases) == len(s["checks"]) + (s["verdict"] not in ("pass", "fail")),
              f"{where}: {len(cases)} testcases for {len(s['checks'])} checks")
        check(suite.tests == len(cases), f"{where}: tests={suite.tests} but {len(cases)} testcases")
        nfail = sum(1 for c in s["checks"] if not c["pass"])
        check(suite.failures == nfail, f"{where}: failures={suite.failures}, summary.json has {nfail} failed checks")
        for c in s["checks"]:
            case = cases.get(c["name"])
            if not check(case is not None, f"{where}: no testcase {c['name']}"):
                continue
            results = case.result
            if c["pass"]:
                check(case.is_passed, f"{where}: {c['name']} passed but the testcase is not")
                continue
            fails = [r for r in results if isinstance(r, junitparser.Failure)]
            if not check(fails, f"{where}: {c['name']} failed but the testcase has no <failure>"):
                continue
            check(f"expected {c['expected']}, got {c['actual']}" in (fails[0].message or ""),
                  f"{where}: failure message of {c['name']}: {fails[0].message!r}")
            for sink, buckets in s.get("anomalies", {}).items():
                b = buckets.get(c["name"].split(".")[-1])
                if b and sink == "target":
                    for sample in b["sample"][:5]:
                        check(sample["id"] in (fails[0].text or ""), f"{where}: failure of {c['name']} lacks sample id {sample['id']!r}")


def md_render(path):
    md = MarkdownIt("commonmark").enable("table")
    text = open(path, encoding="utf-8").read()
    return md, text, md.parse(text), md.render(text)


def check_markdown(run, summary, expect_verdict):
    path = os.path.join(run, "report.md")
    where = os.path.relpath(path)
    md, text, tokens, rendered = md_render(path)
    heads = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h1"]
    check(heads and heads[0] == f"streamdrill: {summary['scenario']}: {expect_verdict.upper()}", f"{where}: first heading {heads[:1]}")
    check(sum(1 for t in tokens if t.type == "table_open") >= 3, f"{where}: fewer than 3 tables (run, checks, counts)")
    images = [c for t in tokens if t.type == "inline" for c in (t.children or []) if c.type == "image"]
    srcs = [i.attrs.get("src") for i in images]
    check("charts/timeline.png" in srcs, f"{where}: no timeline chart image ({srcs})")
    for s in srcs:
        p = os.path.join(run, s)
        if check(os.path.exists(p), f"{where}: image {s} does not exist"):
            with Image.open(p) as im:
                check(im.format == "PNG" and im.size[0] >= 600, f"{where}: {s} is not a chart PNG ({im.format} {im.size})")
    dom = Dom(rendered)
    for c in summary["checks"]:
        check(c["name"] in dom.text(), f"{where}: check {c['name']} missing")
    for sink, buckets in summary.get("anomalies", {}).items():
        for bucket, b in buckets.items():
            for sample in b["sample"][:20]:
                codes = [t for t, ids in dom.texts]
                check(sample["id"] in codes or sample["id"] in dom.text(),
                      f"{where}: {sink} {bucket} sample id {sample['id']!r} is not shown as text")
    return dom


def check_state_chart(run, summary):
    """report.html inlines the state chart, drawn and titled; report.md links its PNG."""
    dom = Dom(render(os.path.join(run, "report.html"), os.path.join(run, "report.png")))
    where = os.path.relpath(os.path.join(run, "report.html"))
    check(dom.count("svg", "chart-state") == 1, f"{where}: no inline SVG in figure#chart-state")
    check(dom.count("path", "chart-state") >= 5, f"{where}: figure#chart-state draws almost nothing")
    check("state rows kept after each batch" in dom.text("chart-state"), f"{where}: figure#chart-state lacks its title")
    check(f"state_unbounded {summary['counts']['state_unbounded']}" in dom.text("counts"), f"{where}: the counts table lacks state_unbounded")
    md = open(os.path.join(run, "report.md"), encoding="utf-8").read()
    check("(charts/state.png)" in md, f"{run}/report.md: no state chart image")


def check_export(run, summary):
    exp = os.path.join(run, "export")
    where = os.path.relpath(exp)
    man = json.load(open(os.path.join(exp, "manifest.json")))
    for k in ("scenario", "seed", "tag", "harness_version", "verdict"):
        check(str(man.get(k)) == str(summary.get(k if k != "harness_version" else "harness_version")),
              f"{where}/manifest.json: {k} {man.get(k)!r} vs summary.json {summary.get(k)!r}")
    check(man["tie_out"]["ties"] is True, f"{where}/manifest.json: the buckets do not tie out: {man['tie_out']}")
    rows = list(csv.DictReader(open(os.path.join(exp, "ledger.csv"), newline="", encoding="utf-8")))
    check(len(rows) == summary["counts"]["produced"], f"{where}/ledger.csv: {len(rows)} rows, produced {summary['counts']['produced']}")
    valid = {r["id"] for r in rows if r["disposition"] == "target"}
    check(len(valid) == summary["counts"]["expected_in_target"],
          f"{where}/ledger.csv: {len(valid)} distinct target ids, expected_in_target {summary['counts']['expected_in_target']}")
    counts = {r["count"]: int(r["value"]) for r in csv.DictReader(open(os.path.join(exp, "counts.csv"), newline=""))}
    check(counts == {k: v for k, v in summary["counts"].items() if isinstance(v, int)}, f"{where}/counts.csv differs from summary.json")
    for sink, buckets in summary.get("anomalies", {}).items():
        for bucket, b in buckets.items():
            p = os.path.join(exp, f"{sink}-{bucket}.csv")
            if not check(os.path.exists(p), f"{where}: no {sink}-{bucket}.csv"):
                continue
            ids = [r["id"] for r in csv.DictReader(open(p, newline="", encoding="utf-8"))]
            check(len(ids) == b["total"], f"{p}: {len(ids)} rows for {b['total']} ids")
            for sample in b["sample"]:
                check(sample["id"] in ids, f"{p}: lacks {sample['id']!r}")
            if bucket != "unexpected":
                check(set(ids) <= valid, f"{p}: ids that are not in the ledger")


def main():
    out = sys.argv[1]
    # 1. the passing runs, and the index over them
    multi = os.path.join(out, "multi")
    runs = sorted(d for d in glob.glob(os.path.join(multi, "*")) if os.path.exists(os.path.join(d, "run.db")))
    check(len(runs) == 2, f"{multi}: {len(runs)} run folders, expected 2")
    sums = {os.path.basename(r): json.load(open(os.path.join(r, "summary.json"))) for r in runs}
    eo = os.path.join(multi, "parcel-restart")
    s = sums["parcel-restart"]
    check(s["verdict"] == "pass" and s["counts"]["observed_unique"] == 120, f"{eo}: the drill did not pass: {s['verdict']} {s['counts']}")
    check_html(eo, s, "pass")
    check_markdown(eo, s, "pass")
    check_junit(os.path.join(eo, "junit.xml"), [s])
    check_export(eo, s)
    idx = Dom(render(os.path.join(multi, "index.html"), os.path.join(multi, "index.png")))
    for name, sm in sums.items():
        check(name in idx.text("runs") and sm["verdict"] in idx.text("runs"), f"{multi}/index.html: no row for {name} ({sm['verdict']})")
        check(any(t == "a" and a.get("href") == f"{name}/report.html" for t, a, _ in idx.tags), f"{multi}/index.html: no link to {name}/report.html")
    check("2 scenarios: 2 passed" in idx.text("verdict"), f"{multi}/index.html: headline {idx.text('verdict')!r}")
    check_junit(os.path.join(multi, "junit.xml"), [sums[os.path.basename(r)] for r in runs])
    # --summary appended each scenario's report.md
    md, text, tokens, _ = md_render(os.path.join(out, "summary.md"))
    h1 = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h1"]
    check(sorted(h1) == sorted(f"streamdrill: {n}: PASS" for n in sums), f"{out}/summary.md: headings {h1}")
    # short: the verdict, checks and faults of each, no image a job summary cannot show, a pointer to the full report
    h2 = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    check("Checks" in h2 and "Faults" in h2 and not {"Counts", "Steps", "Runbook"} & set(h2), f"{out}/summary.md: sections {h2}")
    check("![" not in text and "charts/" not in text, f"{out}/summary.md: embeds a chart by a relative path")
    check(text.count("Full report (counts, steps, runbook, charts)") == len(sums), f"{out}/summary.md: no pointer to each full report")
    check(text.count("\n") < 60 * len(sums), f"{out}/summary.md: {text.count(chr(10))} lines for {len(sums)} drills")

    # 2. the failing at-least-once drill: duplicates, traced to their writers
    alo = os.path.join(out, "alo", "parcel-restart")
    s = json.load(open(os.path.join(alo, "summary.json")))
    dup = s["counts"]["duplicated"]
    check(s["verdict"] == "fail" and dup > 0, f"{alo}: expected a failure with duplicates: {s['verdict']} duplicated={dup}")
    samples = s.get("anomalies", {}).get("target", {}).get("duplicated", {}).get("sample", [])
    dom = check_html(alo, s, "fail", extra_text=[x["id"] for x in samples[:20]])
    # a few batches are labelled by their ids, the numbers the text uses
    gp = open(os.path.join(alo, "charts", "batches.gp")).read()
    check("xticlabels(3)" in gp, f"{alo}/charts/batches.gp: batches not labelled by id")
    for x in samples[:20]:
        check(x["writers"] and x["writers"] in dom.text(), f"{alo}/report.html: writers of {x['id']} ({x['writers']!r}) not shown")
    check_markdown(alo, s, "fail")
    check_junit(os.path.join(alo, "junit.xml"), [s])
    check_export(alo, s)

    # 3. a growing state: the state chart in report.html and report.md
    st = os.path.join(out, "state", "parcel-state")
    s = json.load(open(os.path.join(st, "summary.json")))
    check(s["verdict"] == "fail" and s["counts"].get("state_unbounded") == 1,
          f"{st}: expected the bounded-state rule to fail: {s['verdict']} {s['counts'].get('state_unbounded')}")
    check_state_chart(st, s)

    # 4. markup in an id: shown as text everywhere, never as markup
    hos = os.path.join(out, "hostile", "report-hostile")
    s = json.load(open(os.path.join(hos, "summary.json")))
    unx = s.get("anomalies", {}).get("target", {}).get("unexpected", {}).get("sample", [])
    if check(len(unx) == 1 and "<script>" in unx[0]["id"], f"{hos}: expected one unexpected markup id, got {unx}"):
        bad = unx[0]["id"]
        writer = unx[0]["writers"]
        dom = check_html(hos, s, "fail", extra_text=[bad, writer])
        check(dom.count("i") == 0, f"{hos}/report.html: the writer's <i> became markup")
        mdom = check_markdown(hos, s, "fail")
        check(mdom.count("script") == 0 and mdom.count("i") == 0, f"{hos}/report.md: markup from the sink rendered as HTML")
        check(any(t == bad for t, _ in mdom.texts), f"{hos}/report.md: the id is not one exact code span: {bad!r}")
        check_junit(os.path.join(hos, "junit.xml"), [s])
        check_export(hos, s)

    for p in problems:
        print("  " + p)
    print(f"check_reports: {len(problems)} problem(s)")
    ok = not problems
    if "--self-test" in sys.argv:
        ok &= self_test(out)
    sys.exit(0 if ok else 1)


def self_test(out):
    """The checks above, proven on broken copies of the reports: each
    mutation must be caught by the check that owns it."""
    def edit(path, old, new, count=1):
        text = open(path, encoding="utf-8").read()
        if old not in text:
            return False
        open(path, "w", encoding="utf-8").write(text.replace(old, new, count))
        return True

    def drop_last_line(path):
        lines = open(path, encoding="utf-8").read().splitlines(True)
        open(path, "w", encoding="utf-8").writelines(lines[:-1])
        return True

    def load(run):
        return json.load(open(os.path.join(run, "summary.json")))

    eo, alo, hos = "multi/parcel-restart", "alo/parcel-restart", "hostile/report-hostile"
    cases = [
        ("markup unescaped in report.html", hos, lambda d: edit(f"{d}/report.html", "&lt;script&gt;", "<script>"),
         lambda d: check_html(d, load(d), "fail"), "<script>"),
        ("timeline chart missing", eo, lambda d: edit(f"{d}/report.html", 'id="chart-timeline"', 'id="chart-gone"'),
         lambda d: check_html(d, load(d), "pass"), "chart-timeline"),
        ("banner in the wrong colour", alo, lambda d: edit(f"{d}/report.html", ".fail{background:#b03a2e}", ".fail{background:#1e8449}"),
         lambda d: check_html(d, load(d), "fail"), "verdict banner"),
        ("a count wrong in report.html", eo, lambda d: edit(f"{d}/report.html", "<td>lost</td><td class=\"n\">0</td>", "<td>lost</td><td class=\"n\">1</td>"),
         lambda d: check_html(d, load(d), "pass"), "lost 0"),
        ("a failure dropped from junit.xml", alo, lambda d: edit(f"{d}/junit.xml", "<failure", "<system-err") and edit(f"{d}/junit.xml", "</failure>", "</system-err>"),
         lambda d: check_junit(f"{d}/junit.xml", [load(d)]), "no <failure>"),
        ("junit.xml not well-formed", eo, lambda d: edit(f"{d}/junit.xml", "</testsuites>", ""),
         lambda d: check_junit(f"{d}/junit.xml", [load(d)]), "junitparser cannot read"),
        ("a bare pipe in a report.md table", hos, lambda d: edit(f"{d}/report.md", "\\|", "|"),
         lambda d: check_markdown(d, load(d), "fail"), "not shown as text"),
        ("the chart missing from report.md", eo, lambda d: edit(f"{d}/report.md", "(charts/timeline.png)", "(charts/none.png)"),
         lambda d: check_markdown(d, load(d), "pass"), "timeline chart image"),
        ("the state chart missing", "state/parcel-state", lambda d: edit(f"{d}/report.html", 'id="chart-state"', 'id="chart-gone"'),
         lambda d: check_state_chart(d, load(d)), "chart-state"),
        ("an id missing from an export CSV", alo, lambda d: drop_last_line(f"{d}/export/target-duplicated.csv"),
         lambda d: check_export(d, load(d)), "rows for"),
    ]
    ok = True
    for name, run, mutate, run_check, expect in cases:
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "run")
            shutil.copytree(os.path.join(out, run), d)
            if not mutate(d):
                print(f"  self-test {name}: the mutation did not apply (the report changed shape)")
                ok = False
                continue
            del problems[:]
            run_check(d)
            caught = [p for p in problems if expect in p]
            if not caught:
                print(f"  self-test {name}: NOT caught (expected a problem mentioning {expect!r}; got {problems})")
                ok = False
        del problems[:]
    print(f"check_reports: self-test {'caught every broken report' if ok else 'FAILED'} ({len(cases)} mutations)")
    return ok


if __name__ == "__main__":
    main()
