/* Produce N records of S bytes with librdkafka's C API, for scripts/bench
 * --produce (the same work as kwire_produce_bench and `franz produce`).
 *
 *   rdkafka_produce BROKERS TOPIC RECORDS SIZE [prop=value ...]
 *       Sends RECORDS records without key, each with the same value of SIZE
 *       random letters A-Z (generated once), with rd_kafka_producev
 *       (RD_KAFKA_MSG_F_COPY, as rdkafka_performance does by default; the
 *       partitioner chooses the partition), serving delivery reports with
 *       rd_kafka_poll(0) after each send and waiting in rd_kafka_poll when the
 *       local queue is full (QUEUE_FULL); one rd_kafka_flush at the end. The
 *       delivery report callback counts successes and failures. Prints
 *       "<acknowledged> <seconds> <records/s>" (seconds from the first send
 *       to the end of the flush). Exit status 1 when a record failed or
 *       fewer or more than RECORDS were acknowledged.
 *   rdkafka_produce --settings [prop=value ...]
 *       Prints the library version and the settings applied.
 *
 * Settings: enable.idempotence=true and acks=all (stated; idempotence is off
 * by default in librdkafka), librdkafka's defaults otherwise (linger.ms=5,
 * batch.size=1000000, batch.num.messages=10000, compression.codec=none,
 * sticky.partitioning.linger.ms=10), then the command line's prop=value
 * pairs. A comparison peer only; not part of the kwire product. */
#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kSet[][2] = {
    {"enable.idempotence", "true"},
    {"acks", "all"},
};

/* Defaults read back from the configuration for --settings. */
static const char *const kShown[] = {"linger.ms",
                                     "batch.size",
                                     "batch.num.messages",
                                     "compression.codec",
                                     "sticky.partitioning.linger.ms",
                                     "queue.buffering.max.messages",
                                     "queue.buffering.max.kbytes"};

static uint64_t acked, failed;

static void die(const char *what, const char *detail) {
  fprintf(stderr, "rdkafka_produce: %s: %s\n", what, detail);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value, char *log, size_t cap) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(key, err);
  const size_t used = strlen(log);
  snprintf(log + used, cap - used, "%s%s=%s", used ? ", " : "", key, value);
}

static rd_kafka_conf_t *make_conf(int argc, char **argv, int first, char *log, size_t cap) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  for (size_t i = 0; i < sizeof kSet / sizeof kSet[0]; i++) set(conf, kSet[i][0], kSet[i][1], log, cap);
  for (int i = first; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) die("bad property", argv[i]);
    *eq = '\0';
    set(conf, argv[i], eq + 1, log, cap);
    *eq = '=';
  }
  return conf;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    acked++;
    return;
  }
  if (failed++ == 0) fprintf(stderr, "rdkafka_produce: record failed: %s\n", rd_kafka_err2str(m->err));
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  static char log[4096];
  if (argc >= 2 && strcmp(argv[1], "--settings") == 0) {
    rd_kafka_conf_t *conf = make_conf(argc, argv, 2, log, sizeof log);
    for (size_t i = 0; i < sizeof kShown / sizeof kShown[0]; i++) {
      char value[256];
      size_t size = sizeof value;
      if (rd_kafka_conf_get(conf, kShown[i], value, &size) != RD_KAFKA_CONF_OK) continue;
      if (strstr(log, kShown[i])) continue; /* given on the command line */
      const size_t used = strlen(log);
      snprintf(log + used, sizeof log - used, ", %s=%s (default)", kShown[i], value);
    }
    rd_kafka_conf_destroy(conf);
    printf("librdkafka %s: %s\n", rd_kafka_version_str(), log);
    return 0;
  }
  if (argc < 5) {
    fprintf(stderr, "usage: %s BROKERS TOPIC RECORDS SIZE [prop=value ...] | --settings [prop=value ...]\n", argv[0]);
    return 2;
  }
  const uint64_t records = strtoull(argv[3], NULL, 10);
  const size_t size = strtoull(argv[4], NULL, 10);
  if (records == 0) die("RECORDS", "must be positive");
  char err[512];
  rd_kafka_conf_t *conf = make_conf(argc, argv, 5, log, sizeof log);
  set(conf, "bootstrap.servers", argv[1], log, sizeof log);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) die("rd_kafka_new", err);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[2], NULL);
  if (!rkt) die("topic", rd_kafka_err2str(rd_kafka_last_error()));

  char *payload = malloc(size ? size : 1);
  srand(42);
  for (size_t i = 0; i < size; i++) payload[i] = (char)('A' + rand() % 26);

  const double t0 = now_s();
  for (uint64_t i = 0; i < records;) {
    const rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                                    RD_KAFKA_V_VALUE(payload, size), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 10);
      continue;
    }
    if (e) die("producev", rd_kafka_err2str(e));
    i++;
    rd_kafka_poll(rk, 0);
  }
  const rd_kafka_resp_err_t fe = rd_kafka_flush(rk, 300000);
  if (fe) die("flush", rd_kafka_err2str(fe));
  const double secs = now_s() - t0;
  rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(rk, err, sizeof err);
  if (fatal) die("fatal error", err);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  free(payload);
  printf("%" PRIu64 " %.3f %.0f\n", acked, secs, (double)acked / (secs > 0 ? secs : 1e-3));
  if (failed || acked != records) {
    fprintf(stderr, "rdkafka_produce: %" PRIu64 " acknowledged, %" PRIu64 " failed, expected %" PRIu64 "\n", acked,
            failed, records);
    return 1;
  }
  return 0;
}
