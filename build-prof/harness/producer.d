build-prof/harness/producer.o: harness/producer.c harness/producer.h \
 harness/err.h harness/ledger.h harness/scenario.h harness/broker.h \
 harness/util.h
harness/producer.h:
harness/err.h:
harness/ledger.h:
harness/scenario.h:
harness/broker.h:
harness/util.h:
