build-prof/reports/model.o: reports/model.c reports/../harness/util.h \
 reports/../harness/err.h reports/report.h reports/../harness/err.h
reports/../harness/util.h:
reports/../harness/err.h:
reports/report.h:
reports/../harness/err.h:
