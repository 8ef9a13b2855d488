#!/usr/bin/env bash
# The purchases job (Kafka -> from_json -> action = 'purchase' AND amount > 0
# -> the event's columns, partition, offset; maxOffsetsPerTrigger 20000,
# AvailableNow) into tables, side by side:
#   kwire-postgres   build/bin/purchases --output-postgres (C++, COPY, exactly once)
#   kwire-delta      bench/kwire_purchases_to_table.py delta   (Python, deltalake)
#   kwire-iceberg    bench/kwire_purchases_to_table.py iceberg (Python, pyiceberg, SQL catalog on SQLite)
#   kwire-parquet    bench/kwire_purchases_to_table.py parquet (Python, file sink)
#   spark-parquet    bench/spark_purchases_to_table.py parquet (Spark 4.2 local[2], file sink)
#   spark-postgres   bench/spark_purchases_to_table.py postgres (foreachBatch + JDBC append)
# Each run gets a fresh checkpoint and output; wall time and the peak RSS of
# the whole process tree (bench/tree_peak.py: a JVM counts) are printed, with
# the rows the output holds afterwards.
#
# Usage: bench/table_sinks.sh TOPIC [ROUNDS] [CONTENDER...]
# Environment: KWIRE_BOOTSTRAP (broker), KWIRE_POSTGRES_ENV (scripts/postgres
# start's env file), KWIRE_PG_JDBC_JAR (org.postgresql:postgresql jar; default
# the one in ~/.m2), PY (python with kwire, deltalake, pyiceberg; default
# build/python-venv/bin/python with PYTHONPATH=build/python).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
TOPIC=${1:?topic}
ROUNDS=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
CONTENDERS=("$@")
[ ${#CONTENDERS[@]} -gt 0 ] || CONTENDERS=(kwire-postgres kwire-delta kwire-iceberg kwire-parquet spark-parquet spark-postgres)
BOOT=${KWIRE_BOOTSTRAP:?KWIRE_BOOTSTRAP}
# shellcheck disable=SC1090
set -a; . "${KWIRE_POSTGRES_ENV:?KWIRE_POSTGRES_ENV}"; set +a
export PGPASSWORD=$KWIRE_POSTGRES_PASSWORD
PY=${PY:-$REPO/build/python-venv/bin/python}
export PYTHONPATH=${PYTHONPATH:-$REPO/build/python}
SPARK_PY=$("$REPO/scripts/spark-env" python)
JARS=$("$REPO/scripts/spark-env" jars)
JDBC_JAR=${KWIRE_PG_JDBC_JAR:-$(ls ~/.m2/repository/org/postgresql/postgresql/*/postgresql-*.jar | tail -1)}
PSQL="$KWIRE_POSTGRES_BIN/psql"
WORK=$(mktemp -d /tmp/kwire-table-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
jdbc_url="jdbc:postgresql://$KWIRE_POSTGRES_HOST:$KWIRE_POSTGRES_PORT/kwire"

count_pg() { "$PSQL" "$KWIRE_POSTGRES_URL" -Atc "SELECT count(*) FROM $1"; }
count_parquet() { "$PY" -c "import pyarrow.dataset as d, sys; print(d.dataset(sys.argv[1], format='parquet').count_rows())" "$1"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  for c in "${CONTENDERS[@]}"; do
    d="$WORK/$c-$round"; mkdir -p "$d"
    table="bench_${c//-/_}_${round}_$$"
    case "$c" in
      kwire-postgres)
        line=$("$PY" "$REPO/bench/tree_peak.py" "$REPO/build/bin/purchases" --bootstrap "$BOOT" --topic "$TOPIC" \
          --checkpoint "$d/ck" --output-postgres "$KWIRE_POSTGRES_URL" --table "$table" | tail -1)
        rows=$(count_pg "$table") ;;
      kwire-delta|kwire-iceberg|kwire-parquet)
        line=$("$PY" "$REPO/bench/tree_peak.py" "$PY" "$REPO/bench/kwire_purchases_to_table.py" "$BOOT" "$TOPIC" \
          "$d/ck" "${c#kwire-}" "$d/out" | tail -1)
        case "$c" in
          kwire-delta) rows=$("$PY" -c "import deltalake, sys; print(deltalake.DeltaTable(sys.argv[1]).to_pyarrow_dataset().count_rows())" "$d/out") ;;
          kwire-iceberg) rows=$(count_parquet "$d/out/warehouse/bench/purchases/data") ;;
          *) rows=$(count_parquet "$d/out") ;;
        esac ;;
      spark-parquet)
        line=$("$PY" "$REPO/bench/tree_peak.py" "$SPARK_PY" "$REPO/bench/spark_purchases_to_table.py" "$BOOT" "$TOPIC" \
          "$d/ck" "$JARS" parquet "$d/out" | tail -1)
        rows=$(count_parquet "$d/out") ;;
      spark-postgres)
        line=$("$PY" "$REPO/bench/tree_peak.py" "$SPARK_PY" "$REPO/bench/spark_purchases_to_table.py" "$BOOT" "$TOPIC" \
          "$d/ck" "$JARS" postgres "$jdbc_url" "$table" kwire "$KWIRE_POSTGRES_PASSWORD" "$JDBC_JAR" | tail -1)
        rows=$(count_pg "$table") ;;
      *) echo "unknown contender $c" >&2; exit 2 ;;
    esac
    echo "round=$round contender=$c $line rows=$rows"
    rm -rf "$d"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
