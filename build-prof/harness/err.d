build-prof/harness/err.o: harness/err.c harness/err.h
harness/err.h:
