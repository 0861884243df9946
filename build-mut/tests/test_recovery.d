build-mut/tests/test_recovery: tests/unit/test_recovery.c \
 harness/base/ledger.h harness/base/err.h harness/oracle/observe.h \
 harness/base/err.h harness/sinks/sink.h harness/lang/scenario.h \
 harness/base/counts.h harness/base/events.h harness/base/util.h \
 harness/base/util.h harness/oracle/recovery.h harness/base/figures.h \
 harness/oracle/health.h
harness/base/ledger.h:
harness/base/err.h:
harness/oracle/observe.h:
harness/base/err.h:
harness/sinks/sink.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/util.h:
harness/base/util.h:
harness/oracle/recovery.h:
harness/base/figures.h:
harness/oracle/health.h:
