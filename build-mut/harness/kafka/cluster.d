build-mut/harness/kafka/cluster.o: harness/kafka/cluster.c \
 harness/kafka/cluster.h harness/base/err.h harness/kafka/links.h \
 harness/base/util.h harness/base/err.h
harness/kafka/cluster.h:
harness/base/err.h:
harness/kafka/links.h:
harness/base/util.h:
harness/base/err.h:
