"""Collect streamdrill drills (*.drill) as pytest items and run each with
`streamdrill run`. The drill runs in the item's setup, so a drill that
could not be judged (exit 3: inconclusive; 2: a bad drill; 4: a harness
error) is reported as an error, and one whose checks failed (exit 1) as a
failure whose message lists the failed checks and sample ids from the run's
summary.json."""
import fnmatch
import json
import os
import shutil
import signal
import subprocess

import pytest

EXIT_NAMES = {0: "pass", 1: "fail", 2: "bad usage or bad drill", 3: "inconclusive", 4: "harness error", 130: "interrupted"}


def pytest_addoption(parser):
    g = parser.getgroup("streamdrill", "streamdrill drills (*.drill)")
    g.addoption("--streamdrill-bin", default=None, help="the streamdrill binary (default: $STREAMDRILL_BIN, else streamdrill on PATH)")
    g.addoption("--streamdrill-set", action="append", default=[], metavar="NAME=VALUE", help="set a drill {variable}; repeatable")
    g.addoption("--streamdrill-brokers", default=None, metavar="LIST", help="bootstrap servers (default: the embedded cluster)")
    g.addoption("--streamdrill-out", default=None, metavar="DIR", help="run folders go to DIR/<scenario>/ (default: streamdrill-out under the root folder)")
    g.addoption("--streamdrill-arg", action="append", default=[], metavar="ARG", help="another `streamdrill run` argument; repeatable")
    g.addoption("--streamdrill-timeout", type=float, default=1800.0, metavar="SECONDS", help="kill a drill that runs longer (default 1800)")
    parser.addini("streamdrill_glob", "which files are drills", default="*.drill")


def pytest_collect_file(file_path, parent):
    if fnmatch.fnmatch(file_path.name, parent.config.getini("streamdrill_glob")):
        return DrillFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A drill that could not be judged errors in setup: its report is
    streamdrill's account, not a Python traceback."""
    outcome = yield
    if isinstance(item, DrillItem) and call.excinfo is not None and isinstance(call.excinfo.value, DrillNotJudged):
        outcome.get_result().longrepr = f"{item.path.name}: {call.excinfo.value}"


class DrillFile(pytest.File):
    def collect(self):
        yield DrillItem.from_parent(self, name=self.path.stem)


class DrillNotJudged(Exception):
    """exit 2, 3, 4 or 130: the drill said nothing about the pipeline"""


class DrillFailed(Exception):
    """exit 1: the pipeline broke its contract"""


def _binary(config):
    b = config.getoption("streamdrill_bin") or os.environ.get("STREAMDRILL_BIN") or shutil.which("streamdrill")
    if not b:
        raise pytest.UsageError("streamdrill not found: pass --streamdrill-bin or set STREAMDRILL_BIN")
    return b


def _summary(run_dir):
    try:
        with open(os.path.join(run_dir, "summary.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _describe(summary, limit=5):
    """The failed checks, then up to `limit` sample ids of each anomaly bucket."""
    lines = []
    for c in summary.get("checks", []):
        if not c.get("pass"):
            detail = f" ({c['detail']})" if c.get("detail") else ""
            lines.append(f"check {c['name']}: expected {c['expected']}, actual {c['actual']}{detail}")
    for sink, buckets in sorted(summary.get("anomalies", {}).items()):
        for bucket, b in sorted(buckets.items()):
            sample = b.get("sample", [])
            if bucket == "groups":
                ids = ", ".join(f"{g.get('window_start', '')} {g.get('keys', '')} {g.get('buckets', '')}".strip() for g in sample[:limit])
            else:
                ids = ", ".join(
                    s["id"] + (f" x{s['copies']}" if s.get("copies", 1) != 1 else "") + (f" [{s['writers']}]" if s.get("writers") else "")
                    for s in sample[:limit])
            more = f", ... ({b.get('total', len(sample))} in all)" if b.get("total", 0) > limit else ""
            lines.append(f"{sink}.{bucket}: {ids}{more}")
    if summary.get("message"):
        lines.append(summary["message"])
    return lines


class DrillItem(pytest.Item):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.run_dir = None
        self.outcome = None

    def _command(self, out):
        cfg = self.config
        cmd = [_binary(cfg), "run", str(self.path), "--out", out, "--quiet"]
        for s in cfg.getoption("streamdrill_set"):
            cmd += ["--set", s]
        if cfg.getoption("streamdrill_brokers"):
            cmd += ["--brokers", cfg.getoption("streamdrill_brokers")]
        return cmd + cfg.getoption("streamdrill_arg")

    def setup(self):
        cfg = self.config
        out = cfg.getoption("streamdrill_out") or os.path.join(str(cfg.rootpath), "streamdrill-out")
        out = os.path.abspath(out)
        cmd = self._command(out)
        # its own process group, so a timeout reaches the pipeline too
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = p.communicate(timeout=cfg.getoption("streamdrill_timeout"))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                stdout, stderr = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                stdout, stderr = p.communicate()
            raise DrillNotJudged(f"streamdrill run did not finish within {cfg.getoption('streamdrill_timeout'):.0f}s: "
                                 + " ".join(cmd))
        self.outcome = (p.returncode, stdout, stderr)
        summary_dir = None
        # streamdrill names each run's report on stderr: "  report: DIR/report.md"
        for line in (stderr + stdout).splitlines():
            line = line.strip()
            if line.startswith("report: "):
                summary_dir = os.path.dirname(line[len("report: "):])
        self.run_dir = summary_dir
        if self.run_dir:
            self.user_properties.append(("streamdrill_run_dir", self.run_dir))
        if p.returncode not in (0, 1):
            summary = _summary(self.run_dir) if self.run_dir else None
            lines = [f"streamdrill exit {p.returncode} ({EXIT_NAMES.get(p.returncode, 'unknown')})"]
            if summary:
                lines.append(f"verdict {summary.get('verdict')}, reason {summary.get('reason') or '-'}")
                lines += _describe(summary)
            elif stderr.strip():
                lines += stderr.strip().splitlines()[-10:]
            if self.run_dir:
                lines.append(f"streamdrill run folder: {self.run_dir}")
            raise DrillNotJudged("\n".join(lines))

    def runtest(self):
        rc, stdout, stderr = self.outcome
        if self.run_dir:
            self.add_report_section("call", "streamdrill", f"run folder: {self.run_dir}\n{stderr}")
        if rc == 1:
            summary = _summary(self.run_dir) if self.run_dir else None
            lines = ["streamdrill exit 1 (fail): the pipeline broke its contract"]
            lines += _describe(summary) if summary else stderr.strip().splitlines()[-10:]
            lines.append(f"streamdrill run folder: {self.run_dir}")
            raise DrillFailed("\n".join(lines))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (DrillFailed, DrillNotJudged)):
            return f"{self.path.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"drill {self.name}"
