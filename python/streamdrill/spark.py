"""The lines a drill reads from a Spark Structured Streaming job, printed by a
listener instead of copied into every job:

    from pyspark.sql import SparkSession
    from streamdrill.spark import watch

    spark = SparkSession.builder.getOrCreate()
    watch(spark)             # before the queries start
    query = df.writeStream....start()

- ``SD-READY query=NAME spark=VERSION delta-spark=VERSION`` on stdout when
  a query starts: the harness takes the job as up (``start`` waits for it),
  and the versions go to the runbook when the drill has no ``version``
  line (Delta's only when delta-spark is installed);
- ``SD-PROGRESS {json}`` for each StreamingQueryProgress (Spark's own
  account of each batch: the offsets it read, its rows, its state), which
  the harness puts beside its ledger and the runbook;
- when a query ends with an exception, ``StreamingQueryException: ...`` and
  its cause on stderr, the line the harness quotes for the crash.

Nothing else is needed for ``progress spark``, which reads the checkpoint
itself. Spark's console progress bar writes over stderr; a job gated by a
drill is better run with ``spark.ui.showConsoleProgress=false``.

Works with PySpark 3.4 and later (StreamingQueryListener in Python); pyspark
is imported only when ``watch`` is called.
"""
import sys

_LISTENERS = {}


def _say(stream, line):
    stream.write(line + "\n")
    stream.flush()


def versions(spark=None):
    """The words the ready line names the versions with: ``spark=4.2.0 delta-spark=4.0.0``."""
    words = []
    if spark is not None and getattr(spark, "version", None):
        words.append(f"spark={spark.version}")
    else:
        try:
            import pyspark
            if getattr(pyspark, "__version__", None):
                words.append(f"spark={pyspark.__version__}")
        except ImportError:
            pass
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            words.append(f"delta-spark={version('delta-spark')}")
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    return " ".join(words)


def listener(stdout=None, stderr=None, spark=None):
    """A StreamingQueryListener printing the lines above (to sys.stdout and sys.stderr unless given)."""
    from pyspark.sql.streaming import StreamingQueryListener

    out, err = stdout or sys.stdout, stderr or sys.stderr
    named = versions(spark)

    class DrillLines(StreamingQueryListener):
        def onQueryStarted(self, event):
            _say(out, f"SD-READY query={event.name or event.id}" + (" " + named if named else ""))

        def onQueryProgress(self, event):
            _say(out, "SD-PROGRESS " + event.progress.json.replace("\n", " "))

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            # QueryTerminatedEvent has an id and no name
            if event.exception:
                first, _, rest = str(event.exception).partition("\n")
                _say(err, f"StreamingQueryException: query {event.id} terminated: {first}")
                cause = next((ln.strip() for ln in rest.splitlines() if ln.strip().startswith("Caused by:")), None)
                if cause:
                    _say(err, cause)

    return DrillLines()


def watch(spark):
    """Register the listener on this session (once, however often it is called); returns it."""
    key = id(spark)
    if key not in _LISTENERS:
        _LISTENERS[key] = listener(spark=spark)
        spark.streams.addListener(_LISTENERS[key])
    return _LISTENERS[key]
