build-mut/harness/explore/xsched.o: harness/explore/xsched.c \
 harness/explore/xsched.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/err.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/progress/progress.h \
 harness/progress/progress_batch.h harness/process/supervisor.h \
 harness/process/watchdog.h
harness/explore/xsched.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/progress/progress.h:
harness/progress/progress_batch.h:
harness/process/supervisor.h:
harness/process/watchdog.h:
