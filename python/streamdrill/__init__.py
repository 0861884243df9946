"""streamdrill from Python: run a drill and get its verdict as typed
objects, or check one without running it.

    import streamdrill
    s = streamdrill.run("drills/orders.drill", set={"mode": "at-least-once"})
    if not s.passed:
        for c in s.failed_checks:
            print(c.name, c.expected, c.actual)
        rerun, replayed = s.duplicates_by_cause()

`run` calls the `streamdrill` binary (`streamdrill run --json`): the
binary is $STREAMDRILL_BIN, else `streamdrill` on PATH, unless `binary=`
names one. The classes follow reports/schemas/summary.schema.json; a test
(tests/test_python_api.py) holds their fields to the schema's."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = ["run", "check", "load", "Summary", "Check", "Sample", "Bucket", "GroupSample", "Groups", "CheckResult",
           "StreamdrillError", "EXIT_NAMES"]

EXIT_NAMES = {0: "pass", 1: "fail", 2: "bad usage or bad drill", 3: "inconclusive", 4: "harness error", 130: "interrupted"}


class StreamdrillError(Exception):
    """The binary gave no summary: a drill that does not parse, a bad
    option, a binary not found, a run past its timeout."""

    def __init__(self, message: str, exit_code: Optional[int] = None, stderr: str = ""):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr


def _build(cls, d: Mapping[str, Any]):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class Check:
    """One check of the verdict (summary.json `checks[]`)."""
    name: str
    pass_: bool
    expected: str
    actual: str
    detail: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Check:
        return cls(name=d["name"], pass_=bool(d["pass"]), expected=d.get("expected", ""), actual=d.get("actual", ""),
                   detail=d.get("detail", ""))


@dataclass
class Sample:
    """One id of an anomaly bucket ($defs/id): how often the sink holds it,
    which incarnations and batches wrote it, how often the harness sent it."""
    id: str
    copies: int
    writers: Optional[str] = None
    times_sent: Optional[int] = None
    partition: Optional[int] = None
    offset: Optional[int] = None
    sent_at: Optional[str] = None
    after_fault: Optional[str] = None

    @property
    def replayed_by_harness(self) -> bool:
        """The drill sent it more than once (a replay step): its copies
        may be the replay's, not the pipeline's."""
        return (self.times_sent or 1) > 1


@dataclass
class Bucket:
    """An anomaly bucket of one sink ($defs/bucket): its total and the
    first ids."""
    total: int
    sample: List[Sample] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Bucket:
        return cls(total=int(d.get("total", 0)), sample=[_build(Sample, s) for s in d.get("sample", [])])


@dataclass
class GroupSample:
    """One wrong group of a result model ($defs/groups sample)."""
    window_start: str
    keys: str
    buckets: str
    detail: str


@dataclass
class Groups:
    """The wrong groups of a result model ($defs/groups)."""
    total: int
    sample: List[GroupSample] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Groups:
        return cls(total=int(d.get("total", 0)), sample=[_build(GroupSample, s) for s in d.get("sample", [])])


@dataclass
class Summary:
    """A run's summary.json. The fields are the schema's top-level
    properties (checks and anomalies typed); `exit_code` and `run_dir` say
    how the binary ended and where the run folder is."""
    schema_version: int
    scenario: str
    verdict: str
    reason: str = ""
    message: str = ""
    seed: Any = None
    counts: Dict[str, Any] = field(default_factory=dict)
    checks: List[Check] = field(default_factory=list)
    faults: List[Dict[str, Any]] = field(default_factory=list)
    profile: str = ""
    tag: str = ""
    topic: str = ""
    brokers: str = ""
    broker_kind: str = ""
    producer: Dict[str, Any] = field(default_factory=dict)
    topic_config: Dict[str, Any] = field(default_factory=dict)
    file: str = ""
    started_at: str = ""
    duration_ms: int = 0
    harness_version: str = ""
    harness: Dict[str, Any] = field(default_factory=dict)
    complete: bool = False
    other_sinks: List[Dict[str, Any]] = field(default_factory=list)
    anomalies: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    not_judged: Any = None
    warnings: List[Dict[str, Any]] = field(default_factory=list)
    missing: Any = None
    incarnations: List[Dict[str, Any]] = field(default_factory=list)
    pipeline_account: Any = None
    steps: List[Dict[str, Any]] = field(default_factory=list)
    reproduce: Any = None
    exit_code: Optional[int] = None
    run_dir: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], exit_code: Optional[int] = None, run_dir: Optional[str] = None) -> Summary:
        s = _build(cls, {k: v for k, v in d.items() if k not in ("checks", "anomalies", "exit_code", "run_dir", "raw")})
        s.checks = [Check.from_json(c) for c in d.get("checks", [])]
        s.anomalies = {sink: {name: Groups.from_json(b) if name == "groups" else Bucket.from_json(b) for name, b in buckets.items()}
                       for sink, buckets in d.get("anomalies", {}).items()}
        s.exit_code, s.run_dir, s.raw = exit_code, run_dir, dict(d)
        return s

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def failed(self) -> bool:
        return self.verdict == "fail"

    @property
    def inconclusive(self) -> bool:
        return self.verdict == "inconclusive"

    @property
    def failed_checks(self) -> List[Check]:
        return [c for c in self.checks if not c.pass_]

    def bucket(self, name: str, sink: str = "target") -> Bucket:
        """One anomaly bucket (duplicated, lost, unexpected, ...); empty when the run found none."""
        b = self.anomalies.get(sink, {}).get(name)
        return b if isinstance(b, Bucket) else Bucket(total=0)

    def duplicates_by_cause(self, sink: str = "target") -> Tuple[List[Sample], List[Sample]]:
        """The sampled duplicates split in two: those the pipeline wrote
        again though the harness sent them once (a re-run batch), and those
        the harness itself sent more than once (a replay)."""
        dups = self.bucket("duplicated", sink).sample
        return [s for s in dups if not s.replayed_by_harness], [s for s in dups if s.replayed_by_harness]


@dataclass
class CheckResult:
    """`streamdrill check`: ok, or the errors it named (file:line: ...)."""
    ok: bool
    exit_code: int
    errors: List[str] = field(default_factory=list)


def _binary(binary: Optional[str]) -> str:
    b = binary or os.environ.get("STREAMDRILL_BIN") or shutil.which("streamdrill")
    if not b:
        raise StreamdrillError("streamdrill not found: pass binary= or set STREAMDRILL_BIN")
    return b


def _sets(set: Optional[Mapping[str, Any]]) -> List[str]:
    out: List[str] = []
    for k, v in (set or {}).items():
        out += ["--set", f"{k}={v}"]
    return out


def _communicate(cmd: List[str], timeout: Optional[float]) -> Tuple[int, str, str]:
    # its own process group, so a timeout reaches the pipeline too
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        raise StreamdrillError(f"streamdrill did not finish within {timeout:.0f}s: {' '.join(cmd)}", None, err) from None
    return p.returncode, out, err


def load(run_dir: str) -> Summary:
    """The summary of a run folder already written."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        return Summary.from_json(json.load(f), run_dir=os.path.abspath(run_dir))


def run(path: str, set: Optional[Mapping[str, Any]] = None, brokers: Optional[str] = None, out: Optional[str] = None,
        args: Iterable[str] = (), binary: Optional[str] = None, timeout: Optional[float] = None) -> Summary:
    """Run one drill; its Summary whatever the verdict (pass, fail or
    inconclusive: see .verdict and .exit_code). StreamdrillError when the
    binary wrote no summary (a drill that does not parse, a bad option)."""
    out = os.path.abspath(out or "streamdrill-out")
    cmd = [_binary(binary), "run", str(path), "--out", out, "--quiet", "--json"] + _sets(set)
    if brokers:
        cmd += ["--brokers", brokers]
    cmd += list(args)
    rc, stdout, stderr = _communicate(cmd, timeout)
    run_dir = None
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("report: "):
            run_dir = os.path.dirname(line[len("report: "):])
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = "\n".join(stderr.strip().splitlines()[-10:])
        raise StreamdrillError(f"streamdrill exit {rc} ({EXIT_NAMES.get(rc, 'unknown')}): {tail}", rc, stderr)
    return Summary.from_json(json.loads(lines[-1]), exit_code=rc, run_dir=run_dir)


def check(path: str, set: Optional[Mapping[str, Any]] = None, binary: Optional[str] = None) -> CheckResult:
    """Check one drill without running it: every error `streamdrill check` names."""
    rc, _, stderr = _communicate([_binary(binary), "check", str(path)] + _sets(set), 120)
    errors = [ln for ln in stderr.splitlines() if ln.strip()] if rc else []
    return CheckResult(ok=rc == 0, exit_code=rc, errors=errors)
