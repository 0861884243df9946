build-mut/tests/test_recon: tests/unit/test_recon.c \
 harness/oracle/observe.h harness/base/err.h harness/sinks/sink.h \
 harness/lang/scenario.h harness/base/counts.h harness/base/events.h \
 harness/base/err.h harness/base/util.h harness/base/util.h \
 harness/oracle/late.h harness/oracle/recon.h
harness/oracle/observe.h:
harness/base/err.h:
harness/sinks/sink.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
harness/oracle/late.h:
harness/oracle/recon.h:
