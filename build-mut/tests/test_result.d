build-mut/tests/test_result: tests/unit/test_result.c \
 harness/oracle/result.h
harness/oracle/result.h:
