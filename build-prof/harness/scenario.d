build-prof/harness/scenario.o: harness/scenario.c harness/scenario.h \
 harness/err.h harness/util.h
harness/scenario.h:
harness/err.h:
harness/util.h:
