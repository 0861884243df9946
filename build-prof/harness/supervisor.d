build-prof/harness/supervisor.o: harness/supervisor.c \
 harness/supervisor.h harness/err.h harness/scenario.h harness/watchdog.h \
 harness/util.h
harness/supervisor.h:
harness/err.h:
harness/scenario.h:
harness/watchdog.h:
harness/util.h:
