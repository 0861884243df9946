build-mut/reports/model.o: reports/model.c harness/base/ledger.h \
 harness/base/err.h harness/base/util.h reports/report.h \
 harness/base/err.h harness/base/figures.h
harness/base/ledger.h:
harness/base/err.h:
harness/base/util.h:
reports/report.h:
harness/base/err.h:
harness/base/figures.h:
