"""Shared by the case runner and the coded tests: where things are, the scratch folders, the closing line of a test, the real stack's addresses, the test virtualenv."""
import contextlib
import os
import shutil
import subprocess
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


OUT = os.path.join(ROOT, "tests", "out")


REAL = {"brokers": None}


def fresh(name):
    """An empty folder for a coded test's files, under tests/out."""
    base = os.path.join(OUT, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    return base


def run_drill_text(binary, base, name, text):
    """Write a drill NAME.drill of text into base and run it into base/out; the process and the run folder."""
    drill = os.path.join(base, name + ".drill")
    open(drill, "w").write(text)
    p = subprocess.run([binary, "run", drill, "--out", os.path.join(base, "out"), "--quiet"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)  # no terminal: an operator step runs its command
    return p, os.path.join(base, "out", name)


def result(name, problems, ok_text):
    """The closing line of a coded test: FAIL with every problem, else ok with what was shown."""
    if problems:
        print(f"FAIL {name}: " + "\n  ".join(problems))
        return False
    print(f"ok   {name}: {ok_text}")
    return True


def pids_with(text):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(int(d))
    return found


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_on_a_terminal(binary, args, env=None):
    """Run streamdrill with stdout and stderr on a pseudo-terminal; its exit code and everything it drew."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([binary] + args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         env=dict(os.environ, TERM="xterm", **(env or {})))
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        raw += chunk
    p.wait()
    os.close(master)
    return p.returncode, raw.decode(errors="replace")


def venv_python(what):
    """The test virtualenv's python (tests/venv.sh), or None after a FAIL line for WHAT."""
    py = subprocess.run(["sh", os.path.join(ROOT, "tests", "venv.sh")], capture_output=True, text=True)
    if py.returncode:
        print(f"FAIL {what}: tests/venv.sh: " + py.stderr[-400:])
        return None
    return py.stdout.strip()


class CountingOut:
    """stdout that counts the result lines ("ok   ..." and "FAIL ...") for the closing line."""

    def __init__(self, out):
        self.out, self.passed, self.failed, self.bol = out, 0, 0, True
        self.mine = threading.local()

    @contextlib.contextmanager
    def held(self):
        """This thread's writes kept in the list it yields, not written: a
        coded test run beside others prints its lines whole, when it ends."""
        self.mine.held = []
        try:
            yield self.mine.held
        finally:
            self.mine.held = None

    def write(self, text):
        held = getattr(self.mine, "held", None)
        if held is not None:
            held.append(text)
            return len(text)
        for i, line in enumerate(text.split("\n")):
            if self.bol or i:
                if line.startswith("ok   "):
                    self.passed += 1
                elif line.startswith("FAIL"):
                    self.failed += 1
        self.bol = text.endswith("\n")
        return self.out.write(text)

    def flush(self):
        self.out.flush()
