build-prof/harness/sink_jsonl.o: harness/sink_jsonl.c harness/sink.h \
 harness/err.h harness/scenario.h harness/util.h
harness/sink.h:
harness/err.h:
harness/scenario.h:
harness/util.h:
