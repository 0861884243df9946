build-prof/harness/broker.o: harness/broker.c harness/broker.h \
 harness/err.h harness/scenario.h harness/util.h
harness/broker.h:
harness/err.h:
harness/scenario.h:
harness/util.h:
