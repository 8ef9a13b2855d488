// franz-go as a comparison peer for scripts/bench. Not part of the kwire product.
//
//	franz consume BROKERS TOPIC
//	    Lists every partition's start and end offsets (kadm), assigns every
//	    non-empty partition from its start (kgo.ConsumePartitions, no group),
//	    polls until each partition has returned the record before its end
//	    offset, and prints "<records> <value bytes>". The count must equal the
//	    sum of (end - start), else the exit status is 1. Settings: franz-go's
//	    defaults with the fetch sizes and wait stated explicitly to match
//	    kwire's defaults (FetchMaxBytes 50 MiB, FetchMaxPartitionBytes 1 MiB,
//	    FetchMinBytes 1, FetchMaxWait 500 ms); CRC checking stays on (default).
//
//	franz settings
//	    Prints the franz-go version and the settings above.
//
//	franz produce BROKERS TOPIC RECORDS SIZE CODEC
//	    Sends RECORDS records without key, each with the same value of SIZE
//	    random letters A-Z (generated once), with kgo's Produce and a promise
//	    that counts successes and failures (Produce blocks while
//	    MaxBufferedRecords are buffered), then one Flush. CODEC: none or lz4.
//	    Prints "<acknowledged> <seconds> <records/s>" (seconds from the first
//	    Produce to the end of Flush). The exit status is 1 when a record
//	    failed or fewer or more than RECORDS were acknowledged. Settings:
//	    franz-go's producer defaults (idempotent, ProducerLinger 10 ms,
//	    ProducerBatchMaxBytes 1000012, MaxBufferedRecords 50000, default
//	    partitioner: sticky for records without key) with
//	    RequiredAcks(AllISRAcks()) stated and ProducerBatchCompression(CODEC)
//	    (the default would be snappy).
//
//	franz produce-settings
//	    Prints the franz-go version and the produce settings above.
//
//	franz share BROKERS GROUP TOPIC RECORDS
//	    Joins share group GROUP (kgo.ShareGroup) on TOPIC, polls
//	    (PollFetches) and acknowledges every record explicitly with
//	    Record.Ack(AckAccept) until RECORDS are accepted (records a poll
//	    returns beyond them are released with AckRelease), then FlushAcks
//	    and Close (leaves the group). The group must start at the earliest
//	    offset (group config share.auto.offset.reset=earliest, set by the
//	    caller). Prints "<accepted> <seconds> <records/s> <redelivered>
//	    <ack errors>", seconds from the client's creation to the end of
//	    FlushAcks; <redelivered> counts records with a delivery count above 1.
//	    The exit status is 1 when an acknowledgement failed. Settings:
//	    FetchMaxBytes 50 MiB, FetchMinBytes 1, FetchMaxWait 500 ms (stated,
//	    as kwire's defaults), ShareMaxRecords 500 (franz-go's default,
//	    kwire's max.poll.records), a ShareAckCallback counting failed
//	    partitions; defaults otherwise.
//
//	franz share-settings
//	    Prints the franz-go version and the share settings above.
//
//	franz decode FILE VERSION SECONDS
//	    FILE holds a Fetch response body (after the response header) of the
//	    given version. It is parsed once with kmsg (not timed); then every
//	    partition is passed to kgo.ProcessFetchPartition (CRC checked, records
//	    materialised as *kgo.Record) repeatedly for about SECONDS on one core
//	    (GOMAXPROCS=1, so garbage collection is counted on that core too).
//	    Prints "records=N passes=P seconds=S cpu_seconds=C records_per_s=R
//	    records_per_cpu_s=Q".
package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const settings = "FetchMaxBytes=52428800, FetchMaxPartitionBytes=1048576, FetchMinBytes=1, " +
	"FetchMaxWait=500ms, CRC validation on (default), other options default"

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franz: "+format+"\n", args...)
	os.Exit(1)
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func consume(brokers, topic string) {
	ctx := context.Background()
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		fail("client: %v", err)
	}
	adm := kadm.NewClient(admin)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		fail("list start offsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		fail("list end offsets: %v", err)
	}
	admin.Close()
	if ends.Error() != nil || starts.Error() != nil {
		fail("offsets: %v %v", ends.Error(), starts.Error())
	}
	assign := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	var expected int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic {
			return
		}
		s, ok := starts.Lookup(topic, o.Partition)
		if !ok {
			fail("no start offset for partition %d", o.Partition)
		}
		if o.Offset > s.Offset {
			assign[o.Partition] = kgo.NewOffset().At(s.Offset)
			end[o.Partition] = o.Offset
			expected += o.Offset - s.Offset
		}
	})
	if len(ends) == 0 {
		fail("topic %s not found", topic)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxBytes(52428800),
		kgo.FetchMaxPartitionBytes(1048576),
		kgo.FetchMinBytes(1),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		fail("client: %v", err)
	}
	var records, bytes int64
	pending := len(end)
	for pending > 0 {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail("fetch: %v", errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			e, ok := end[r.Partition]
			if !ok || r.Offset >= e {
				return
			}
			records++
			bytes += int64(len(r.Value))
			if r.Offset+1 >= e {
				delete(end, r.Partition)
				pending--
			}
		})
	}
	cl.Close()
	fmt.Printf("%d %d\n", records, bytes)
	if records != expected {
		fail("read %d records, expected %d", records, expected)
	}
}

const produceSettings = "idempotent (default), RequiredAcks(AllISRAcks()), ProducerBatchCompression(none or lz4), " +
	"defaults otherwise: ProducerLinger=10ms, ProducerBatchMaxBytes=1000012, MaxBufferedRecords=50000, " +
	"sticky partitioning of records without key"

// producerRun is what both produce modes share: the client (idempotent,
// acks=all, the codec, extra options), the value of `size` random letters
// and a promise counting acknowledged and failed records.
type producerRun struct {
	cl       *kgo.Client
	payload  []byte
	acked    atomic.Int64
	failed   atomic.Int64
	firstErr sync.Once
}

func newProducerRun(brokers, topic string, size int, comp kgo.CompressionCodec, extra ...kgo.Opt) *producerRun {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(brokers),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(comp),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail("client: %v", err)
	}
	r := &producerRun{cl: cl, payload: make([]byte, size)}
	rng := rand.New(rand.NewSource(42))
	for i := range r.payload {
		r.payload[i] = byte('A' + rng.Intn(26))
	}
	return r
}

func (r *producerRun) promise(_ *kgo.Record, err error) {
	if err == nil {
		r.acked.Add(1)
		return
	}
	r.failed.Add(1)
	r.firstErr.Do(func() { fmt.Fprintf(os.Stderr, "franz: record failed: %v\n", err) })
}

// check fails unless every one of `records` was acknowledged.
func (r *producerRun) check(records int64) {
	if n := r.acked.Load(); r.failed.Load() != 0 || n != records {
		fail("%d acknowledged, %d failed, expected %d", n, r.failed.Load(), records)
	}
}

func produce(brokers, topic string, records int64, size int, codec string) {
	var comp kgo.CompressionCodec
	switch codec {
	case "none":
		comp = kgo.NoCompression()
	case "lz4":
		comp = kgo.Lz4Compression()
	default:
		fail("unknown codec %q (none or lz4)", codec)
	}
	r := newProducerRun(brokers, topic, size, comp)
	ctx := context.Background()
	t0 := time.Now()
	for i := int64(0); i < records; i++ {
		// The value is shared: kgo does not modify it.
		r.cl.Produce(ctx, &kgo.Record{Value: r.payload}, r.promise)
	}
	if err := r.cl.Flush(ctx); err != nil {
		fail("flush: %v", err)
	}
	secs := time.Since(t0).Seconds()
	r.cl.Close()
	n := r.acked.Load()
	fmt.Printf("%d %.3f %.0f\n", n, secs, float64(n)/max(secs, 1e-3))
	r.check(records)
}

// produceTxn sends the records in transactions of perTxn records each
// (transactional id franz-bench-<pid>): BeginTransaction, perTxn Produce,
// Flush and EndTransaction(TryCommit). Prints "<acknowledged> <seconds>
// <records/s> <commits> <commits/s>" from the first BeginTransaction to the
// last commit.
func produceTxn(brokers, topic string, records int64, size int, perTxn int64) {
	r := newProducerRun(brokers, topic, size, kgo.NoCompression(),
		kgo.TransactionalID(fmt.Sprintf("franz-bench-%d", os.Getpid())))
	cl := r.cl
	ctx := context.Background()
	var commits int64
	t0 := time.Now()
	for i := int64(0); i < records; i++ {
		if i%perTxn == 0 {
			if err := cl.BeginTransaction(); err != nil {
				fail("begin: %v", err)
			}
		}
		cl.Produce(ctx, &kgo.Record{Value: r.payload}, r.promise)
		if (i+1)%perTxn == 0 || i+1 == records {
			if err := cl.Flush(ctx); err != nil {
				fail("flush: %v", err)
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				fail("commit: %v", err)
			}
			commits++
		}
	}
	secs := time.Since(t0).Seconds()
	cl.Close()
	n := r.acked.Load()
	span := max(secs, 1e-3)
	fmt.Printf("%d %.3f %.0f %d %.1f\n", n, secs, float64(n)/span, commits, float64(commits)/span)
	r.check(records)
}

const shareSettings = "ShareGroup, ConsumeTopics, Record.Ack(AckAccept) per record, FlushAcks then Close; " +
	"FetchMaxBytes=52428800, FetchMinBytes=1, FetchMaxWait=500ms, ShareMaxRecords=500, " +
	"ShareAckCallback counting failures, other options default (pre-fetching on)"

func share(brokers, group, topic string, records int64) {
	ctx := context.Background()
	var ackErrors atomic.Int64
	var firstErr sync.Once
	t0 := time.Now()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.FetchMaxBytes(52428800),
		kgo.FetchMinBytes(1),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ShareMaxRecords(500),
		kgo.ShareAckCallback(func(_ *kgo.Client, results kgo.ShareAckResults) {
			for _, r := range results {
				if r.Err != nil {
					ackErrors.Add(1)
					firstErr.Do(func() { fmt.Fprintf(os.Stderr, "franz: acknowledgement failed: %v\n", r.Err) })
				}
			}
		}),
	)
	if err != nil {
		fail("client: %v", err)
	}
	var accepted, redelivered int64
	for accepted < records {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail("fetch: %v", errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if accepted >= records {
				r.Ack(kgo.AckRelease)
				return
			}
			if r.DeliveryCount() > 1 {
				redelivered++
			}
			r.Ack(kgo.AckAccept)
			accepted++
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		fail("flush acks: %v", err)
	}
	secs := time.Since(t0).Seconds()
	cl.Close()
	fmt.Printf("%d %.3f %.0f %d %d\n", accepted, secs, float64(accepted)/max(secs, 1e-3), redelivered, ackErrors.Load())
	if ackErrors.Load() != 0 {
		fail("%d acknowledgements failed", ackErrors.Load())
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func decode(file string, ver int16, seconds float64) {
	runtime.GOMAXPROCS(1)
	body, err := os.ReadFile(file)
	if err != nil {
		fail("%v", err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = ver
	if err := resp.ReadFrom(body); err != nil {
		fail("parse %s as Fetch v%d: %v", file, ver, err)
	}
	type part struct {
		topic string
		p     *kmsg.FetchResponseTopicPartition
	}
	var parts []part
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			parts = append(parts, part{resp.Topics[i].Topic, &resp.Topics[i].Partitions[j]})
		}
	}
	dec := kgo.DefaultDecompressor()
	pass := func() int64 {
		var n int64
		for _, x := range parts {
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Topic: x.topic, Partition: x.p.Partition, Offset: 0,
			}, x.p, dec, nil)
			if fp.Err != nil {
				fail("partition %d: %v", x.p.Partition, fp.Err)
			}
			n += int64(len(fp.Records))
		}
		return n
	}
	perPass := pass() // warm-up, and the count every pass must repeat
	if perPass == 0 {
		fail("no records in %s", file)
	}
	var passes, total int64
	cpu0 := cpuSeconds()
	t0 := time.Now()
	for time.Since(t0).Seconds() < seconds {
		n := pass()
		if n != perPass {
			fail("pass decoded %d records, the first %d", n, perPass)
		}
		total += n
		passes++
	}
	wall := time.Since(t0).Seconds()
	cpu := cpuSeconds() - cpu0
	fmt.Printf("records=%d passes=%d seconds=%.3f cpu_seconds=%.3f records_per_s=%.0f records_per_cpu_s=%.0f\n",
		perPass, passes, wall, cpu, float64(total)/wall, float64(total)/cpu)
}

func main() {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case "consume":
			if len(os.Args) == 4 {
				consume(os.Args[2], os.Args[3])
				return
			}
		case "settings":
			fmt.Printf("franz-go %s: %s\n", version(), settings)
			return
		case "produce-settings":
			fmt.Printf("franz-go %s: %s\n", version(), produceSettings)
			return
		case "produce":
			if len(os.Args) == 7 {
				n, err1 := strconv.ParseInt(os.Args[4], 10, 64)
				size, err2 := strconv.Atoi(os.Args[5])
				if err1 != nil || err2 != nil || n <= 0 || size < 0 {
					fail("bad RECORDS or SIZE")
				}
				produce(os.Args[2], os.Args[3], n, size, os.Args[6])
				return
			}
		case "produce-txn":
			if len(os.Args) == 7 {
				n, err1 := strconv.ParseInt(os.Args[4], 10, 64)
				size, err2 := strconv.Atoi(os.Args[5])
				k, err3 := strconv.ParseInt(os.Args[6], 10, 64)
				if err1 != nil || err2 != nil || err3 != nil || n <= 0 || size < 0 || k <= 0 {
					fail("bad RECORDS, SIZE or PER_TXN")
				}
				produceTxn(os.Args[2], os.Args[3], n, size, k)
				return
			}
		case "share":
			if len(os.Args) == 6 {
				n, err := strconv.ParseInt(os.Args[5], 10, 64)
				if err != nil || n <= 0 {
					fail("bad RECORDS")
				}
				share(os.Args[2], os.Args[3], os.Args[4], n)
				return
			}
		case "share-settings":
			fmt.Printf("franz-go %s: %s\n", version(), shareSettings)
			return
		case "decode":
			if len(os.Args) == 5 {
				v, err1 := strconv.ParseInt(os.Args[3], 10, 16)
				s, err2 := strconv.ParseFloat(os.Args[4], 64)
				if err1 != nil || err2 != nil {
					fail("bad VERSION or SECONDS")
				}
				decode(os.Args[2], int16(v), s)
				return
			}
		}
	}
	fmt.Fprintln(os.Stderr, "usage: franz consume BROKERS TOPIC | franz settings | franz decode FILE VERSION SECONDS | "+
		"franz produce BROKERS TOPIC RECORDS SIZE CODEC | franz produce-txn BROKERS TOPIC RECORDS SIZE PER_TXN | "+
		"franz produce-settings | franz share BROKERS GROUP TOPIC RECORDS | franz share-settings")
	os.Exit(2)
}
