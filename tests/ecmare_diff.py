#!/usr/bin/env python3
"""The ECMA-262 pattern reader (harness/format/ecmare.c) against Node's RegExp.

    tests/ecmare_diff.py [--probe build/tests/ecmare_probe] [--node node]
                         [--count 5000] [--seed 1] [--seeds 1,2,3] [--show 20] [--brief]

Random patterns from a grammar of what docs/formats.md says a JSON Schema
`pattern` may hold (literals, non-ASCII and astral ones too, the escapes,
classes, groups, named groups and references, lookaround, quantifiers,
Unicode properties), some of them then damaged by a random edit so that
the edges of the syntax are probed too, each with subjects made to match
it and to miss it. Each [pattern, subject] goes to ecmare_probe (the C
reader) and to one long-lived node process that answers with
`new RegExp(pattern, 'u').test(subject)`; the answers are compared:

- both compile: the same answer (a match ecmare stops at a bound is left
  out, counted as unjudged);
- ecmare refuses: fine when node refuses too, or when the refusal is one
  docs/formats.md lists as past what the harness checks (counted apart);
- node refuses and ecmare compiles: a disagreement, except a script name
  ECMA-262 spells otherwise, which docs/formats.md says is matched as
  PCRE2 matches it (counted apart).

Prints a summary and the first --show disagreements, each made smaller
while it stays one; exits 1 on any disagreement. The same seed and count
give the same cases.
"""
import argparse
import json
import os
import random
import re
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# node's side: one RegExp per pattern, kept while the pattern repeats
NODE_JS = r"""
const rl = require('readline').createInterface({input: process.stdin, terminal: false});
let last = null, re = null, err = null;
rl.on('line', (line) => {
  const [p, s] = JSON.parse(line);
  if (p !== last) {
    last = p; re = null; err = null;
    try { re = new RegExp(p, 'u'); } catch (e) { err = String(e.message); }
  }
  let out;
  if (!re) out = {r: 'syntax error', err};
  else try { out = {r: re.test(s)}; } catch (e) { out = {r: 'crashed', err: String(e.message)}; }
  process.stdout.write(JSON.stringify(out) + '\n');
});
"""

# Refusals docs/formats.md names as past what the harness checks, by a
# word of ecmare's message: ECMA-262 has them, the harness does not follow.
DOCUMENTED = [
    ("\\S inside a class", "\\S inside a class"),
    ("lookbehind", "a lookbehind of varying length"),
    ("General_Category values and Script= only", "a binary Unicode property"),
    ("backreference above \\9", "a backreference above \\9"),
    ("refers to a group inside a quantifier that repeats it", "a backreference into a repeated group"),
    ("lone surrogate", "a lone surrogate"),
    ("a script newer than PCRE2's Unicode tables", "a script newer than PCRE2's Unicode tables"),
    ("past what the harness compiles", "a bound"),
    ("more than the 4096", "a bound"),
]

# group names: ASCII, $, non-ASCII identifiers, \u escapes, and some no identifier is
NAMES = ["a", "b", "x1", "Year", "_n", "$d", "h$", "é", "π2", "\\u0061b", "a\\u{62}", "x\u200d", "1a", "a-b", "\u00b7x"]

# ---- the grammar --------------------------------------------------------

# characters a literal or a subject is made of: ASCII, non-ASCII, astral,
# white space and line terminators ECMA-262 names, NEL (which it does not)
LIT_ASCII = "abcxyzABZ019_ -,:;=!<>@#%&'\"~`/"
LIT_OTHER = ["é", "ß", "α", "Ω", "ж", "中", "ك", "١", "٣", "\u00a0", "\u2028", "\u2029", "\ufeff", "\u0085", "\u2003",
             "\U0001F600", "\U0001D49C", "\U00010437", "\U0001F64F", "\u0000", "\t", "\n", "\r", "\v", "\f", "\u212a", "\u017f"]
SYNTAX = "^$\\.*+?()[]{}|/"
PROPS = ["L", "Lu", "Ll", "Letter", "Uppercase_Letter", "Lt", "Lm", "Lo", "M", "Mn", "N", "Nd", "digit", "Nl", "P", "punct", "Pd", "S",
         "Sm", "Sc", "Z", "Zs", "Zl", "C", "Cc", "Cf", "Co", "Cn", "LC", "gc=Lu", "General_Category=N", "General_Category=Letter",
         "Script=Greek", "sc=Latin", "Script=Cyrillic", "sc=Han", "Script_Extensions=Arabic", "scx=Grek", "Script=Common",
         "sc=Zyyy", "Script=Inherited", "scx=Deva", "Script=Hiragana", "sc=Kana", "Script_Extensions=Latin", "scx=Zinh",
         "Nonspacing_Mark", "Cased_Letter", "Other", "Unassigned", "Private_Use", "Surrogate", "Format", "Control", "Space_Separator",
         "Other_Symbol", "Titlecase_Letter", "Letter_Number", "gc=Cn", "General_Category=Zl",
         # scripts newer than the Unicode 14 of Debian 12's PCRE2 (Unicode 15 to 17)
         "Script=Kawi", "sc=Nagm", "Script=Garay", "scx=Tols",
         # ECMA-262's, and not followed: binary properties; not ECMA-262 at all: the rest
         "Alphabetic", "ASCII", "Any", "White_Space", "Emoji", "Lowercase",
         "Foo", "Script=Foo", "Script=greek", "Script=GREEK", "sc=latn", "Xan", "gc=Greek", "Script", "L=", "Letter ", "Is_Greek"]
# what each property name is likely to match, for the subjects
PROP_SAMPLES = "aZé中ΩжÀ1١\u00a0\u2028 -+$\U0001F600\U0001D49C\u0000\u0300"


class Gen:
    """One random pattern as text, and a function that makes subjects it
    is likely to match."""

    def __init__(self, rng):
        self.rng = rng
        self.groups = 0
        self.names = []

    def pattern(self):
        self.groups, self.names = 0, []
        return self.disjunction(self.rng.choice([1, 2, 2, 3]))

    # each node is (text, maker): maker(rng, caps) returns a string the node
    # would likely match, caps the groups' texts so far
    def disjunction(self, depth):
        n = self.rng.choice([1, 1, 1, 2, 2, 3])
        alts = [self.alternative(depth) for _ in range(n)]

        def make(rng, caps):
            return rng.choice(alts)[1](rng, caps)
        return ("|".join(a[0] for a in alts), make)

    def alternative(self, depth):
        terms = [self.term(depth) for _ in range(self.rng.randint(0, 3 if depth < 3 else 2))]

        def make(rng, caps):
            return "".join(t[1](rng, caps) for t in terms)
        return ("".join(t[0] for t in terms), make)

    def term(self, depth):
        r = self.rng.random()
        if r < 0.08:
            return self.assertion(depth)
        atom = self.atom(depth)
        if self.rng.random() < 0.3:
            return self.quantified(atom)
        return atom

    def assertion(self, depth):
        r = self.rng
        k = r.choice(["^", "$", "\\b", "\\B", "(?=", "(?!", "(?<=", "(?<!"])
        if not k.startswith("("):
            return (k, lambda rng, caps: "")
        if k in ("(?<=", "(?<!"):
            inner = self.fixed(depth)
        else:
            inner = self.disjunction(depth - 1) if depth > 0 else self.atom(0)
        look = k == "(?="

        def make(rng, caps):
            return inner[1](rng, caps) if look and rng.random() < 0.5 else ""
        return (k + inner[0] + ")", make)

    def fixed(self, depth):
        """What a lookbehind holds: mostly of one length, sometimes not."""
        parts = [self.rng.choice([self.char_atom, self.char_atom, self.cls])() for _ in range(self.rng.randint(1, 3))]
        text = "".join(p[0] for p in parts)
        x = self.rng.random()
        if x < 0.15:
            text = "(" + text + ")"
            self.groups += 1
        elif x < 0.3:
            text = text + "|" + "".join(self.char_atom()[0] for _ in parts)
        if self.rng.random() < 0.15:
            text += self.rng.choice(["+", "*", "?", "{2}", "{1,2}", "|xy", "\\1", "(a)\\1"])
        return (text, lambda rng, caps: "".join(p[1](rng, caps) for p in parts))

    def quantified(self, atom):
        r = self.rng
        q = r.choice(["*", "+", "?", "{n}", "{n,}", "{n,m}"])
        lo, hi = r.randint(0, 3), None
        if q == "*":
            lo, hi = 0, 3
        elif q == "+":
            lo, hi = 1, 3
        elif q == "?":
            lo, hi = 0, 1
        elif q == "{n}":
            q, hi = f"{{{lo}}}", lo
        elif q == "{n,}":
            q, hi = f"{{{lo},}}", lo + 2
        else:
            hi = lo + r.randint(0, 3)
            q = f"{{{lo},{hi}}}"
        if r.random() < 0.02:
            q = r.choice(["{70000}", "{1,70000}", "{4294967296}"])
        if r.random() < 0.25:
            q += "?"

        def make(rng, caps):
            return "".join(atom[1](rng, caps) for _ in range(rng.randint(lo, hi)))
        return (atom[0] + q, make)

    def atom(self, depth):
        r = self.rng.random()
        if depth > 0 and r < 0.22:
            return self.group(depth)
        if r < 0.27 and (self.groups or self.names):
            return self.backref()
        if r < 0.42:
            return self.cls()
        return self.char_atom()

    def group(self, depth):
        r = self.rng
        kind = r.choice(["(", "(", "(?:", "(?<"])
        inner_name = None
        if kind == "(?<":
            inner_name = r.choice(NAMES)
            if inner_name in self.names and r.random() < 0.8:
                inner_name = inner_name + str(len(self.names))
            self.names.append(inner_name)
            kind = "(?<" + inner_name + ">"
        if kind != "(?:":
            self.groups += 1
        index = self.groups
        inner = self.disjunction(depth - 1)
        capturing = kind != "(?:"

        def make(rng, caps):
            s = inner[1](rng, caps)
            if capturing:
                caps[index] = s
                if inner_name:
                    caps[inner_name] = s
            return s
        return (kind + inner[0] + ")", make)

    def backref(self):
        r = self.rng
        if self.names and r.random() < 0.4:
            name = r.choice(self.names)
            return (f"\\k<{name}>", lambda rng, caps: caps.get(name, ""))
        n = r.randint(1, max(1, min(9, self.groups + (1 if r.random() < 0.1 else 0))))
        if r.random() < 0.03:
            n = 10 + r.randint(0, 2)
        return (f"\\{n}", lambda rng, caps: caps.get(n, ""))

    def char_atom(self):
        """One character's worth: a literal, an escape, `.` or a property."""
        r = self.rng
        x = r.random()
        if x < 0.35:
            c = r.choice(LIT_ASCII)
            return (c, lambda rng, caps: c)
        if x < 0.45:
            c = r.choice(LIT_OTHER)
            return (c, lambda rng, caps: c)
        if x < 0.52:
            c = r.choice(SYNTAX)
            return ("\\" + c, lambda rng, caps: c)
        if x < 0.58:
            return (".", lambda rng, caps: rng.choice("a\n é\U0001F600\u2028\r"))
        if x < 0.66:
            p = r.choice(PROPS)
            e = r.choice("pP")
            return (f"\\{e}{{{p}}}", lambda rng, caps: rng.choice(PROP_SAMPLES))
        return self.escape(in_class=False)

    def escape(self, in_class):
        r = self.rng
        k = r.choice(["d", "D", "w", "W", "s", "S", "t", "n", "v", "f", "r", "0", "c", "x", "u", "u", "U", "U"])
        samples = {"d": "09", "D": "a١ ", "w": "a_Z9", "W": "é- \n", "s": " \t\u00a0\ufeff\u2028\n\u3000", "S": "a\u0085é",
                   "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", "0": "\0"}
        if k in samples:
            s = samples[k]
            return ("\\" + k, lambda rng, caps: rng.choice(s))
        if k == "c":
            letter = r.choice("AaJjMmZz")
            ch = chr(ord(letter) & 0x1F)
            return ("\\c" + letter, lambda rng, caps: ch)
        cp = r.choice([0x41, 0x7A, 0x20, 0x0A, 0xE9, 0x3A9, 0x2028, 0xFEFF, 0x1F600, 0x1D49C, 0x10437, 0xFFFF, 0x10FFFF,
                       r.randint(0x80, 0x2FFF), r.randint(0x10000, 0x1FFFF)])
        ch = chr(cp)
        if k == "x" and cp <= 0xFF:
            return (f"\\x{cp:02X}" if r.random() < 0.5 else f"\\x{cp:02x}", lambda rng, caps: ch)
        if k in ("x", "u"):
            if cp > 0xFFFF:
                v = cp - 0x10000
                hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
                text = f"\\u{hi:04X}\\u{lo:04x}"
                if r.random() < 0.05:
                    text = f"\\u{hi:04X}"  # a lone surrogate
            else:
                text = f"\\u{cp:04X}"
            return (text, lambda rng, caps: ch)
        zeros = "0" * r.choice([0, 0, 0, 1, 3])
        return (f"\\u{{{zeros}{cp:X}}}", lambda rng, caps: ch)

    def cls(self):
        r = self.rng
        if r.random() < 0.04:
            text = r.choice(["[]", "[^]"])
            return (text, lambda rng, caps: rng.choice("a\n\U0001F600"))
        neg = r.random() < 0.25
        items = [self.class_item() for _ in range(r.randint(1, 4))]
        text = "[" + ("^" if neg else "") + "".join(i[0] for i in items) + "]"
        if neg:
            return (text, lambda rng, caps: rng.choice("aé\n\U0001F600 9-"))
        return (text, lambda rng, caps: rng.choice(items)[1](rng, caps))

    def class_item(self):
        r = self.rng
        x = r.random()
        if x < 0.3:
            c = r.choice(LIT_ASCII.replace("-", "") + "[$.*+?(){}|^:=" + "".join(LIT_OTHER[:16]))
            return (c, lambda rng, caps: c)
        if x < 0.5:
            lo, hi = sorted([r.choice("aAz0 !é中\U0001F600"), r.choice("fZz9~ω中\U0001F64F")])
            if r.random() < 0.05:
                lo, hi = hi, lo  # out of order: no class at all
            return (lo + "-" + hi, lambda rng, caps: in_range(rng, lo, hi))
        if x < 0.55:
            # a range between escapes, or a class escape where a range needs a character
            a, b = self.escape(True), self.escape(True)
            return (a[0] + "-" + b[0], lambda rng, caps: a[1](rng, caps))
        if x < 0.7:
            e = r.choice(["\\-", "\\]", "\\[", "\\\\", "\\^", "\\b", "\\/", "\\.", "\\B", "\\k"])
            return (e, lambda rng, caps: {"\\b": "\b"}.get(e, e[1]))
        if x < 0.78:
            p = r.choice(PROPS[:30])
            return (f"\\{r.choice('pP')}{{{p}}}", lambda rng, caps: rng.choice(PROP_SAMPLES))
        if x < 0.82:
            e = r.choice(["-", "--a", "\\c_", "\\cJ", "a-b-c", "^", "\\u{10FFFF}-\\u{10FFFF}", "\\x00-\\x{", "\\0"])
            return (e, lambda rng, caps: rng.choice("-a\n^\0"))
        return self.escape(True)


# the pieces of token soup: patterns of random syntax, mostly no ECMA-262
# at all, to hold the two readers' refusals to each other
SOUP = ["(", ")", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<a>", "(?<$b>", "\\k<a>", "\\k<", "[", "]", "[^", "-", "^", "$", "|", "*",
        "+", "?", "{", "}", "{1}", "{0,}", "{1,2}", "{2,1}", ",", "\\", "\\1", "\\2", "\\0", "\\00", "\\b", "\\B", "\\d",
        "\\S", "\\w", "\\p{L}", "\\P{", "\\p{Lu}", "\\u{", "\\u", "D83D", "\\uDE00", "\\x", "41", "\\c", "J", "a", "b",
        "é", "\U0001F600", ":", "=", "!", "<", ">", ".", "/", "\\-", "\\/", "\\]", "\\{", "\n", "\u2028", "\\k", "\\q"]


def soup(rng):
    """A pattern of random tokens, and a maker of subjects from its letters."""
    text = "".join(rng.choice(SOUP) for _ in range(rng.randint(1, 8)))
    letters = [ch for ch in text if ch.isalnum() or ord(ch) > 0x7F] or ["a"]

    def make(r, caps):
        return "".join(r.choice(letters) for _ in range(r.randint(0, 4)))
    return text, make


def in_range(rng, lo, hi):
    """A code point from lo to hi (either order), never a surrogate."""
    a, b = sorted([ord(lo), ord(hi)])
    cp = rng.randint(a, b)
    return chr(cp if not 0xD800 <= cp <= 0xDFFF else a)


def damage(rng, text):
    """A random edit to a pattern's text: a character in, out or doubled."""
    cps = list(text)
    ops = rng.randint(1, 2)
    for _ in range(ops):
        i = rng.randint(0, len(cps))
        op = rng.random()
        if op < 0.5:
            cps.insert(i, rng.choice(SYNTAX + "-:=!<>,0123456789kpPuxcdDsSwWbB" + "é\U0001F600"))
        elif cps and op < 0.8:
            del cps[min(i, len(cps) - 1)]
        elif cps:
            j = min(i, len(cps) - 1)
            cps.insert(j, cps[j])
    return "".join(cps)


def subjects(rng, text, make, n):
    """n subjects for a pattern: made to match it, those edited, random ones."""
    out = []
    pool = [c for c in text if c not in "\\()[]{}?*+|^$"] + list("a1 _\n") + LIT_OTHER
    for k in range(n):
        x = k % 4
        try:
            s = make(rng, {})
        except (ValueError, IndexError):
            s = ""
        if x == 1:
            s = rng.choice(["", "a", "\n", " ", "\U0001F600", "é"]) + s + rng.choice(["", "b", "\n", "\u2028", "!"])
        elif x == 2 and s:
            cs = list(s)
            i = rng.randrange(len(cs))
            if rng.random() < 0.5:
                del cs[i]
            else:
                cs[i] = rng.choice(pool)
            s = "".join(cs)
        elif x == 3:
            s = "".join(rng.choice(pool) for _ in range(rng.randint(0, 8)))
        out.append(s[:40])
    return out


def generate(seed, count, per):
    rng = random.Random(seed)
    gen = Gen(rng)
    cases = []
    while len(cases) < count:
        if rng.random() < 0.12:
            text, make = soup(rng)
        else:
            text, make = gen.pattern()
            if rng.random() < 0.25:
                text = damage(rng, text)
        for s in subjects(rng, text, make, per):
            cases.append((text, s))
    return cases[:count]


# ---- the two engines -----------------------------------------------------

class Engine:
    """A process answering one JSON line per JSON line, with a time limit
    per answer (node has no backtracking bound: a runaway is restarted)."""

    def __init__(self, argv, timeout):
        self.argv, self.timeout, self.proc, self.buf = argv, timeout, None, b""

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf = b""

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def ask(self, pattern, subject):
        if not self.proc:
            self.start()
        line = json.dumps([pattern, subject]).encode() + b"\n"
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return {"r": "crashed"}
        deadline = time.monotonic() + self.timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.stop()
                return {"r": "timeout"}
            chunk = os.read(fd, 65536)
            if not chunk:
                self.stop()
                return {"r": "crashed"}
            self.buf += chunk
        out, self.buf = self.buf.split(b"\n", 1)
        return json.loads(out)


def documented(err):
    for word, name in DOCUMENTED:
        if word in err:
            return name
    return None


SCRIPT_KEYS = ("Script=", "sc=", "Script_Extensions=", "scx=")


PROPERTY = re.compile(r"\\[pP]\{[^}]*\}")


def tables_differ(probe, node, pattern, subject):
    """Whether a property of the pattern answers differently for a code
    point of the subject: the two read different Unicode versions (PCRE2's
    tables and node's ICU), which docs/formats.md says."""
    for prop in set(PROPERTY.findall(pattern)):
        for ch in set(subject):
            if probe.ask(prop, ch)["r"] != node.ask(prop, ch)["r"]:
                return True
    return False


def judge(pattern, c, n):
    """(outcome, detail): outcome 'agree', 'unjudged', 'node-timeout',
    'documented' (a refusal docs/formats.md names, or a script name PCRE2
    reads loosely), or a disagreement: 'answer', 'accepted-invalid',
    'refused-valid', 'refused-undocumented', or 'message-not-utf8' (a
    refusal whose words are not UTF-8, which the reports could not hold)."""
    cr, nr = c["r"], n["r"]
    if cr in ("crashed", "timeout", "bad-input", "bad-output"):
        return "probe-failed", cr
    if nr in ("timeout", "crashed") and not (cr == "refused" and documented(c["err"])):
        return "node-timeout", nr
    if cr == "refused" and c.get("not_utf8"):
        return "message-not-utf8", c["err"]
    if cr == "refused":
        if nr == "syntax error":
            return ("agree", "both refuse" if c["kind"] == "not-ecma" else "both refuse, ecmare as unsupported")
        name = documented(c["err"]) if c["kind"] == "unsupported" else None
        if name:
            return "documented", name
        return ("refused-valid" if c["kind"] == "not-ecma" else "refused-undocumented"), c["err"]
    if nr == "syntax error":
        if "Invalid property name" in n.get("err", "") and any(k in pattern for k in SCRIPT_KEYS):
            return "documented", "a script name ECMA-262 spells otherwise"
        return "accepted-invalid", n.get("err", "")
    if cr == "unjudged":
        return "unjudged", c.get("why", "")
    if cr != nr:
        return "answer", f"ecmare {cr}, node {nr}"
    return "agree", "same answer"


DISAGREE = ("answer", "accepted-invalid", "refused-valid", "refused-undocumented", "message-not-utf8", "probe-failed")


def ask_both(probe, node, p, s):
    c = probe.ask(p, s)
    n = node.ask(p, s)
    return judge(p, c, n)


def shrink(probe, node, p, s, kind):
    """p and s made smaller while the pair is still a disagreement of the
    same kind: spans of code points taken out, halves first, then
    shorter ones down to one."""
    def still(pp, ss):
        return ask_both(probe, node, pp, ss)[0] == kind

    def cut(text, ok):
        size = max(1, len(text) // 2)
        while size >= 1:
            i = 0
            while i < len(text):
                t = text[:i] + text[i + size:]
                if ok(t):
                    text = t
                else:
                    i += 1
            size //= 2
        return text
    p = cut(p, lambda t: still(t, s))
    if kind == "answer":
        s = cut(s, lambda t: still(p, t))
    return p, s


def signature(kind, detail):
    """What a disagreement is about, for showing one of each: ecmare's
    refusal or node's complaint without the pattern, or the kind."""
    if kind == "accepted-invalid":
        return kind, detail.rsplit("/u: ", 1)[-1]
    if kind in ("refused-valid", "refused-undocumented"):
        return kind, re.sub(r"\\([pPu])\{[^}]*\}|\\u[0-9A-Fa-f]{4}", r"\\\1{...}", re.sub(r"\d+", "N", detail))
    return kind, ""


def run(args, seed):
    cases = generate(seed, args.count, args.per)
    probe = Engine([args.probe], 30)
    node = Engine([args.node, "-e", NODE_JS], args.node_timeout)
    tally, kinds, found, sigs = {}, {}, [], {}
    seen = set()
    patterns, node_ok = set(), set()
    for p, s in cases:
        c = probe.ask(p, s)
        n = node.ask(p, s)
        outcome, detail = judge(p, c, n)
        if outcome == "answer" and PROPERTY.search(p) and tables_differ(probe, node, p, s):
            outcome, detail = "documented", "a code point the two Unicode versions read differently"
        patterns.add(p)
        if n["r"] != "syntax error":
            node_ok.add(p)
        tally[outcome] = tally.get(outcome, 0) + 1
        if outcome in ("documented", "unjudged") or (outcome == "agree" and detail.startswith("both refuse")):
            key = f"{outcome}: {detail}"
            kinds[key] = kinds.get(key, 0) + 1
        if outcome == "agree" and detail == "same answer":
            kinds["match" if c["r"] else "no match"] = kinds.get("match" if c["r"] else "no match", 0) + 1
        if outcome in DISAGREE:
            sig = signature(outcome, detail)
            sigs[sig] = sigs.get(sig, 0) + 1
            key = (outcome, p) if outcome != "answer" else (outcome, p, s)
            if key not in seen:
                seen.add(key)
                found.append((outcome, p, s, detail, c, n))
    return cases, tally, kinds, found, probe, node, patterns, node_ok, sigs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", default=os.path.join(ROOT, "build", "tests", "ecmare_probe"))
    ap.add_argument("--node", default="node")
    ap.add_argument("--count", type=int, default=5000, help="cases (pattern and subject) per seed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", help="several seeds, comma-separated (instead of --seed)")
    ap.add_argument("--per", type=int, default=4, help="subjects per pattern")
    ap.add_argument("--show", type=int, default=20, help="disagreements shown (made smaller)")
    ap.add_argument("--node-timeout", type=float, default=2.0, help="seconds node may take on one case")
    ap.add_argument("--brief", action="store_true", help="a line per seed and the disagreements, not the tallies")
    args = ap.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed]
    t0 = time.monotonic()
    total, all_found, shown = {}, [], set()
    for seed in seeds:
        cases, tally, kinds, found, probe, node, patterns, node_ok, sigs = run(args, seed)
        bad = sum(v for k, v in tally.items() if k in DISAGREE)
        print(f"ecmare-diff: seed {seed}: {len(cases)} cases, {len(patterns)} patterns ({len(node_ok)} node compiles): "
              f"{tally.get('agree', 0)} agree, {bad} disagree, {tally.get('documented', 0)} refused as documented, "
              f"{tally.get('unjudged', 0)} unjudged, {tally.get('node-timeout', 0)} node gave no answer")
        for k in sorted(kinds) if not args.brief else []:
            print(f"  {kinds[k]:6d}  {k}")
        for k in DISAGREE:
            if tally.get(k):
                print(f"  {tally[k]:6d}  DISAGREE {k} ({sum(1 for f in found if f[0] == k)} distinct)")
                for sig, v in sorted(sigs.items(), key=lambda kv: -kv[1]):
                    if sig[0] == k and sig[1]:
                        print(f"  {v:6d}      {sig[1]}")
        for k, v in tally.items():
            total[k] = total.get(k, 0) + v
        for f in found:
            sig = signature(f[0], f[3])
            if len(all_found) < args.show and (sig not in shown or sig[0] == "answer"):
                shown.add(sig)
                kind, p, s = f[0], f[1], f[2]
                sp, ss = shrink(probe, node, p, s, kind) if kind != "probe-failed" else (p, s)
                if (kind, sp) in shown:
                    continue
                shown.add((kind, sp))
                c, n = probe.ask(sp, ss), node.ask(sp, ss)
                all_found.append((seed, kind, p, s, sp, ss, judge(sp, c, n)[1]))
        probe.stop()
        node.stop()
    bad = sum(v for k, v in total.items() if k in DISAGREE)
    for seed, kind, p, s, sp, ss, detail in all_found:
        print(f"DISAGREE {kind} (seed {seed}): pattern {json.dumps(sp)} subject {json.dumps(ss)}")
        print(f"    {detail}")
        if (sp, ss) != (p, s):
            print(f"    (from pattern {json.dumps(p)} subject {json.dumps(s)})")
    print(f"ecmare-diff: {len(seeds)} seed{'' if len(seeds) == 1 else 's'}, {sum(total.values())} cases "
          f"in {time.monotonic() - t0:.1f} s: {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
