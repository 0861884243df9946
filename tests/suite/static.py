"""Static checks: the code and the docs against each other (the language reference, the help, the links, run.db's tables, the structure, summary.json's schema), no pipeline run."""
import glob
import os
import re
import subprocess

from .cases import DIRECTIVES, directives_markdown
from .common import OUT, ROOT, result, venv_python
from .install import INIT_KINDS
from .registry import coded

README_REF = (r"(tests/run_scenarios.py \(readme-reference\) fails when the two differ -->\n)(.*?)(<!-- end of the generated reference -->)")


EVENTS_REF = r"(<!-- the event shapes below are printed by `streamdrill help --events`.*?-->\n)(.*?)(<!-- end of the event shapes -->)"


DIRECTIVES_REF = r"(<!-- directives: generated from tests/suite/cases.py's DIRECTIVES[^\n]*-->\n)(.*?)(<!-- end of the directives -->)"


def update_readme_reference(binary):
    gen = subprocess.run([binary, "help", "--markdown"], capture_output=True, text=True, check=True).stdout
    path = os.path.join(ROOT, "docs", "language.md")
    text = open(path).read()
    new, n = re.subn(README_REF, lambda m: m.group(1) + gen + m.group(3), text, flags=re.S)
    if n != 1:
        print("docs/language.md: the reference markers are missing")
        return False
    events = subprocess.run([binary, "help", "--events"], capture_output=True, text=True).stdout
    new, n = re.subn(EVENTS_REF, lambda m: m.group(1) + events + m.group(3), new, flags=re.S)
    if n != 1:
        print("docs/language.md: the event shapes markers are missing")
        return False
    open(path, "w").write(new)
    print("docs/language.md: reference and event shapes rewritten from `streamdrill help --markdown` and `--events`")
    path = os.path.join(ROOT, "docs", "testing.md")
    text = open(path).read()
    new, n = re.subn(DIRECTIVES_REF, lambda m: m.group(1) + "\n" + directives_markdown() + "\n" + m.group(3), text, flags=re.S)
    if n != 1:
        print("docs/testing.md: the directives markers are missing")
        return False
    open(path, "w").write(new)
    print("docs/testing.md: the case directives rewritten from tests/suite/cases.py")
    return True


@coded("directives", "static")
def test_directives():
    """docs/testing.md's table of `# test:` directives is the case runner's own (tests/suite/cases.py's DIRECTIVES)."""
    text = open(os.path.join(ROOT, "docs", "testing.md")).read()
    m = re.search(DIRECTIVES_REF, text, re.S)
    if not m or m.group(2).strip() != directives_markdown().strip():
        print("FAIL directives: docs/testing.md's directive table differs from tests/suite/cases.py's DIRECTIVES "
              "(tests/run_scenarios.py --update-readme rewrites it)")
        return False
    print(f"ok   directives: docs/testing.md lists the {len(DIRECTIVES)} directives the case runner reads, as it reads them")
    return True


@coded("terminal-help", "static")
def test_terminal_help(binary):
    """`streamdrill help NAME` reads as text on a terminal (a Markdown link shown as its text and page), and --version
    names every sink reader the language has."""
    problems = []
    kill = subprocess.run([binary, "help", "kill"], capture_output=True, text=True).stdout
    if "](" in kill or "see no pass without the drill (docs/pipelines.md)" not in kill or "(see progress sources)" not in kill:
        problems.append("help kill shows Markdown links: " + kill[:400])
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    readers = next((ln.split(":", 1)[1].split() for ln in ver.splitlines() if "sink readers:" in ln), [])
    if sorted(readers) != sorted(INIT_KINDS):
        problems.append(f"--version names the sink readers {readers}, the language has {sorted(INIT_KINDS)}")
    return result("terminal-help", problems, f"help kill as plain text, --version names the {len(readers)} sink readers")


@coded("readme-reference", "static")
def test_readme_reference(binary):
    """docs/language.md's reference is what `streamdrill help --markdown` prints from the table."""
    gen = subprocess.run([binary, "help", "--markdown"], capture_output=True, text=True).stdout
    readme = open(os.path.join(ROOT, "docs", "language.md")).read()
    m = re.search(r"tests/run_scenarios.py \(readme-reference\) fails when the two differ -->\n(.*?)<!-- end of the generated reference -->",
                  readme, re.S)
    if not m or m.group(1) != gen:
        import difflib
        diff = "" if not m else "".join(list(difflib.unified_diff(m.group(1).splitlines(True), gen.splitlines(True), "docs/language.md",
                                                                  "streamdrill help --markdown"))[:30])
        print("FAIL readme-reference: docs/language.md's reference differs from `streamdrill help --markdown` "
              "(paste its output between the markers):\n" + (diff or "markers not found"))
        return False
    print(f"ok   readme-reference: docs/language.md's header and step tables are the table in harness/lang/lang.c ({gen.count(chr(10))} lines)")
    return True


@coded("event-shapes", "static")
def test_event_shapes(binary):
    """docs/language.md's event shapes are what `streamdrill help --events` renders from the generators: every field and every
    malformed kind the language names described, the wrong-type kind an epoch number, the empty one no bytes."""
    p = subprocess.run([binary, "help", "--events"], capture_output=True, text=True)
    doc = open(os.path.join(ROOT, "docs", "language.md")).read()
    m = re.search(EVENTS_REF, doc, re.S)
    problems = []
    if p.returncode:
        problems.append(f"help --events: exit {p.returncode} (a field or kind with no description):\n" +
                        "\n".join(ln for ln in p.stdout.splitlines() if "not described" in ln))
    if not m or m.group(2) != p.stdout:
        problems.append("docs/language.md's event shapes differ from `streamdrill help --events` (tests/run_scenarios.py --update-readme)")
    inject = subprocess.run([binary, "help", "inject"], capture_output=True, text=True).stdout
    kinds = re.findall(r"`([a-z0-9-]+)`", inject[inject.find("broken in turn"):inject.find("Every message")])
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (.*?) \| ", p.stdout[p.stdout.find("| kind | on the wire"):], re.M))
    problems += [f"malformed kind {k} named by `help inject` has no row" for k in kinds if k not in rows and k != "kinds"]
    if '"event_time":1767254400,' not in rows.get("wrong-type", ""):
        problems.append(f"wrong-type: expected the event time as an epoch number, shown {rows.get('wrong-type')!r}")
    if rows.get("empty") != "(nothing)" or rows.get("null-value") != "(no value)":
        problems.append(f"empty / null-value shown as {rows.get('empty')!r} / {rows.get('null-value')!r}")
    if ".000Z" not in p.stdout or "header `sd-id: 5eed-0`" not in p.stdout:
        problems.append("the scan's time format or its sd-id header is not shown")
    return result("event-shapes", problems, f"docs/language.md shows the generators' events and the {len(rows)} malformed kinds "
                  "as `help --events` renders them")


@coded("run-db-tables", "static")
def test_run_db_tables():
    """Every table and view of run.db's one schema is named in docs/outputs.md, and nothing creates a table elsewhere."""
    src = open(os.path.join(ROOT, "harness", "base", "ledger.c")).read()
    schema = src[src.index("sd_ledger_schema[] ="):]
    schema = schema[:schema.index(";\n\n")]
    names = re.findall(r'CREATE (?:TABLE|VIEW) \\?"?(\w+)', schema)
    doc = open(os.path.join(ROOT, "docs", "outputs.md")).read()
    row = next((ln for ln in doc.splitlines() if ln.startswith("| `run.db` |")), "")
    problems = [f"`{n}` is not named in docs/outputs.md's run.db row" for n in names if f"`{n}`" not in row]
    others = [p for p in [f for d in ("harness", "injectors", "reports") for f in glob.glob(os.path.join(ROOT, d, "**", "*.c"), recursive=True)]
              if "CREATE TABLE" in open(p).read() and not p.endswith(os.path.join("harness", "base", "ledger.c"))
              and "pipelines" not in p]
    problems += [f"{os.path.relpath(p, ROOT)} creates a table outside the schema" for p in others]
    if "CREATE TABLE IF NOT EXISTS" in src:
        problems.append("ledger.c creates a table on first use, outside its schema")
    if len(names) < 20:
        problems.append(f"only {len(names)} tables found in the schema: {names}")
    return result("run-db-tables", problems, f"{len(names)} tables and views in one schema, each in docs/outputs.md")


@coded("structure", "static")
def test_structure():
    """The run's handle stays small, its insides private and its rooms own their state: struct sd_run_s is defined in
    run_int.h, which no file outside harness/run/ includes, with at most 30 top-level members; no file outside the run
    layer names one of them (the injectors and progress sources ask through the calls in run.h); the progress source's
    state (sd_progress_run_t) is written only by harness/progress/, the faults' (sd_faults_t) only by the injectors and
    the runner that sets them up and frees them."""
    problems = []
    h = open(os.path.join(ROOT, "harness", "run", "run.h")).read()
    if re.search(r"struct sd_run_s\s*\{", h):
        problems.append("run.h defines struct sd_run_s: its insides belong in run_int.h")
    hi = open(os.path.join(ROOT, "harness", "run", "run_int.h")).read()
    body = hi[hi.index("struct sd_run_s {") + len("struct sd_run_s {"):hi.index("\n};", hi.index("struct sd_run_s {"))]
    depth, members, stmt, names = 0, 0, "", set()
    for ch in re.sub(r"/\*.*?\*/", "", body, flags=re.S):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            members += stmt.count(",") + 1
            names.update(m.group(1) for m in re.finditer(r"(\w+)\s*(?:\[[^\]]*\])?\s*(?:,|$)", stmt.strip()))
            stmt = ""
            continue
        if depth == 0:
            stmt += ch
    if members > 30:
        problems.append(f"sd_run_t has {members} top-level members (at most 30)")
    if not {"sc", "ledger", "faults", "prog", "pipe", "staging"} <= names:
        problems.append(f"the members read from run_int.h look wrong: {sorted(names)}")
    write = r"[\w.\[\]]* *(?:=[^=]|\+=|-=|\+\+|--)"
    member = re.compile(r"\br->(" + "|".join(sorted(names)) + r")\b")
    outside = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "harness", "**", "*.c"), recursive=True) +
                       glob.glob(os.path.join(ROOT, "injectors", "*.c")) + glob.glob(os.path.join(ROOT, "reports", "*.c"))):
        rel = os.path.relpath(path, ROOT)
        src = open(path).read()
        room = rel.split("/")[-2]
        if not rel.startswith("harness/run/") and '#include "run_int.h"' in src:
            problems.append(f"{rel} includes run_int.h, the run's inside")
        # the variables a file holds the two owned parts in
        prog_vars = set(re.findall(r"sd_progress_run_t \*(\w+) = sd_run_progress\(", src)) | {r"sd_run_progress\(\w+\)"}
        fault_vars = set(re.findall(r"sd_faults_t \*(\w+) = sd_run_faults\(", src)) | {r"sd_run_faults\(\w+\)"}
        prog_w = re.compile(r"(?:\b(?:" + "|".join(sorted(prog_vars)) + r")->|\br->prog\.)(\w+)" + write)
        fault_w = re.compile(r"(?:\b(?:" + "|".join(sorted(fault_vars)) + r")->|\br->faults\.)(\w+)" + write)
        if '#include "run.h"' in src and not rel.startswith("harness/run/"):
            outside += 1
        for n, line in enumerate(src.split("\n"), 1):
            if not rel.startswith("harness/run/") and '#include "run.h"' in src:
                for m in member.finditer(line):
                    problems.append(f"{rel}:{n} names r->{m.group(1)}, a member of the run's insides")
            if room != "progress":
                for m in prog_w.finditer(line):
                    problems.append(f"{rel}:{n} writes the progress source's {m.group(1)}")
            if room != "injectors" and not rel.endswith("run/runner.c"):
                for m in fault_w.finditer(line):
                    problems.append(f"{rel}:{n} writes the faults' {m.group(1)}")
    if outside < 8:
        problems.append(f"only {outside} files outside the run layer include run.h: the check reads the wrong files")
    return result("structure", problems, f"sd_run_t has {members} top-level members, defined in run_int.h, which none but the run's "
                  f"rooms include; of {outside} files outside the run layer that see the handle, none names a member; the "
                  "progress state is written by progress/ only, the faults' by the injectors and the runner only")


def call_circles(graph):
    """The circles of a graph {node: [nodes it calls]}: its strongly connected components of more than one node."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@coded("call-circles", "static")
def test_call_circles(binary):
    """No two files call each other, directly or round a circle: the calls read from the build's objects (a symbol one
    object uses and another defines), over harness/, injectors/ and reports/. The finder is first shown a circle."""
    problems = []
    if call_circles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) != [["a", "b", "c"]]:
        problems.append("the circle finder misses a circle of three")
    build = os.path.dirname(os.path.abspath(binary))
    # the objects the library holds (an object of a file since removed may lie in the build folder)
    members = set(subprocess.run(["ar", "t", os.path.join(build, "libstreamdrill.a")], capture_output=True, text=True).stdout.split())
    objs = sorted(o for d in ("harness", "injectors", "reports") for o in glob.glob(os.path.join(build, d, "**", "*.o"), recursive=True)
                  if os.path.basename(o) in members)
    defined, used = {}, {}
    for o in objs:
        for line in subprocess.run(["nm", o], capture_output=True, text=True).stdout.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "U":
                used.setdefault(o, set()).add(f[1])
            elif len(f) == 3 and f[1] in "TDBR":
                defined[f[2]] = o
    graph = {os.path.relpath(o, build): sorted({os.path.relpath(defined[s], build) for s in used.get(o, ())
                                                if s in defined and defined[s] != o}) for o in objs}
    edges = sum(len(v) for v in graph.values())
    if len(objs) < 60 or edges < 100:
        problems.append(f"only {len(objs)} objects and {edges} calls between files read from {build}: the check reads the wrong build")
    problems += ["a call circle: " + " <-> ".join(c) for c in call_circles(graph)]
    return result("call-circles", problems, f"{len(objs)} objects, {edges} calls from one file to another, no circle")


@coded("layout", "static")
def test_layout():
    """docs/layout.md names every source file of harness/, injectors/ and reports/ (a header by its .c, unless it has none)."""
    doc = open(os.path.join(ROOT, "docs", "layout.md")).read()
    files = sorted(f for d in ("harness", "injectors", "reports") for f in glob.glob(os.path.join(ROOT, d, "**", "*.*"), recursive=True)
                   if f.endswith((".c", ".cpp", ".py")) or (f.endswith(".h") and not os.path.exists(f[:-2] + ".c")
                                                             and not os.path.exists(f[:-2] + ".cpp")))
    missing = [os.path.relpath(f, ROOT) for f in files if not re.search(rf"\b{re.escape(os.path.basename(f))}\b", doc)]
    if len(files) < 60:
        missing.append(f"only {len(files)} source files found: the check reads the wrong folders")
    return result("layout", [f"docs/layout.md does not name {m}" for m in missing], f"docs/layout.md names all {len(files)} source files")


@coded("verbs", "static")
def test_verbs(binary):
    """main.c's command table is the one list of commands: each is in --help's usage and in the unknown-command message."""
    src = open(os.path.join(ROOT, "harness", "main.c")).read()
    table = src[src.index("static const sd_verb_t sd_verbs[] = {"):]
    names = re.findall(r'\{"([a-z]+)", SD_VERB_', table[:table.index("{NULL, 0, ")])
    usage = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    p = subprocess.run([binary, "no-such-command"], capture_output=True, text=True)
    problems = [f"--help does not show `streamdrill {n}`" for n in names if f"streamdrill {n} " not in usage]
    problems += [f"the unknown-command message does not name {n}" for n in names + ["help", "version"] if not re.search(rf"\b{n}\b", p.stderr)]
    if p.returncode != 2:
        problems.append(f"an unknown command: exit {p.returncode}, expected 2")
    # an option group on a command that does not take it: refused, naming the commands that do (from the table)
    drill = os.path.join(ROOT, "scenarios", "parcel-restart.drill")
    for args, want in ((["check", drill, "--broker-count", "3"], "applies to `streamdrill run`, `explore` and `broker`"),
                       (["check", drill, "--runs", "3"], "apply to `streamdrill explore` only"),
                       (["run", drill, "--name", "x", "--out", os.path.join(OUT, "verbs-refused")], "apply to `streamdrill init` only")):
        q = subprocess.run([binary, *args], capture_output=True, text=True)
        if q.returncode != 2 or want not in q.stderr:
            problems.append(f"{' '.join(args[:1] + args[2:3])}: exit {q.returncode}, {q.stderr.strip()[-200:]!r} (expected 2 and {want!r})")
    if os.path.exists(os.path.join(OUT, "verbs-refused")):
        problems.append("a refused run wrote its output folder")
    if len(names) < 9:
        problems.append(f"only {len(names)} commands read from main.c's table: {names}")
    return result("verbs", problems, f"the {len(names)} commands of main.c's table in --help, the unknown-command message and "
                  "each option group's refusal")


@coded("doc-links", "static")
def test_doc_links():
    """Every relative link of README.md and docs/*.md names a file that exists and, with #anchor, a heading in it."""
    def anchor(h):
        t = re.sub(r"[^\w\- ]", "", h.lstrip("#").strip().lower())
        return t.replace(" ", "-")
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    heads = {f: {anchor(ln) for ln in open(f).read().split("\n") if ln.startswith("#")} for f in files}
    bad, n = [], 0
    for f in files:
        for m in re.finditer(r"\]\(([^)\s]+)\)", open(f).read()):
            t = m.group(1)
            if t.startswith(("http:", "https:", "mailto:")):
                continue
            n += 1
            path, _, a = t.partition("#")
            tgt = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(tgt):
                bad.append(f"{os.path.relpath(f, ROOT)}: {t}: no such file")
            elif a and tgt in heads and a not in heads[tgt]:
                bad.append(f"{os.path.relpath(f, ROOT)}: {t}: no such heading")
    if bad:
        print("FAIL doc-links: " + "; ".join(bad))
        return False
    print(f"ok   doc-links: {n} relative links of README.md and docs/ lead to a file and heading")
    return True


@coded("schemas", "last")
def test_schemas(only):
    """Every summary.json and manifest.json this test run wrote (tests/out/) against reports/schemas/, validated by jsonschema."""
    py = venv_python("schemas")
    if not py:
        return False
    p = subprocess.run([py, os.path.join(ROOT, "tests", "check_schemas.py"), OUT, "--min", "1" if only else "50"],
                       capture_output=True, text=True)
    print((p.stdout + p.stderr).strip())
    return p.returncode == 0
