build-mut/harness/kafka/producer.o: harness/kafka/producer.c \
 harness/kafka/producer.h harness/base/err.h harness/base/ledger.h \
 harness/base/err.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/events.h harness/base/util.h harness/base/util.h \
 harness/kafka/broker.h
harness/kafka/producer.h:
harness/base/err.h:
harness/base/ledger.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/util.h:
harness/base/util.h:
harness/kafka/broker.h:
