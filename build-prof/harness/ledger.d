build-prof/harness/ledger.o: harness/ledger.c harness/ledger.h \
 harness/err.h harness/util.h
harness/ledger.h:
harness/err.h:
harness/util.h:
