/* Consume a whole topic with librdkafka's C API, for scripts/bench.
 *
 *   rdkafka_consume BROKERS TOPIC [prop=value ...]
 *
 *   rdkafka_consume BROKERS TOPIC --watermarks
 *
 * Assigns every partition from the beginning (no consumer group), reads until
 * every partition has reached the high watermark seen at start, and prints
 * "<records> <value bytes>" on stdout. With --watermarks it only prints the
 * sum of the partitions' high watermarks (-1 when the topic does not exist). A comparison peer only; not part of
 * the kwire product. */
#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *detail) {
  fprintf(stderr, "rdkafka_consume: %s: %s\n", what, detail);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(key, err);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s BROKERS TOPIC [prop=value ...]\n", argv[0]);
    return 2;
  }
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", argv[1]);
  set(conf, "group.id", "kwire-bench-rdkafka");
  set(conf, "enable.auto.commit", "false");
  set(conf, "enable.partition.eof", "true");
  for (int i = 3; i < argc && strcmp(argv[i], "--watermarks") != 0; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) die("bad property", argv[i]);
    *eq = '\0';
    set(conf, argv[i], eq + 1);
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) die("rd_kafka_new", err);
  rd_kafka_poll_set_consumer(rk);

  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[2], NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
  if (e) die("metadata", rd_kafka_err2str(e));
  const int only_watermarks = argc == 4 && strcmp(argv[3], "--watermarks") == 0;
  if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt == 0) {
    if (only_watermarks) {
      printf("-1\n");
      return 0;
    }
    die("metadata", "topic not found");
  }
  const int parts = md->topics[0].partition_cnt;

  rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(parts);
  int64_t *high = calloc((size_t)parts, sizeof *high);
  int pending = 0;
  for (int i = 0; i < parts; i++) {
    const int32_t p = md->topics[0].partitions[i].id;
    int64_t lo = 0, hi = 0;
    e = rd_kafka_query_watermark_offsets(rk, argv[2], p, &lo, &hi, 10000);
    if (e) die("watermarks", rd_kafka_err2str(e));
    high[p] = hi;
    if (hi > lo) {
      rd_kafka_topic_partition_list_add(assign, argv[2], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
      pending++;
    }
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  if (only_watermarks) {
    int64_t sum = 0;
    for (int i = 0; i < parts; i++) sum += high[i];
    printf("%" PRId64 "\n", sum);
    return 0;
  }
  e = rd_kafka_assign(rk, assign);
  if (e) die("assign", rd_kafka_err2str(e));
  rd_kafka_topic_partition_list_destroy(assign);

  uint64_t records = 0, bytes = 0;
  while (pending > 0) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (m->offset >= high[m->partition]) {
        high[m->partition] = INT64_MAX; /* count each partition once */
        pending--;
      }
    } else if (m->err) {
      die("consume", rd_kafka_message_errstr(m));
    } else {
      records++;
      bytes += m->len;
    }
    rd_kafka_message_destroy(m);
  }
  printf("%" PRIu64 " %" PRIu64 "\n", records, bytes);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  free(high);
  return 0;
}
