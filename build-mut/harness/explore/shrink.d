build-mut/harness/explore/shrink.o: harness/explore/shrink.c \
 harness/explore/shrink.h harness/explore/xsched.h \
 harness/lang/scenario.h harness/base/counts.h harness/base/err.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h
harness/explore/shrink.h:
harness/explore/xsched.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
