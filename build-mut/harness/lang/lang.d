build-mut/harness/lang/lang.o: harness/lang/lang.c harness/base/figures.h \
 harness/lang/lang.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/err.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h
harness/base/figures.h:
harness/lang/lang.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
