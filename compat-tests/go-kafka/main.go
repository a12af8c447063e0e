// Command compat-go-kafka runs the Kafka scenarios of tests/kafka.rs with franz-go (kgo, and kadm
// for the admin calls and offset lookups; pinned in go.mod and go.sum) against a broker's Kafka
// listener:
//
//	compat-go-kafka SCENARIO --bootstrap HOST:PORT --topic T [...]
//
//	produce-consume[-idempotent] [--count 10000] [--compression none|gzip|snappy|lz4|zstd]
//	group-join-leave --group G [--count 20000]
//	commit-resume-restart --group G --phase commit [--count 10000]
//	commit-resume-restart --group G --phase resume --expect P:OFFSET,... [--count 10000]
//	admin-topics
//
// It prints one result line, `... result=ok` and exits 0, or `result=fail: reason` and exits 1.
//
// The checks are those of java/kafka/KafkaScenarios.java, record for record, as far as franz-go
// lets them be made:
//
// produce-consume: a producer (acks=all, no idempotence, linger 5 ms, the given compression) sends
// `count` records to a topic that does not exist yet; it allows auto-creation (kgo does not by
// default), so that its first Metadata request creates it. Record i has key "key-<i>", a value of
// varying length (empty, about 1 KiB, or a few hundred bytes; one record is a tombstone with a nil
// value), the timestamp base + i, and the headers h="v<i>", a binary "bin" = {0, 1, 2, 0xff, i}
// and "rep" twice with different values. kgo's default partitioner hashes keys with murmur2 as the
// Java client does, so the partition of each record is known. A consumer without a group
// (ConsumePartitions) reads every partition from the start and must see each record exactly once,
// at the partition and offset its produce promise gave, intact. Then the offset lookups (kadm):
// start offsets 0, end offsets the per-partition counts, and ListOffsetsAfterMilli finds, in every
// partition, the first record at or after a time in the middle (offset and timestamp), and after
// the last record nothing, which kadm reports as the end offset.
//
// produce-consume-idempotent: the same with kgo's default idempotent producer. kgo quietly
// produces without a producer id when the broker does not offer InitProducerId, so this checks
// that every record was produced with one.
//
// group-join-leave: as the Java scenario. Three group members (each its own kgo client with its
// own connections, polled on a goroutine of its own) consume a new topic of 6 partitions while a
// producer writes paced slices; the first member closes during the first, a fourth joins during
// the second. kgo's default balancer is cooperative-sticky, so the group rebalances
// incrementally: a member gives up only what moves, in a second rebalance. Each member polls with
// BlockRebalanceOnPoll, so no rebalance runs between a poll and the end of its processing
// (AllowRebalance), does not autocommit, and commits what it processed
// (CommitUncommittedOffsets, synchronous) in OnPartitionsRevoked, which kgo calls when partitions
// are revoked and when the client leaves the group on close. Every record must be consumed exactly
// once. kadm's DescribeGroups must show the group Stable with exactly the expected members by
// client id and every partition assigned, and ListGroups list it then; at the end the group is
// Empty and its committed offsets are the end offsets.
//
// commit-resume-restart: as the Java scenario. kgo has no consumer call that asks the broker for
// a group's commits, so OffsetFetch is kadm's FetchOffsets, before the close and after the
// restart.
//
// admin-topics: as the Java scenario with kadm: ValidateCreateTopics, CreateTopic (again:
// TOPIC_ALREADY_EXISTS; replication factor 3: INVALID_REPLICATION_FACTOR), ListTopics,
// DescribeTopicConfigs, DeleteTopics (again: UNKNOWN_TOPIC_OR_PARTITION).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// The bound of the consumer's poll loop: every record must have arrived within it.
	consumeWithin = 60 * time.Second
	// The bound of each single client call that waits for the broker (metadata, offsets, flush).
	callTimeout = 30 * time.Second
)

// failure is a failed check: its message is the reason printed.
type failure struct{ msg string }

func (f failure) Error() string { return f.msg }

func fail(format string, args ...any) error { return failure{fmt.Sprintf(format, args...)} }

func main() {
	scenario := ""
	if len(os.Args) > 1 {
		scenario = os.Args[1]
	}
	flags := flag.NewFlagSet(scenario, flag.ContinueOnError)
	bootstrap := flags.String("bootstrap", "", "HOST:PORT of the Kafka listener")
	topic := flags.String("topic", "", "a topic that does not exist yet")
	count := flags.Int("count", 0, "records to produce (default 20000 for group-join-leave, else 10000)")
	compression := flags.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	group := flags.String("group", "", "the consumer group")
	phase := flags.String("phase", "", "commit or resume")
	expect := flags.String("expect", "", "the committed offsets to resume at, P:OFFSET,...")
	line, err := func() (string, error) {
		if len(os.Args) < 2 {
			return "", fail("no scenario")
		}
		if err := flags.Parse(os.Args[2:]); err != nil {
			return "", err
		}
		if *bootstrap == "" || *topic == "" {
			return "", fail("--bootstrap and --topic are required")
		}
		if *count == 0 {
			*count = 10000
			if scenario == "group-join-leave" {
				*count = 20000
			}
		}
		if *count < 0 {
			return "", fail("--count must be positive")
		}
		needGroup := func() error {
			if *group == "" {
				return fail("--group is required")
			}
			return nil
		}
		switch scenario {
		case "produce-consume", "produce-consume-idempotent":
			return produceConsume(*bootstrap, *topic, *count, *compression, scenario == "produce-consume-idempotent")
		case "group-join-leave":
			if err := needGroup(); err != nil {
				return "", err
			}
			return groupJoinLeave(*bootstrap, *topic, *group, *count)
		case "commit-resume-restart":
			if err := needGroup(); err != nil {
				return "", err
			}
			switch *phase {
			case "commit":
				return commitHalf(*bootstrap, *topic, *group, *count)
			case "resume":
				return resume(*bootstrap, *topic, *group, *count, *expect)
			}
			return "", fail("--phase must be commit or resume")
		case "admin-topics":
			return adminTopics(*bootstrap, *topic)
		}
		return "", fail("unknown scenario %q (expected produce-consume, produce-consume-idempotent, "+
			"group-join-leave, commit-resume-restart or admin-topics)", scenario)
	}()
	if err != nil {
		fmt.Println("result=fail: " + err.Error())
		os.Exit(1)
	}
	fmt.Println(line)
}

// ---- what record i holds ----

func key(i int) []byte { return []byte("key-" + strconv.Itoa(i)) }

// nullValueAt is the one tombstone.
func nullValueAt(count int) int { return count / 2 }

// value: every tenth is empty, every tenth other one about 1 KiB, the rest up to 300 bytes.
func value(i, count int) []byte {
	if i == nullValueAt(count) {
		return nil
	}
	n := (i * 7) % 300
	switch i % 10 {
	case 0:
		n = 0
	case 1:
		n = 1024 + i%64
	}
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i*31 + j*7)
	}
	return v
}

func headers(i int) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: "h", Value: []byte("v" + strconv.Itoa(i))},
		{Key: "bin", Value: []byte{0x00, 0x01, 0x02, 0xff, byte(i)}},
		{Key: "rep", Value: []byte("first")},
		{Key: "rep", Value: []byte("second-" + strconv.Itoa(i))},
	}
}

// keyIndex is the i of a record's key "key-<i>", which must be below count.
func keyIndex(k []byte, where string, count int) (int, error) {
	if k == nil {
		return 0, fail("record at %s has a null key", where)
	}
	text := string(k)
	i, err := strconv.Atoi(strings.TrimPrefix(text, "key-"))
	if !strings.HasPrefix(text, "key-") || err != nil || i < 0 || i >= count {
		return 0, fail("record at %s has key %s", where, text)
	}
	return i, nil
}

// describe is a value for a failure message: nil (a tombstone) or its length.
func describe(v []byte) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%d bytes", len(v))
}

// murmur2 is Kafka's (the Java client's Utils.murmur2), which kgo's default partitioner uses.
func murmur2(b []byte) uint32 {
	const m uint32 = 0x5bd1e995
	h := 0x9747b28c ^ uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> 24
		k *= m
		h = h*m ^ k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fail("unknown compression %q", name)
}

// clientVersion is franz-go's module version, as built into this binary.
func clientVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go" {
				return "franz-go-" + dep.Version
			}
		}
	}
	return "franz-go-unknown"
}

// The client's own log: warnings and errors only, on stderr.
var logger = kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil))

// ack is where record i was acknowledged.
type ack struct {
	partition int32
	offset    int64
}

// stored is a consumed record's offset and timestamp.
type stored struct {
	offset    int64
	timestamp int64
}

func produceConsume(bootstrap, topic string, count int, compression string, idempotent bool) (string, error) {
	// An hour back: within what a broker accepts as CreateTime (Kafka 4 refuses more than an
	// hour ahead, and keeps a week), and every record's time is distinct and known.
	base := time.Now().UnixMilli() - 3_600_000

	started := time.Now()
	acks, err := produce(bootstrap, topic, count, compression, idempotent, base)
	if err != nil {
		return "", err
	}
	produceMs := time.Since(started).Milliseconds()

	started = time.Now()
	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("skiff-compat-admin"), logger)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return "", fail("list topic %s: %v", topic, err)
	}
	detail, ok := topics[topic]
	if !ok || detail.Err != nil || len(detail.Partitions) == 0 {
		return "", fail("list topic %s found no partitions: %v", topic, detail.Err)
	}
	partitions := detail.Partitions.Numbers()
	slices.Sort(partitions)
	if err := checkPartitioner(acks, len(partitions)); err != nil {
		return "", err
	}
	got, err := consume(bootstrap, topic, partitions, acks, base, count)
	if err != nil {
		return "", err
	}
	consumeMs := time.Since(started).Milliseconds()
	if err := checkOffsets(adm, topic, partitions, got, base, count); err != nil {
		return "", err
	}
	return fmt.Sprintf("produced=%d consumed=%d partitions=%d compression=%s idempotence=%t "+
		"produce_ms=%d consume_ms=%d client=%s result=ok",
		count, count, len(partitions), compression, idempotent, produceMs, consumeMs, clientVersion()), nil
}

func produce(bootstrap, topic string, count int, compression string, idempotent bool, base int64) ([]ack, error) {
	c, err := codec(compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID("skiff-compat-producer"),
		logger,
		// The topic does not exist yet: its Metadata request creates it, as the Java
		// producer's does.
		kgo.AllowAutoTopicCreation(),
		// Apache answers that first request while it creates the topic, and kgo would wait out
		// its 5 s minimum between metadata refreshes before asking again.
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchCompression(c),
		// Each produce request's bound. The deadline of the produce calls and of the flush
		// bounds the whole delivery: kgo measures RecordDeliveryTimeout from the record's
		// timestamp, which is an hour back here.
		kgo.ProduceRequestTimeout(15 * time.Second),
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	produced := make([]*kgo.Record, count)
	var (
		mu       sync.Mutex
		firstErr error
	)
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return firstErr
	}
	sent := 0
	// Stops at the first failure, as the Java scenario does.
	for ; sent < count && failed() == nil; sent++ {
		i := sent
		// No partition: the partitioner picks it from the key.
		r := &kgo.Record{
			Topic:     topic,
			Key:       key(i),
			Value:     value(i, count),
			Headers:   headers(i),
			Timestamp: time.UnixMilli(base + int64(i)),
		}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("record %d: %w", i, err)
				}
				return
			}
			produced[i] = r
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, fail("flush after %d of %d were sent: %v", sent, count, err)
	}
	if err := failed(); err != nil {
		return nil, fail("a send failed after %d of %d were sent: %v", sent, count, err)
	}

	acks := make([]ack, count)
	positions := make(map[ack]int, count)
	for i, r := range produced {
		if r == nil {
			return nil, fail("record %d has no acknowledgement", i)
		}
		if r.Topic != topic {
			return nil, fail("record %d acknowledged for topic %s", i, r.Topic)
		}
		if r.Offset < 0 {
			return nil, fail("record %d acknowledged without an offset (%d)", i, r.Offset)
		}
		if ts := r.Timestamp.UnixMilli(); ts != base+int64(i) {
			return nil, fail("record %d acknowledged with timestamp %d, sent %d", i, ts, base+int64(i))
		}
		if idempotent && (r.ProducerID < 0 || r.ProducerID != produced[0].ProducerID) {
			return nil, fail("record %d produced with producer id %d (the first with %d): not idempotent",
				i, r.ProducerID, produced[0].ProducerID)
		}
		a := ack{r.Partition, r.Offset}
		if other, dup := positions[a]; dup {
			return nil, fail("record %d acknowledged at %d:%d like record %d", i, a.partition, a.offset, other)
		}
		positions[a] = i
		acks[i] = a
	}
	return acks, nil
}

// checkPartitioner: kgo's default partitioner hashes a key (murmur2) over the topic's partitions.
func checkPartitioner(acks []ack, partitions int) error {
	for i, a := range acks {
		expected := int32(int(murmur2(key(i))&0x7fffffff) % partitions)
		if a.partition != expected {
			return fail("record %d went to partition %d, its key hashes to %d of %d", i, a.partition, expected, partitions)
		}
	}
	return nil
}

// consume polls until every record arrived once, checking each. It returns per partition the
// stored offsets and timestamps.
func consume(
	bootstrap, topic string, partitions []int32, acks []ack, base int64, count int,
) (map[int32][]stored, error) {
	assign := make(map[int32]kgo.Offset, len(partitions))
	for _, p := range partitions {
		assign[p] = kgo.NewOffset().AtStart()
	}
	// No group: the partitions are assigned directly, nothing is committed.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID("skiff-compat-consumer"),
		logger,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	seen := make([]bool, count)
	got := 0
	result := make(map[int32][]stored)
	deadline := time.Now().Add(consumeWithin)
	for got < count {
		if time.Now().After(deadline) {
			return nil, fail("consumed %d of %d records within %v", got, count, consumeWithin)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return nil, fail("fetch %s [%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			where := fmt.Sprintf("%d:%d", r.Partition, r.Offset)
			i, err := keyIndex(r.Key, where, count)
			if err != nil {
				return nil, err
			}
			if seen[i] {
				return nil, fail("record %d consumed twice (again at %s)", i, where)
			}
			seen[i] = true
			got++
			if err := checkRecord(r, i, acks[i], base, count); err != nil {
				return nil, err
			}
			result[r.Partition] = append(result[r.Partition], stored{r.Offset, r.Timestamp.UnixMilli()})
		}
	}
	return result, nil
}

func checkRecord(r *kgo.Record, i int, a ack, base int64, count int) error {
	what := fmt.Sprintf("record %d at %d:%d", i, r.Partition, r.Offset)
	if r.Partition != a.partition || r.Offset != a.offset {
		return fail("%s was acknowledged at %d:%d", what, a.partition, a.offset)
	}
	want := value(i, count)
	// Nil (a tombstone) and empty differ.
	if (r.Value == nil) != (want == nil) || string(r.Value) != string(want) {
		return fail("%s has value %s, sent %s", what, describe(r.Value), describe(want))
	}
	if t := r.Attrs.TimestampType(); t != 0 {
		return fail("%s has timestamp type %d, not CreateTime (0)", what, t)
	}
	if ts := r.Timestamp.UnixMilli(); ts != base+int64(i) {
		return fail("%s has timestamp %d, sent %d", what, ts, base+int64(i))
	}
	sent := headers(i)
	if len(r.Headers) != len(sent) {
		return fail("%s has %d headers, sent %d", what, len(r.Headers), len(sent))
	}
	for h, got := range r.Headers {
		if got.Key != sent[h].Key || string(got.Value) != string(sent[h].Value) {
			return fail("%s header %d is %s=%v, sent %s=%v",
				what, h, got.Key, got.Value, sent[h].Key, sent[h].Value)
		}
	}
	return nil
}

func checkOffsets(
	adm *kadm.Client, topic string, partitions []int32, got map[int32][]stored, base int64, count int,
) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	lookup := func(what string, listed kadm.ListedOffsets, err error, p int32) (kadm.ListedOffset, error) {
		if err != nil {
			return kadm.ListedOffset{}, fail("%s: %v", what, err)
		}
		o, ok := listed.Lookup(topic, p)
		if !ok || o.Err != nil {
			return kadm.ListedOffset{}, fail("%s [%d] %s: %v", topic, p, what, o.Err)
		}
		return o, nil
	}

	ends, endErr := adm.ListEndOffsets(ctx, topic)
	starts, startErr := adm.ListStartOffsets(ctx, topic)
	var sum int64
	end := make(map[int32]int64, len(partitions))
	for _, p := range partitions {
		n := int64(len(got[p]))
		e, err := lookup("end offset", ends, endErr, p)
		if err != nil {
			return err
		}
		if e.Offset != n {
			return fail("%s [%d] end offset %d, holds %d records", topic, p, e.Offset, n)
		}
		end[p] = e.Offset
		sum += e.Offset
		s, err := lookup("start offset", starts, startErr, p)
		if err != nil {
			return err
		}
		if s.Offset != 0 {
			return fail("%s [%d] start offset %d", topic, p, s.Offset)
		}
	}
	if sum != int64(count) {
		return fail("end offsets add up to %d, produced %d", sum, count)
	}

	// A time in the middle: in each partition the first record (by offset) at or after it.
	middle := base + int64(count/2) + 1
	found, err := adm.ListOffsetsAfterMilli(ctx, middle, topic)
	for _, p := range partitions {
		o, err := lookup(fmt.Sprintf("offsets after %d", middle), found, err, p)
		if err != nil {
			return err
		}
		var first *stored
		for j, s := range got[p] {
			if s.timestamp >= middle && (first == nil || s.offset < first.offset) {
				first = &got[p][j]
			}
		}
		switch {
		case first == nil && o.Offset != end[p]:
			// kadm turns the broker's -1 (no record that late) into the end offset.
			return fail("%s [%d] offsets after %d: %d, no record is that late (end offset %d)",
				topic, p, middle, o.Offset, end[p])
		case first != nil && (o.Offset != first.offset || o.Timestamp != first.timestamp):
			return fail("%s [%d] offsets after %d: offset %d timestamp %d, expected offset %d timestamp %d",
				topic, p, middle, o.Offset, o.Timestamp, first.offset, first.timestamp)
		}
	}

	// After the last record: nothing in every partition, the end offset from kadm.
	after := base + int64(count) + 1000
	found, err = adm.ListOffsetsAfterMilli(ctx, after, topic)
	for _, p := range partitions {
		o, err := lookup(fmt.Sprintf("offsets after %d", after), found, err, p)
		if err != nil {
			return err
		}
		if o.Offset != end[p] {
			return fail("%s [%d] offsets after %d: %d, after every record (end offset %d)",
				topic, p, after, o.Offset, end[p])
		}
	}
	return nil
}
