build-mut/harness/process/command.o: harness/process/command.c \
 harness/process/command.h harness/base/err.h harness/base/util.h \
 harness/base/err.h
harness/process/command.h:
harness/base/err.h:
harness/base/util.h:
harness/base/err.h:
