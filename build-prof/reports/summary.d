build-prof/reports/summary.o: reports/summary.c reports/../harness/util.h \
 reports/../harness/err.h reports/report.h reports/../harness/err.h
reports/../harness/util.h:
reports/../harness/err.h:
reports/report.h:
reports/../harness/err.h:
