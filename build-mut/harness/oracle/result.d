build-mut/harness/oracle/result.o: harness/oracle/result.c \
 harness/oracle/result.h harness/base/json.h harness/base/util.h \
 harness/base/err.h
harness/oracle/result.h:
harness/base/json.h:
harness/base/util.h:
harness/base/err.h:
