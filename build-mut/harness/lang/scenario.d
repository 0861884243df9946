build-mut/harness/lang/scenario.o: harness/lang/scenario.c \
 harness/lang/scenario.h harness/base/counts.h harness/base/err.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
