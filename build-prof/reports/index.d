build-prof/reports/index.o: reports/index.c reports/../harness/util.h \
 reports/../harness/err.h reports/report.h reports/../harness/err.h
reports/../harness/util.h:
reports/../harness/err.h:
reports/report.h:
reports/../harness/err.h:
