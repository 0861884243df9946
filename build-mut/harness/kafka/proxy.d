build-mut/harness/kafka/proxy.o: harness/kafka/proxy.c \
 harness/kafka/proxy.h harness/base/err.h harness/base/util.h \
 harness/base/err.h
harness/kafka/proxy.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
