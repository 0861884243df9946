build-prof/harness/events.o: harness/events.c harness/events.h \
 harness/err.h harness/util.h harness/scenario.h
harness/events.h:
harness/err.h:
harness/util.h:
harness/scenario.h:
