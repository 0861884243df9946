build-prof/harness/util.o: harness/util.c harness/util.h harness/err.h
harness/util.h:
harness/err.h:
