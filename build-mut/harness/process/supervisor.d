build-mut/harness/process/supervisor.o: harness/process/supervisor.c \
 harness/process/supervisor.h harness/base/err.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/process/watchdog.h \
 harness/process/command.h
harness/process/supervisor.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/process/watchdog.h:
harness/process/command.h:
