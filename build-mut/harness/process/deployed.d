build-mut/harness/process/deployed.o: harness/process/deployed.c \
 harness/process/deployed.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/err.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h harness/process/command.h
harness/process/deployed.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/process/command.h:
