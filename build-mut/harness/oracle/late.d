build-mut/harness/oracle/late.o: harness/oracle/late.c \
 harness/oracle/late.h harness/base/util.h harness/base/err.h
harness/oracle/late.h:
harness/base/util.h:
harness/base/err.h:
