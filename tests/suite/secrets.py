"""Coded tests of a registry behind TLS and credentials: a run against one, and where its secret must never be."""
import base64
import glob
import os
import subprocess
import sys
import time

from .common import ROOT, fresh, result
from .registry import coded

SECRET = "user:s3cret-basic"  # what tests/unit/registry_server.py's /store takes
DRILL = """\
source     kafka topic=registry-tls partitions=3
events     parcel-scans seed=42 format=avro
registry   url=https://127.0.0.1:{port}/store auth=basic:env:SD_TEST_SR_KEY ca={ca}
contract   id=event_id time=event_time watermark=10m late=drop malformed=quarantine profile=exactly-once
sink       sqlite db={{run}}/target.db query="SELECT event_id, 'incarnation ' || sd_incarnation || ' batch ' || sd_batch FROM bronze"
quarantine sqlite db={{run}}/target.db query="SELECT sd_id, reason FROM rejected"
pipeline   {refpipe} --brokers {{brokers}} --topic {{topic}} --db {{run}}/target.db --group {{group}} --format avro --registry {{registry-url}}

start
produce    60
await      sink rows>=60 timeout=30s
produce    20
kill       mid-batch signal=KILL
restart
inject     malformed=2
await      quiescent 2s timeout=60s
expect     unique=80 lost=0 duplicated=0 quarantined=2
"""


def leaks(folder, texts, *outputs):
    """Every file under folder (run.db and the logs too) and every output that holds one of texts."""
    found = []
    for path in glob.glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isfile(path):
            data = open(path, "rb").read()
            found += [f"{os.path.relpath(path, folder)} holds {t!r}" for t in texts if t.encode() in data]
    for i, out in enumerate(outputs):
        found += [f"output {i} holds {t!r}" for t in texts if t in out]
    return found


@coded("registry-tls", "after")
def test_registry_tls(binary):
    """A drill against a registry over HTTPS with basic credentials (the stand-in of tests/unit/registry_server.py, its CA
    made at test time), refpipe reading it with the same client through STREAMDRILL_REGISTRY_AUTH and _CA: PASS, and
    the secret (or its base64) in no file of the run folder, run.db included, nor the console, nor the runbook; with a
    wrong secret the run is inconclusive (registry-unreachable) naming HTTP 401, the wrong secret nowhere either."""
    base = fresh("registry-tls")
    certs = os.path.join(base, "certs")
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "unit", "registry_server.py"), certs],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(base, "server.log"), "w"))
    problems = []
    try:
        ports = os.path.join(certs, f"ports.{server.pid}")
        for _ in range(600):
            if os.path.exists(ports):
                break
            time.sleep(0.05)
        _, https, _ = open(ports).read().split()
        drill = os.path.join(base, "registry-tls.drill")
        with open(drill, "w") as f:
            f.write(DRILL.format(port=https, ca=os.path.join(certs, "ca.pem"), refpipe=os.path.join(ROOT, "scenarios", "pipelines", "refpipe")))
        env = dict(os.environ, no_proxy="127.0.0.1")
        texts = [SECRET.split(":")[1], base64.b64encode(SECRET.encode()).decode()]
        good = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out")], capture_output=True, text=True,
                              env=dict(env, SD_TEST_SR_KEY=SECRET), stdin=subprocess.DEVNULL)
        run_dir = os.path.join(base, "out", "registry-tls")
        runbook = subprocess.run([binary, "runbook", run_dir], capture_output=True, text=True)
        if good.returncode != 0:
            problems.append(f"exit {good.returncode} with the right secret: {good.stderr[-800:]}")
        problems += leaks(run_dir, texts, good.stdout, good.stderr, runbook.stdout, runbook.stderr)
        wrong = "user:wr0ng-pa55"
        bad = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out-wrong")], capture_output=True, text=True,
                             env=dict(env, SD_TEST_SR_KEY=wrong), stdin=subprocess.DEVNULL)
        if bad.returncode != 3 or "registry-unreachable" not in bad.stderr or "HTTP 401 (unauthorized" not in bad.stderr:
            problems.append(f"exit {bad.returncode} with a wrong secret, expected 3 naming HTTP 401: {bad.stderr[-800:]}")
        problems += leaks(os.path.join(base, "out-wrong"), [wrong.split(":")[1], base64.b64encode(wrong.encode()).decode()],
                          bad.stdout, bad.stderr)
    finally:
        server.terminate()
        server.wait()
    return result("registry-tls", problems, "PASS over HTTPS with basic credentials, refpipe through the same client; the "
                  "secret in no file of the run folder, the console or the runbook; a wrong one inconclusive with HTTP 401")
