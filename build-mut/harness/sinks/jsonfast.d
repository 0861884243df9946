build-mut/harness/sinks/jsonfast.o: harness/sinks/jsonfast.c \
 harness/sinks/jsonfast.h
harness/sinks/jsonfast.h:
