build-mut/harness/base/events.o: harness/base/events.c \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/json.h
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/json.h:
