#!/usr/bin/env python3
"""The CI recipes of docs/ci.md, run as written.

The YAML blocks of docs/ci.md (```yaml file=PATH) are parsed; from the
GitHub Actions workflow, every step's `run:` in order; from the GitLab job,
`before_script` then `script`. Each runs in a bare Debian 12 root of its
own (the debian:bookworm those jobs name; tests/deb/bare-root.sh), in a copy of
a user's repository with two drills in drills/, against a fresh clone of
this repository (STREAMDRILL_GIT=file:///src, the clone bound read-only).
The steps that use an action are checked by what they need: the paths the
artefact and test-report steps name exist, and the JUnit file the job
hands over (streamdrill's or pytest's) holds one passing test per drill.

    ci_recipes.py BINARY WORKDIR      (needs root)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import yaml
from junitparser import JUnitXml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BARE = os.path.join(ROOT, "tests", "deb", "bare-root.sh")


def recipes():
    text = open(os.path.join(ROOT, "docs", "ci.md")).read()
    found = {}
    for m in re.finditer(r"```yaml file=(\S+)\n(.*?)```", text, re.S):
        found[m.group(1)] = yaml.safe_load(m.group(2))
    return found


def inside(chroot, cwd, script, env, log):
    """A job's commands as its runner runs them: one shell, stop at the first failing command."""
    full = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
            "CI": "true", "DEBIAN_FRONTEND": "noninteractive"}
    full.update(env)
    with open(log, "a") as f:
        f.write(f"\n$ (in {cwd}) {script}\n")
        f.flush()
        # its own process group, so that a timeout or our own end stops the whole job
        p = subprocess.Popen(["chroot", chroot, "/usr/bin/env", "-i"] + [f"{k}={v}" for k, v in full.items()]
                             + ["/bin/bash", "-eo", "pipefail", "-c", f"cd {cwd}\n{script}"],
                             stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        JOBS.append(p)
        try:
            return p.wait(timeout=1800)
        except subprocess.TimeoutExpired:
            f.write("\n(timed out after 1800 s)\n")
            return 124
        finally:
            stop_job(p)


JOBS = []


def stop_job(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def on_signal(sig, frame):
    """SIGTERM or SIGINT: stop the job, then unwind (the finally blocks unmount and remove the roots)."""
    for p in JOBS:
        stop_job(p)
    sys.exit(128 + sig)


def container(work, name, src, user, repo):
    """A fresh bare root with the clone bound read-only at /src and the user's repository at REPO."""
    chroot = os.path.join(work, name)
    subprocess.run([BARE, "create", chroot], check=True)
    os.makedirs(os.path.join(chroot, "src"))
    subprocess.run(["mount", "--bind", src, os.path.join(chroot, "src")], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", os.path.join(chroot, "src")], check=True)
    shutil.copytree(user, os.path.join(chroot, repo.lstrip("/")))
    # the downloaded .debs shared between the two roots (a CI cache)
    archives = os.path.join(ROOT, ".cache", "deb-test", "apt-archives")
    os.makedirs(os.path.join(archives, "partial"), exist_ok=True)
    subprocess.run(["mount", "--bind", archives, os.path.join(chroot, "var", "cache", "apt", "archives")], check=True)
    return chroot


def junit_tests(path, per="case"):
    """(tests, passed): with per="suite" a test is a testsuite (streamdrill's junit.xml: a suite per drill, a case per
    check), else a testcase (pytest's: a case per drill)."""
    xml = JUnitXml.fromfile(path)
    suites = list(xml) if xml._tag == "testsuites" else [xml]
    if per == "suite":
        return len(suites), sum(1 for s in suites if all(c.is_passed for c in s))
    cases = [c for s in suites for c in s]
    return len(cases), sum(1 for c in cases if c.is_passed)


def main():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    binary, work = sys.argv[1], os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "recipes.log")
    problems = []
    found = recipes()
    gh, gl = found.get(".github/workflows/streamdrill.yml"), found.get(".gitlab-ci.yml")
    if not gh or not gl:
        print(f"FAIL ci-recipes: docs/ci.md has no workflow or no GitLab job (found {sorted(found)})")
        return 1
    # a fresh clone: what was committed, nothing of this work tree
    src = os.path.join(work, "src")
    subprocess.run(["git", "clone", "--quiet", ROOT, src], check=True)
    # the user's repository: a drill from `streamdrill init` and the parcel drill
    user = os.path.join(work, "user")
    os.makedirs(os.path.join(user, "drills"))
    subprocess.run([binary, "init", os.path.join(user, "drills", "first.drill"), "--quiet"], check=True)
    shutil.copy(os.path.join(ROOT, "scenarios", "parcel-restart.drill"), os.path.join(user, "drills"))
    ndrills = 2
    t0 = time.time()
    env = {"STREAMDRILL_GIT": "file:///src"}
    # GitHub Actions: the job's steps in order, in a container of its own
    job = gh["jobs"]["drills"]
    if any("junit" in st.get("uses", "") for st in job["steps"]) and (gh.get("permissions") or {}).get("checks") != "write":
        problems.append("the workflow publishes a JUnit report without `permissions: checks: write`, which the action needs")
    if job.get("container") != "debian:bookworm":
        problems.append(f"the workflow's container is {job.get('container')}, not the debian:bookworm tested here")
    chroot = container(work, "gh-root", src, user, "/work/gh")
    try:
        summary = "/work/gh-step-summary.md"
        for step in job["steps"]:
            if "run" in step:
                rc = inside(chroot, "/work/gh", step["run"], dict(env, GITHUB_STEP_SUMMARY=summary, GITHUB_WORKSPACE="/work/gh"), log)
                if rc:
                    problems.append(f"GitHub step {step.get('name', step['run'][:40])!r} exited {rc}")
                    break
            elif "upload-artifact" in step["uses"]:
                path = os.path.join(chroot, "work", "gh", step["with"]["path"])
                if not os.path.isfile(os.path.join(path, "parcel-restart", "report.html")):
                    problems.append(f"GitHub artefact path {step['with']['path']} holds no report.html")
            elif "junit" in step["uses"]:
                path = os.path.join(chroot, "work", "gh", step["with"]["report_paths"])
                n, ok = junit_tests(path, "suite") if os.path.exists(path) else (0, 0)
                if (n, ok) != (ndrills, ndrills):
                    problems.append(f"GitHub test report {step['with']['report_paths']}: {ok} of {n} passed, wanted {ndrills} of {ndrills}")
        s = os.path.join(chroot, summary.lstrip("/"))
        if not problems and (not os.path.exists(s) or open(s).read().count("PASS") < ndrills):
            problems.append("GitHub: the step summary does not hold both drills' report.md with PASS")
    finally:
        subprocess.run([BARE, "destroy", chroot])
    # GitLab: before_script and script in one shell, in a container of its own
    job = gl["streamdrill"]
    if job.get("image") != "debian:bookworm":
        problems.append(f"the GitLab job's image is {job.get('image')}, not the debian:bookworm tested here")
    chroot = container(work, "gl-root", src, user, "/work/gl")
    try:
        rc = inside(chroot, "/work/gl", "\n".join(job["before_script"] + job["script"]), dict(env, CI_PROJECT_DIR="/work/gl"), log)
        if rc:
            problems.append(f"the GitLab job exited {rc}")
        else:
            for p in job["artifacts"]["paths"]:
                if not os.path.exists(os.path.join(chroot, "work", "gl", p)):
                    problems.append(f"GitLab artefact path {p} does not exist")
            path = os.path.join(chroot, "work", "gl", job["artifacts"]["reports"]["junit"])
            n, ok = junit_tests(path) if os.path.exists(path) else (0, 0)
            if (n, ok) != (ndrills, ndrills):
                problems.append(f"GitLab junit report: {ok} of {n} passed, wanted {ndrills} of {ndrills}")
            md = os.path.join(chroot, "work", "gl", "streamdrill-summary.md")
            if not os.path.exists(md) or open(md).read().count("PASS") < ndrills:
                problems.append("GitLab: streamdrill-summary.md does not hold both drills' report.md")
    finally:
        subprocess.run([BARE, "destroy", chroot])
    if problems:
        tail = "".join(open(log).readlines()[-30:]) if os.path.exists(log) else ""
        print("FAIL ci-recipes: " + "\n  ".join(problems) + f"\n  the jobs' output is in {log}; its end:\n" + tail)
        return 1
    print(f"ok   ci-recipes: docs/ci.md's GitHub workflow and GitLab job ran as written in a bare Debian 12 root against a "
          f"fresh clone: package built and installed, {ndrills} drills passed in each, artefacts and JUnit reports there "
          f"({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
