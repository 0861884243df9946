build-mut/harness/lang/parse.o: harness/lang/parse.c harness/lang/lang.h \
 harness/lang/scenario.h harness/base/counts.h harness/base/err.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h
harness/lang/lang.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/err.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
