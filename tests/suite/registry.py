"""The coded tests, registered by name: each module by concern decorates its tests with @coded(NAME, PHASE), and
tests/run_scenarios.py runs them phase by phase, or those --only names.

Phases, in the order a run takes them:
    static      the code and the docs against each other (first: they fail fastest)
    before      coded tests on the embedded cluster, before the cases
    (the broken drills and the scenario cases)
    after       coded tests on the embedded cluster, after the cases
    local-real  tests of the install and the recipes (not with --no-real)
    real        coded tests on the real Kafka broker the real cases use
    last        checks over everything the run wrote
    long        run by --long only (make test-real-long): a check of minutes that make test leaves out
"""
import inspect

PHASES = ("static", "before", "after", "local-real", "real", "last", "long")
CODED = {}  # name -> (function, phase)


def coded(name, phase):
    if phase not in PHASES:
        raise ValueError(f"coded test {name}: no phase {phase}")

    def register(fn):
        if name in CODED:
            raise ValueError(f"coded test {name} registered twice")
        CODED[name] = (fn, phase)
        return fn
    return register


def call(name, binary, only):
    """Run coded test NAME with what its signature asks for: the harness binary, whether --only narrowed the run."""
    fn, _ = CODED[name]
    args = {"binary": binary, "only": bool(only)}
    return fn(**{p: args[p] for p in inspect.signature(fn).parameters if p in args})


def in_phase(phase):
    return [n for n, (_, p) in CODED.items() if p == phase]
