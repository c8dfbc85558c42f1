"""`mcptap analyze DATASET --engine spark`: the dataset's recorded tables read by Spark, their
rows gathered by session (one repartition of the union of the tables), and each partition's
sessions analysed on an executor by engine/fleet.py's `analyse_and_place` (the function the local
engine runs, around `engine.analyze`) in `mapInArrow`; each executor writes its derived parts into
the dataset itself and hands back only where they are and its Report. Needs pyspark
(mcptap[spark]) and a Java runtime (17 or later); every executor needs mcptap installed and the
dataset's folder at the same path (a shared file system)."""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from mcptap.store import dataset, tablecopy

TAG = "mcptap_table"
"""The column naming, in the union of the tables, the table a row came from."""


def run(root: Path, master: str, frames: int, group_frames: int, job, fallback_revision,
        policy) -> list[tuple[list, object]]:
    """Each partition's (placed parts, Report) from `job(root, tables, fallback_revision, policy)`
    (fleet.analyse_and_place), the partitions being about `group_frames` frames."""
    scratch = tempfile.mkdtemp(prefix="mcptap-spark-")  # Spark's logging setup, removed with the session
    try:
        spark = session(master, Path(scratch))
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        union = None
        for table in tablecopy.RECORDED:
            if not (root / table).is_dir():
                continue
            df = (spark.read.option("basePath", str(root / table)).schema(_spark_schema(table))
                  .parquet(str(root / table)))
            from pyspark.sql import functions as F

            df = df.withColumn(TAG, F.lit(table))
            if table == "sessions":
                df = df.withColumn("session_id", F.col("id"))
            union = df if union is None else union.unionByName(df, allowMissingColumns=True)
        if union is None:
            return []
        partitions = max(spark.sparkContext.defaultParallelism, frames // group_frames + 1)
        work = functools.partial(_partition, job, str(root), fallback_revision, policy)
        out = union.repartition(partitions, "session_id").mapInArrow(work, "result binary")
        try:
            done = out.collect()
        except Exception as exc:  # an executor's failure, as pyspark's own (release-dependent) types
            raise dataset.DatasetError(f"Spark could not analyse {root}: {_cause(exc)}") from None
        return [pickle.loads(row["result"]) for row in done]
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _cause(exc: BaseException) -> str:
    """An executor's failure in one line: the DatasetError an executor raised, or the first line
    of Spark's message."""
    text = str(exc)
    mark = "DatasetError: "
    if mark in text:
        text = text[text.rindex(mark) + len(mark):]
    return dataset.unreadable(text.strip().splitlines()[0] if text.strip() else type(exc).__name__)


def session(master: str, scratch: Path):
    """A Spark session at `master` whose Python workers run this interpreter, on loopback here;
    its logging setup is written into the folder `scratch`."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if java is None or not os.access(java, os.X_OK):
        where = f": JAVA_HOME ({home!r}) has no bin/java" if home else " (none on PATH)"
        raise dataset.DatasetError(f"--engine spark needs a Java runtime{where}; 17 or later (on Debian: "
                                   "apt-get install openjdk-17-jre-headless)")
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise dataset.DatasetError("--engine spark needs pyspark: pip install 'mcptap[spark]'") from None
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support", category=FutureWarning)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    quiet = scratch / "log4j2.properties"
    quiet.write_text("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                     "appender.console.type = Console\nappender.console.name = console\n"
                     "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                     "appender.console.layout.pattern = spark: %p %c{1}: %m%n\n", encoding="utf-8")
    builder = (SparkSession.builder.master(master).appName("mcptap analyze")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{quiet}")
               .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{quiet}")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "20000")
               .config("spark.log.level", "ERROR"))
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM could not start: pyspark's own exception types vary by release
        raise dataset.DatasetError(f"Spark could not start at {master}: {' '.join(str(exc).split())[:300]}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _spark_schema(table: str):
    from pyspark.sql import types as T

    kinds = {"string": T.StringType(), "int64": T.LongType(), "float64": T.DoubleType(), "binary": T.BinaryType()}
    fields = [T.StructField(name, kinds[kind]) for name, kind in tablecopy.COLUMNS[table]]
    return T.StructType(fields + [T.StructField("day", T.StringType())])


def _partition(job, root: str, fallback_revision, policy, batches):
    """On an executor: the partition's rows (every table's, tagged) split by table, analysed,
    placed; one row holding the pickled (placed parts, Report)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = pa.Table.from_batches(list(batches))
    if rows.num_rows == 0:
        return
    tables = {}
    for table in tablecopy.RECORDED:
        chosen = rows.filter(pc.equal(rows.column(TAG), table))
        names = [name for name, _ in tablecopy.COLUMNS[table]] + ["day"]
        tables[table] = chosen.select(names).cast(tablecopy.arrow_schema(table).append(pa.field("day", pa.string())))
    if tables["sessions"].num_rows == 0:
        return
    result = job(root, tables, fallback_revision, policy)
    yield pa.RecordBatch.from_pydict({"result": [pickle.dumps(result)]})
