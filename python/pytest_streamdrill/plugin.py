"""Collect streamdrill drills (*.drill) as pytest items and run each with
streamdrill.run (`streamdrill run --json`). The drill runs in the item's
setup, so a drill that could not be judged (exit 3: inconclusive; 2: a bad
drill; 4: a harness error) is reported as an error, and one whose checks
failed (exit 1) as a failure whose message lists the failed checks and
sample ids of each kind from the run's summary."""
import fnmatch
import os
import shutil

import pytest

import streamdrill
from streamdrill import EXIT_NAMES


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


def _ids(samples, limit):
    return ", ".join(s.id + (f" x{s.copies}" if s.copies != 1 else "") + (f" sent {s.times_sent} times" if s.replayed_by_harness else "")
                     + (f" [{s.writers}]" if s.writers else "") for s in samples[:limit])


def _describe(summary, limit=5):
    """The failed checks, then up to `limit` sample ids of each anomaly
    bucket; duplicates in two kinds, so the one a kill caused is not hidden
    behind the harness's replays: written again by the pipeline (sent once)
    and sent more than once by the harness."""
    lines = [f"check {c.name}: expected {c.expected}, actual {c.actual}" + (f" ({c.detail})" if c.detail else "")
             for c in summary.failed_checks]
    for sink, buckets in sorted(summary.anomalies.items()):
        for name, b in sorted(buckets.items()):
            more = f", ... ({b.total} in all)" if b.total > limit else ""
            if isinstance(b, streamdrill.Groups):
                ids = ", ".join(f"{g.window_start} {g.keys} {g.buckets}".strip() for g in b.sample[:limit])
                lines.append(f"{sink}.{name}: {ids}{more}")
            elif name == "duplicated":
                rerun, replayed = summary.duplicates_by_cause(sink)
                lines.append(f"{sink}.duplicated ({b.total} in all): ")
                if rerun:
                    lines[-1] += f"written again by the pipeline: {_ids(rerun, limit)}"
                if replayed:
                    lines[-1] += ("; " if rerun else "") + f"sent again by the harness: {_ids(replayed, limit)}"
            else:
                lines.append(f"{sink}.{name}: {_ids(b.sample, limit)}{more}")
    if summary.message:
        lines.append(summary.message)
    return lines


class DrillItem(pytest.Item):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.run_dir = None
        self.summary = None

    def setup(self):
        cfg = self.config
        out = os.path.abspath(cfg.getoption("streamdrill_out") or os.path.join(str(cfg.rootpath), "streamdrill-out"))
        sets = dict(a.split("=", 1) for a in cfg.getoption("streamdrill_set"))
        timeout = cfg.getoption("streamdrill_timeout")
        try:
            summary = streamdrill.run(str(self.path), set=sets, brokers=cfg.getoption("streamdrill_brokers"), out=out,
                                      args=cfg.getoption("streamdrill_arg"), binary=_binary(cfg), timeout=timeout)
        except streamdrill.StreamdrillError as e:
            rc = e.exit_code
            lines = [f"streamdrill exit {rc} ({EXIT_NAMES.get(rc, 'unknown')})" if rc is not None else str(e)]
            if rc is not None:
                lines += e.stderr.strip().splitlines()[-10:]
            raise DrillNotJudged("\n".join(lines)) from None
        self.summary = summary
        self.run_dir = summary.run_dir
        if self.run_dir:
            self.user_properties.append(("streamdrill_run_dir", self.run_dir))
        if summary.exit_code not in (0, 1):
            rc = summary.exit_code
            lines = [f"streamdrill exit {rc} ({EXIT_NAMES.get(rc, 'unknown')})",
                     f"verdict {summary.verdict}, reason {summary.reason or '-'}"]
            lines += _describe(summary)
            if self.run_dir:
                lines.append(f"streamdrill run folder: {self.run_dir}")
            raise DrillNotJudged("\n".join(lines))

    def runtest(self):
        summary = self.summary
        if self.run_dir:
            self.add_report_section("call", "streamdrill", f"run folder: {self.run_dir}")
        if summary.exit_code == 1:
            lines = ["streamdrill exit 1 (fail): the pipeline broke its contract"] + _describe(summary)
            lines.append(f"streamdrill run folder: {self.run_dir}")
            raise DrillFailed("\n".join(lines))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (DrillFailed, DrillNotJudged)):
            return f"{self.path.name}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"drill {self.name}"
