build-mut/harness/kafka/links.o: harness/kafka/links.c \
 harness/kafka/links.h harness/kafka/proxy.h harness/base/err.h \
 harness/base/util.h harness/base/err.h
harness/kafka/links.h:
harness/kafka/proxy.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
