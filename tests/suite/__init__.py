"""streamdrill's end-to-end tests (tests/run_scenarios.py runs them): the case runner, the real stacks, the coded tests by concern and the static checks."""
