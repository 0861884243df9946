"""The Python API (python/streamdrill): streamdrill.run on a drill that
passes, one that fails and one that is inconclusive; streamdrill.check on a
good and a broken drill; the classes' fields held to
reports/schemas/summary.schema.json.

Run by tests/run_scenarios.py (pytest-plugin) with the test virtualenv,
where `pip install ./python` put the package; STREAMDRILL_BIN names the
build's binary."""
import dataclasses
import json
import os

import pytest
import streamdrill

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = json.load(open(os.path.join(ROOT, "reports", "schemas", "summary.schema.json")))
PARCEL = os.path.join(ROOT, "scenarios", "parcel-restart.drill")


def names(cls, rename=None):
    return {(rename or {}).get(f.name, f.name) for f in dataclasses.fields(cls)}


def test_the_classes_follow_the_schema():
    defs = SCHEMA["$defs"]
    assert names(streamdrill.Summary) - {"exit_code", "run_dir", "raw"} == set(SCHEMA["properties"])
    assert names(streamdrill.Check, {"pass_": "pass"}) == set(SCHEMA["properties"]["checks"]["items"]["properties"])
    assert names(streamdrill.Sample) == set(defs["id"]["properties"])
    assert names(streamdrill.Bucket) == set(defs["bucket"]["properties"])
    assert names(streamdrill.Groups) == set(defs["groups"]["properties"])
    assert names(streamdrill.GroupSample) == set(defs["groups"]["properties"]["sample"]["items"]["properties"])


def test_run_a_pass(tmp_path):
    s = streamdrill.run(PARCEL, out=str(tmp_path))
    assert s.passed and s.exit_code == 0 and s.verdict == "pass", (s.verdict, s.message)
    assert s.counts["observed_unique"] == 120 and s.counts["duplicated"] == 0
    assert s.failed_checks == [] and s.checks and all(c.pass_ for c in s.checks)
    assert s.bucket("duplicated").total == 0
    assert s.run_dir == str(tmp_path / "parcel-restart")
    again = streamdrill.load(s.run_dir)
    assert again.raw == s.raw and again.counts == s.counts


def test_run_a_fail_names_both_kinds_of_copy(tmp_path):
    s = streamdrill.run(PARCEL, set={"mode": "at-least-once"}, out=str(tmp_path))
    assert s.failed and s.exit_code == 1, (s.verdict, s.message)
    assert "duplicated" in {c.name for c in s.failed_checks}
    dup = s.bucket("duplicated")
    assert dup.total > 0 and all(isinstance(x, streamdrill.Sample) for x in dup.sample)
    rerun, replayed = s.duplicates_by_cause()
    # the kill's re-run batch, written by both incarnations, each id sent once
    assert rerun and all(x.times_sent == 1 and "incarnation 1" in x.writers and "incarnation 2" in x.writers for x in rerun)
    # the drill's own replay: sent twice
    assert replayed and all(x.times_sent == 2 for x in replayed)


def test_run_an_inconclusive(tmp_path):
    drill = os.path.join(ROOT, "tests", "scenarios", "sink-missing-pipeline-exited.drill")
    s = streamdrill.run(drill, out=str(tmp_path))
    assert s.inconclusive and s.exit_code == 3, (s.verdict, s.message)
    assert s.reason == "sink-unreadable" and "never.db does not exist" in s.message


def test_run_a_broken_drill_raises(tmp_path):
    bad = tmp_path / "broken.drill"
    bad.write_text("source kafka topic=t\nevents parcel-scans\nproduce lots\n")
    with pytest.raises(streamdrill.StreamdrillError) as e:
        streamdrill.run(str(bad), out=str(tmp_path / "out"))
    assert e.value.exit_code == 2 and "broken.drill:3:" in e.value.stderr


def test_check(tmp_path):
    ok = streamdrill.check(PARCEL)
    assert ok.ok and ok.exit_code == 0 and ok.errors == []
    bad = tmp_path / "broken.drill"
    bad.write_text("source kafka topic=t\nevents parcel-scans\nproduce lots\n")
    r = streamdrill.check(str(bad))
    assert not r.ok and r.exit_code == 2 and any("broken.drill:3:" in e for e in r.errors), r.errors
    # a --set the drill does not use is refused, with the names it does use
    r = streamdrill.check(PARCEL, set={"moed": "at-least-once"})
    assert not r.ok and any("did you mean" in e and "mode" in e for e in r.errors), r.errors


def test_no_binary(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("STREAMDRILL_BIN", raising=False)
    with pytest.raises(streamdrill.StreamdrillError, match="streamdrill not found"):
        streamdrill.check(PARCEL)


def test_the_spark_listener_prints_what_a_drill_reads(monkeypatch):
    """streamdrill.spark's listener, on a stand-in for pyspark's listener class and its events (the real one runs
    in every PySpark drill): SD-READY by the query's name, SD-PROGRESS on one line, the exception and its cause."""
    import io
    import sys
    import types

    base = type("StreamingQueryListener", (), {})
    streaming = types.ModuleType("pyspark.sql.streaming")
    streaming.StreamingQueryListener = base
    for name, mod in (("pyspark", types.ModuleType("pyspark")), ("pyspark.sql", types.ModuleType("pyspark.sql")),
                      ("pyspark.sql.streaming", streaming)):
        monkeypatch.setitem(sys.modules, name, mod)
    import streamdrill.spark as sp

    monkeypatch.setattr(sp, "versions", lambda spark=None: f"spark={spark.version}" if getattr(spark, "version", None) else "")
    out, err = io.StringIO(), io.StringIO()
    lst = sp.listener(out, err)
    assert isinstance(lst, base)
    ev = types.SimpleNamespace
    lst.onQueryStarted(ev(name="orders", id="1b2c"))
    lst.onQueryStarted(ev(name=None, id="9f3e"))
    lst.onQueryProgress(ev(progress=ev(json='{"batchId": 3,\n "numInputRows": 40}')))
    # as PySpark's QueryTerminatedEvent: an id, no name
    lst.onQueryTerminated(ev(id="1b2c", exception=None))
    lst.onQueryTerminated(ev(id="1b2c", exception="[STREAM_FAILED] terminated with exception: Job aborted.\n"
                             "\tat org.apache...\nCaused by: org.apache.spark.SparkException: [STATE_STORE_COMMIT_VALIDATION_FAILED] x"))
    assert out.getvalue() == ('SD-READY query=orders\nSD-READY query=9f3e\nSD-PROGRESS {"batchId": 3,  "numInputRows": 40}\n')
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("StreamingQueryException: query 1b2c terminated: [STREAM_FAILED]")
    assert lines[1] == "Caused by: org.apache.spark.SparkException: [STATE_STORE_COMMIT_VALIDATION_FAILED] x"
    # the versions, named on the ready line when the session is known
    out = io.StringIO()
    sp.listener(out, err, spark=types.SimpleNamespace(version="4.2.0")).onQueryStarted(ev(name="orders", id="1b2c"))
    assert out.getvalue() == "SD-READY query=orders spark=4.2.0\n"
    registered = []
    spark = types.SimpleNamespace(streams=types.SimpleNamespace(addListener=registered.append))
    assert sp.watch(spark) is sp.watch(spark) and len(registered) == 1, "once per session"
