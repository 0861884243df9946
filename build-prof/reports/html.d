build-prof/reports/html.o: reports/html.c reports/../harness/util.h \
 reports/../harness/err.h reports/report.h reports/../harness/err.h
reports/../harness/util.h:
reports/../harness/err.h:
reports/report.h:
reports/../harness/err.h:
