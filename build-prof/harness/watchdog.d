build-prof/harness/watchdog.o: harness/watchdog.c harness/watchdog.h \
 harness/err.h harness/util.h
harness/watchdog.h:
harness/err.h:
harness/util.h:
