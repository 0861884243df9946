build-mut/harness/base/ledger.o: harness/base/ledger.c \
 harness/base/ledger.h harness/base/err.h harness/base/util.h
harness/base/ledger.h:
harness/base/err.h:
harness/base/util.h:
