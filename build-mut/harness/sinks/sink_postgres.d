build-mut/harness/sinks/sink_postgres.o: harness/sinks/sink_postgres.c \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h harness/sinks/sink.h \
 harness/base/err.h harness/lang/scenario.h harness/base/counts.h \
 harness/base/events.h harness/base/err.h harness/base/util.h \
 harness/base/util.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
harness/sinks/sink.h:
harness/base/err.h:
harness/lang/scenario.h:
harness/base/counts.h:
harness/base/events.h:
harness/base/err.h:
harness/base/util.h:
harness/base/util.h:
