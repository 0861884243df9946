"""The pytest plugin (python/pytest_streamdrill) run by pytest itself on the
repository's drills and on drills made to fail, to be inconclusive and to
be broken: each must get its outcome (passed, failed, error), a failure its
failed checks and sample ids in the message, every item its run folder.

Run by tests/run_scenarios.py (pytest-plugin) with the test virtualenv,
where `pip install ./python` put the plugin; STREAMDRILL_BIN names the
build's binary."""
import os
import re
import shutil

import pytest

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRILLS = ("parcel-restart", "parcel-latest", "parcel-windows")


@pytest.fixture
def drills(pytester):
    for name in DRILLS:
        shutil.copy(os.path.join(ROOT, "scenarios", name + ".drill"), pytester.path / (name + ".drill"))
    text = open(os.path.join(ROOT, "scenarios", "parcel-restart.drill")).read()
    # an at-least-once pipeline held to exactly-once: duplicates
    (pytester.path / "weak.drill").write_text(text.replace("set        mode=exactly-once", "set        mode=at-least-once", 1))
    # a pipeline that cannot be started: inconclusive
    (pytester.path / "nostart.drill").write_text(re.sub(r"(?m)^pipeline .*$", "pipeline   /nonexistent/pipeline --x", text))
    # a drill with an error at line 3
    (pytester.path / "broken.drill").write_text("source kafka topic=t\nevents parcel-scans\nproduce lots\n")
    return pytester


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA",
                                         "--streamdrill-out", str(pytester.path / "out"), *args)


def test_outcomes(drills):
    r = run(drills)
    r.assert_outcomes(passed=len(DRILLS), failed=1, errors=2)
    out = r.stdout.str()
    # the failure names the failed check and sample ids with their copies and writers
    m = re.search(r"weak.drill: streamdrill exit 1 \(fail\).*?(?=\n_{3,}|\Z)", out, re.S)
    assert m, out[-3000:]
    failure = m.group(0)
    assert re.search(r"check duplicated: expected = 0, actual [1-9]", failure), failure
    # the copies the kill caused named apart from the harness's replays
    assert re.search(r"target\.duplicated \(\d+ in all\): written again by the pipeline: [0-9a-f]+-\d+ x2 \[incarnation", failure), failure
    assert re.search(r"sent again by the harness: [0-9a-f]+-\d+ x2 sent 2 times", failure), failure
    assert "streamdrill run folder: " + str(drills.path / "out" / "parcel-restart") in failure or \
           "streamdrill run folder: " in failure, failure
    # inconclusive and broken are errors, each with why
    assert re.search(r"nostart.drill: streamdrill exit 3 \(inconclusive\)", out), out[-3000:]
    assert re.search(r"broken.drill: streamdrill exit 2 \(bad usage or bad drill\)\n.*broken.drill:3:", out), out[-3000:]
    for name in DRILLS:
        assert re.search(rf"PASSED {name}.drill::{name}", out), out[-3000:]


def test_set_and_junit(drills):
    # --streamdrill-set reaches every drill: the passing one made weak fails too
    xml = drills.path / "junit.xml"
    r = run(drills, "parcel-restart.drill", "--streamdrill-set", "mode=at-least-once", f"--junitxml={xml}")
    r.assert_outcomes(failed=1)
    text = xml.read_text()
    assert 'name="streamdrill_run_dir"' in text and "parcel-restart" in text, text[:2000]


def test_missing_binary(drills, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("STREAMDRILL_BIN", raising=False)
    r = run(drills, "parcel-restart.drill")
    assert r.ret != 0
    assert "streamdrill not found" in r.stdout.str() + r.stderr.str()
