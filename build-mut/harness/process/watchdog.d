build-mut/harness/process/watchdog.o: harness/process/watchdog.c \
 harness/process/watchdog.h harness/base/err.h harness/base/util.h \
 harness/base/err.h
harness/process/watchdog.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
