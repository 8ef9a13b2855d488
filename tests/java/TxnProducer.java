// Writes transactions with Kafka's own Java producer, for kwire's
// read_committed / read_uncommitted tests. Run as a single-file program:
//   java -cp "$(scripts/kafka classpath)" tests/java/TxnProducer.java \
//        BOOTSTRAP TOPIC TRANSACTIONAL_ID TRANSACTIONS RECORDS_PER_TRANSACTION
// Transaction t holds values "t<t>-<i>" (keys "k<i>"); every transaction with
// t % 3 == 1 is aborted, the others are committed. Partitions are chosen by
// key. Prints "committed N aborted M" at the end.
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public class TxnProducer {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    props.put("transactional.id", args[2]);
    props.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
    props.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
    int transactions = Integer.parseInt(args[3]);
    int perTransaction = Integer.parseInt(args[4]);
    int committed = 0, aborted = 0;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      producer.initTransactions();
      for (int t = 0; t < transactions; t++) {
        producer.beginTransaction();
        for (int i = 0; i < perTransaction; i++)
          producer.send(new ProducerRecord<>(args[1], "k" + i, "t" + t + "-" + i));
        producer.flush();
        if (t % 3 == 1) {
          producer.abortTransaction();
          aborted += perTransaction;
        } else {
          producer.commitTransaction();
          committed += perTransaction;
        }
      }
    }
    System.out.println("committed " + committed + " aborted " + aborted);
  }
}
