"""The schema Spark's own Kafka source gives its rows: what the groupkit-kafka source must match,
written out here rather than taken from our code."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# Spark's own Kafka source schema, field by field as KafkaRecordToRowConverter declares it
# (spark-sql-kafka-0-10): all fields nullable, headers only with includeHeaders=true.
SPARK_KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])
SPARK_KAFKA_HEADERS = StructField("headers", ArrayType(StructType([
    StructField("key", StringType()), StructField("value", BinaryType())])))
