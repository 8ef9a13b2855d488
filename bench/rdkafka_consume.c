/* Consume a whole topic with librdkafka's C API, for scripts/bench.
 *
 *   rdkafka_consume BROKERS TOPIC [prop=value ...]   read the topic, print
 *                                                    "<records> <value bytes>"
 *   rdkafka_consume BROKERS TOPIC --watermarks       print the sum of the high
 *                                                    watermarks (-1: no topic)
 *   rdkafka_consume --settings [prop=value ...]      print the library version
 *                                                    and the settings applied
 *
 * Reading: the low and high watermarks of every partition are queried first;
 * every non-empty partition is assigned from its low watermark (no group
 * join: assign, not subscribe), and messages are taken from the consumer
 * queue with the batch API (rd_kafka_consume_batch_queue, up to 10,000 per
 * call). A partition is done once a message at or past its high watermark
 * minus one arrives; partition EOF events are not used. The count read must
 * equal the sum of (high - low), else the exit status is 1.
 *
 * Settings: the tuned set below, then the command line's prop=value pairs. A
 * setting the linked library does not know (e.g. fetch.queue.backoff.ms
 * before 2.1.0) is skipped and reported with --settings. A comparison peer
 * only; not part of the kwire product. */
#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Each with the reason it is set:
 *   fetch.queue.backoff.ms=10  the default (1000) stops fetching for 1 s
 *                              whenever the prefetch queue passes
 *                              queued.min.messages / queued.max.messages.kbytes
 *   check.crcs=true            kwire checks CRC-32C by default
 *   fetch.max.bytes, max.partition.fetch.bytes, fetch.min.bytes,
 *   fetch.wait.max.ms          kwire's defaults (librdkafka's too), stated
 *   enable.partition.eof=false the end is known from the watermarks
 *   enable.auto.commit=false,
 *   enable.auto.offset.store=false  no offsets are committed */
static const char *const kTuned[][2] = {
    {"fetch.queue.backoff.ms", "10"},         {"check.crcs", "true"},          {"fetch.max.bytes", "52428800"},
    {"max.partition.fetch.bytes", "1048576"}, {"fetch.min.bytes", "1"},        {"fetch.wait.max.ms", "500"},
    {"enable.partition.eof", "false"},        {"enable.auto.commit", "false"}, {"enable.auto.offset.store", "false"},
};

enum { kBatch = 10000 };

static void die(const char *what, const char *detail) {
  fprintf(stderr, "rdkafka_consume: %s: %s\n", what, detail);
  exit(1);
}

/* Sets KEY=VALUE; unknown keys are skipped when `optional`. Appends
 * "key=value" or "key=value(skipped: unknown)" to `log`. */
static void set(rd_kafka_conf_t *conf, const char *key, const char *value, int optional, char *log, size_t cap) {
  char err[512];
  const rd_kafka_conf_res_t res = rd_kafka_conf_set(conf, key, value, err, sizeof err);
  const size_t used = strlen(log);
  if (res == RD_KAFKA_CONF_UNKNOWN && optional) {
    snprintf(log + used, cap - used, "%s%s=%s (skipped: unknown to this version)", used ? ", " : "", key, value);
    return;
  }
  if (res != RD_KAFKA_CONF_OK) die(key, err);
  snprintf(log + used, cap - used, "%s%s=%s", used ? ", " : "", key, value);
}

static rd_kafka_conf_t *make_conf(int argc, char **argv, int first, char *log, size_t cap) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  for (size_t i = 0; i < sizeof kTuned / sizeof kTuned[0]; i++) set(conf, kTuned[i][0], kTuned[i][1], 1, log, cap);
  for (int i = first; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) die("bad property", argv[i]);
    *eq = '\0';
    set(conf, argv[i], eq + 1, 0, log, cap);
    *eq = '=';
  }
  return conf;
}

int main(int argc, char **argv) {
  static char log[4096];
  if (argc >= 2 && strcmp(argv[1], "--settings") == 0) {
    rd_kafka_conf_t *conf = make_conf(argc, argv, 2, log, sizeof log);
    rd_kafka_conf_destroy(conf);
    printf("librdkafka %s: %s\n", rd_kafka_version_str(), log);
    return 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: %s BROKERS TOPIC [prop=value ...] | BROKERS TOPIC --watermarks | --settings\n", argv[0]);
    return 2;
  }
  const int only_watermarks = argc == 4 && strcmp(argv[3], "--watermarks") == 0;
  char err[512];
  rd_kafka_conf_t *conf = make_conf(argc, argv, only_watermarks ? argc : 3, log, sizeof log);
  set(conf, "bootstrap.servers", argv[1], 0, log, sizeof log);
  /* Required by rd_kafka_assign's consumer; no join happens without subscribe. */
  set(conf, "group.id", "kwire-bench-rdkafka", 0, log, sizeof log);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) die("rd_kafka_new", err);
  rd_kafka_poll_set_consumer(rk);

  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[2], NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
  if (e) die("metadata", rd_kafka_err2str(e));
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
  int64_t expected = 0, high_sum = 0;
  int pending = 0;
  for (int i = 0; i < parts; i++) {
    const int32_t p = md->topics[0].partitions[i].id;
    if (p < 0 || p >= parts) die("metadata", "partition id out of range");
    int64_t lo = 0, hi = 0;
    e = rd_kafka_query_watermark_offsets(rk, argv[2], p, &lo, &hi, 10000);
    if (e) die("watermarks", rd_kafka_err2str(e));
    high[p] = hi;
    high_sum += hi;
    if (hi > lo) {
      rd_kafka_topic_partition_list_add(assign, argv[2], p)->offset = lo;
      expected += hi - lo;
      pending++;
    } else {
      high[p] = INT64_MIN; /* nothing to read */
    }
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  if (only_watermarks) {
    printf("%" PRId64 "\n", high_sum);
    rd_kafka_topic_partition_list_destroy(assign);
    rd_kafka_destroy(rk);
    free(high);
    return 0;
  }
  e = rd_kafka_assign(rk, assign);
  if (e) die("assign", rd_kafka_err2str(e));
  rd_kafka_topic_partition_list_destroy(assign);

  rd_kafka_queue_t *queue = rd_kafka_queue_get_consumer(rk);
  if (!queue) die("queue", "no consumer queue");
  rd_kafka_message_t **batch = malloc(kBatch * sizeof *batch);
  uint64_t records = 0, bytes = 0;
  while (pending > 0) {
    const ssize_t n = rd_kafka_consume_batch_queue(queue, 1000, batch, kBatch);
    if (n < 0) die("consume_batch_queue", rd_kafka_err2str(rd_kafka_last_error()));
    for (ssize_t i = 0; i < n; i++) {
      rd_kafka_message_t *m = batch[i];
      if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) die("consume", rd_kafka_message_errstr(m));
      } else if (m->partition >= 0 && m->partition < parts && m->offset < high[m->partition]) {
        records++;
        bytes += m->len;
        if (m->offset + 1 >= high[m->partition]) {
          high[m->partition] = INT64_MIN; /* done; later messages are not counted */
          pending--;
        }
      }
      rd_kafka_message_destroy(m);
    }
  }
  printf("%" PRIu64 " %" PRIu64 "\n", records, bytes);
  free(batch);
  rd_kafka_queue_destroy(queue);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  free(high);
  if ((int64_t)records != expected) {
    fprintf(stderr, "rdkafka_consume: read %" PRIu64 " records, expected %" PRId64 "\n", records, expected);
    return 1;
  }
  return 0;
}
