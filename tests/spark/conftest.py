"""Fixtures for the Spark interop tests: one local SparkSession with Spark's
Kafka connector, the broker under test, and the kwire command-line tool.

Environment (scripts/test sets all of it):
  KWIRE_BOOTSTRAP        broker HOST:PORT (required; the tests skip without it)
  KWIRE_SPARK_JARS_DIR   folder of spark-sql-kafka-0-10 and its dependencies
                         (scripts/spark-env jars)
  KWIRE_BIN              the kwire tool (default <repo>/build/bin/kwire)
  KWIRE_SPARK_LOG        file for Spark's log (default: in pytest's temp dir)
  PYTHONPATH             must reach the kwire package (<build dir>/python) for
                         the data source tests; Spark's Python workers inherit it
"""

import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _connector_jars(jar_dir: Path, pyspark_jars: Path) -> list[str]:
    """The connector's jars, less those PySpark ships itself (same artifact,
    any version): two versions of one library on the classpath would make
    the test depend on which one the class loader finds first."""

    def artifact(name: str) -> str:
        # scala-library-2.13.15.jar -> scala-library
        return re.sub(r"-\d[\w.\-]*\.jar$", "", name)

    shipped = {artifact(p.name) for p in pyspark_jars.glob("*.jar")}
    jars = sorted(p for p in jar_dir.glob("*.jar") if artifact(p.name) not in shipped)
    if not any(p.name.startswith("spark-sql-kafka-0-10_") for p in jars):
        raise RuntimeError(f"no spark-sql-kafka-0-10 jar in {jar_dir}")
    return [str(p) for p in jars]


@pytest.fixture(scope="session")
def bootstrap() -> str:
    value = os.environ.get("KWIRE_BOOTSTRAP")
    if not value:
        pytest.skip("KWIRE_BOOTSTRAP is not set: no broker to test against (scripts/test sets it)")
    return value


@pytest.fixture(scope="session")
def kwire_bin() -> Path:
    path = Path(os.environ.get("KWIRE_BIN", REPO / "build" / "bin" / "kwire"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"kwire tool not found at {path} (build first, or set KWIRE_BIN)")
    return path


@pytest.fixture(scope="session")
def spark_log(tmp_path_factory) -> Path:
    path = os.environ.get("KWIRE_SPARK_LOG")
    return Path(path) if path else tmp_path_factory.mktemp("spark-log") / "spark.log"


@pytest.fixture(scope="session")
def spark(bootstrap, spark_log, tmp_path_factory):
    import pyspark
    from pyspark.sql import SparkSession

    jar_dir = os.environ.get("KWIRE_SPARK_JARS_DIR")
    if not jar_dir:
        pytest.fail("KWIRE_SPARK_JARS_DIR is not set (scripts/spark-env jars prints it)")
    jars = _connector_jars(Path(jar_dir), Path(pyspark.__file__).parent / "jars")

    # Spark's log goes to a file the tests read (warnings about the offset
    # log's conf map, the resume messages); the console gets errors only.
    # MicroBatchExecution's INFO lines are kept: a test checks that the log
    # really is captured by finding "Resuming at batch" in it.
    log4j = tmp_path_factory.mktemp("spark-conf") / "log4j2.properties"
    log4j.write_text(
        "\n".join(
            [
                "rootLogger.level = warn",
                "rootLogger.appenderRef.file.ref = file",
                "rootLogger.appenderRef.console.ref = console",
                "appender.file.type = File",
                "appender.file.name = file",
                f"appender.file.fileName = {spark_log}",
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c: %m%n%ex",
                "appender.console.type = Console",
                "appender.console.name = console",
                "appender.console.target = SYSTEM_ERR",
                "appender.console.filter.threshold.type = ThresholdFilter",
                "appender.console.filter.threshold.level = error",
                "appender.console.layout.type = PatternLayout",
                "appender.console.layout.pattern = spark: %p %c{1}: %m%n",
                "logger.streaming.name = org.apache.spark.sql.execution.streaming",
                "logger.streaming.level = info",
                "",
            ]
        )
    )
    # Everything on the loopback interface (also what Spark's block manager
    # and its warning about the host name resolving to 127.0.0.1 look at).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (the kwire data source's planners and readers) run this
    # interpreter, the one that has pyarrow and imports kwire.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kwire-spark-interop")
        .config("spark.jars", ",".join(jars))
        # C1 only: these short runs start about twice as fast on a small host.
        .config("spark.driver.extraJavaOptions", f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile=file:{log4j}")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "768m")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    assert session.version == pyspark.__version__, (session.version, pyspark.__version__)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kwire_source(spark):
    """format("kwire") registered in the session."""
    try:
        from kwire.spark import KwireDataSource
    except ImportError as e:
        pytest.fail(f"kwire is not importable ({e}); put <build dir>/python on PYTHONPATH")
    spark.dataSource.register(KwireDataSource)
    return "kwire"
