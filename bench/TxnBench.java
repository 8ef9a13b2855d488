// Java's producer in transactions of K records, for the transaction
// comparison in scripts/bench (the same work as `kwire_produce_bench
// --per-transaction K` and `franz produce-txn`). Run as a single source file
// against the broker's jars:
//
//   java -cp "$(scripts/kafka classpath)" bench/TxnBench.java BROKERS TOPIC RECORDS SIZE K [key=value ...]
//
// transactional.id java-bench-<pid>, acks=all, idempotence on, then the
// key=value producer properties given, Java's defaults otherwise. initTransactions(), then beginTransaction(), K send()s
// and commitTransaction() until RECORDS are sent. Prints "<acknowledged>
// <seconds> <records/s> <commits> <commits/s>", seconds from the first
// beginTransaction() to the last commit. A benchmark tool only.
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnBench {
  public static void main(String[] args) {
    if (args.length < 5) {
      System.err.println("usage: TxnBench BROKERS TOPIC RECORDS SIZE K [key=value ...]");
      System.exit(2);
    }
    final String topic = args[1];
    final long records = Long.parseLong(args[2]);
    final int size = Integer.parseInt(args[3]);
    final long perTxn = Long.parseLong(args[4]);
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    p.put("transactional.id", "java-bench-" + ProcessHandle.current().pid());
    for (int i = 5; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      if (eq <= 0) {
        System.err.println("TxnBench: not key=value: " + args[i]);
        System.exit(2);
      }
      p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    byte[] payload = new byte[size];
    Random rng = new Random(42);
    for (int i = 0; i < size; i++) payload[i] = (byte) ('A' + rng.nextInt(26));
    AtomicLong acked = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    long commits = 0;
    double secs;
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.initTransactions();
      long t0 = System.nanoTime();
      for (long i = 0; i < records; i++) {
        if (i % perTxn == 0) producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, payload), (md, e) -> {
          if (e == null) acked.incrementAndGet();
          else if (failed.getAndIncrement() == 0) System.err.println("TxnBench: record failed: " + e);
        });
        if ((i + 1) % perTxn == 0 || i + 1 == records) {
          producer.commitTransaction();
          commits++;
        }
      }
      secs = (System.nanoTime() - t0) / 1e9;
    } catch (RuntimeException e) {
      // Said here: the source-file launcher fails on an exception leaving main.
      System.err.println("TxnBench: " + e);
      System.exit(1);
      return;
    }
    double span = Math.max(secs, 1e-3);
    System.out.printf("%d %.3f %.0f %d %.1f%n", acked.get(), secs, acked.get() / span, commits, commits / span);
    if (failed.get() != 0 || acked.get() != records) {
      System.err.printf("TxnBench: %d acknowledged, %d failed, expected %d%n", acked.get(), failed.get(), records);
      System.exit(1);
    }
  }
}
