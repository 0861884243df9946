build-mut/harness/kafka/broker.o: harness/kafka/broker.c \
 harness/kafka/broker.h harness/base/err.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/err.h \
 harness/base/util.h harness/base/util.h
harness/kafka/broker.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
