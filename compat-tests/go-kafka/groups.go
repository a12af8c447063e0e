// The scenarios with consumer groups: group-join-leave and commit-resume-restart (see main.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// The group scenario's topic: more partitions than members, so that every member has some.
	groupPartitions = 6
	// The bound of each wait for the group to settle.
	settleWithin = 60 * time.Second
	// The producer's pace: bursts of paceBurst records pacePause apart, about 4 000 records a
	// second, so that a slice lasts a second or two.
	paceBurst  = 100
	pacePause  = 25 * time.Millisecond
	memberPoll = 200 * time.Millisecond
	// The restart scenario's topic: a few partitions, each with its own committed offset.
	restartPartitions = 4
)

// newAdmin is a client for kadm's calls.
func newAdmin(bootstrap string) (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID("skiff-compat-admin"), logger,
		// kadm's topic listings reuse metadata up to this old (kgo's default: 5 s), and the
		// scenarios poll them for a topic to appear or go.
		kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return nil, nil, err
	}
	return cl, kadm.NewClient(cl), nil
}

func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

func createTopic(adm *kadm.Client, topic string, partitions int32) error {
	ctx, cancel := callContext()
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return fail("create topic %s: %v", topic, err)
	}
	return nil
}

// groupOpts are a group member's settings: the classic protocol (kgo uses KIP-848 only when
// asked), nothing committed but by the scenario.
func groupOpts(bootstrap, group, topic, clientID string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID(clientID),
		logger,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		// Members notice a rebalance at their next heartbeat: every 500 ms rather than 3 s. The
		// session stays within what every broker accepts (Skiff and Kafka: at least 6 s).
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second),
		// A member that does not rejoin holds the group up this long.
		kgo.RebalanceTimeout(60 * time.Second),
	}
}

// endOffsets is per partition the topic's end offset (ListOffsets, latest).
func endOffsets(adm *kadm.Client, topic string, partitions int32) (map[int32]int64, error) {
	ctx, cancel := callContext()
	defer cancel()
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fail("end offsets of %s: %v", topic, err)
	}
	end := make(map[int32]int64, partitions)
	for p := int32(0); p < partitions; p++ {
		o, ok := listed.Lookup(topic, p)
		if !ok || o.Err != nil {
			return nil, fail("end offset of %s [%d]: %v", topic, p, o.Err)
		}
		end[p] = o.Offset
	}
	return end, nil
}

// committedOffsets is a group's committed offsets as the broker answers OffsetFetch.
func committedOffsets(adm *kadm.Client, group string) (map[int32]int64, error) {
	ctx, cancel := callContext()
	defer cancel()
	fetched, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return nil, fail("OffsetFetch %s: %v", group, err)
	}
	committed := make(map[int32]int64)
	fetched.Each(func(o kadm.OffsetResponse) { committed[o.Partition] = o.At })
	return committed, nil
}

// formatOffsets is "P:OFFSET,..." by partition.
func formatOffsets(offsets map[int32]int64) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		parts = append(parts, fmt.Sprintf("%d:%d", p, offsets[p]))
	}
	return strings.Join(parts, ",")
}

// ---- group-join-leave ----

// tally is what the group consumed: per record how often. The members' goroutines share it.
type tally struct {
	mu         sync.Mutex
	times      []int
	distinct   int
	deliveries int
}

func (t *tally) add(i int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deliveries++
	if t.times[i] == 0 {
		t.distinct++
	}
	t.times[i]++
}

func (t *tally) counts() (distinct, deliveries int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.distinct, t.deliveries
}

// list is the first few records consumed never or more than once, for a report.
func (t *tally) list(duplicates bool, limit int) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var found []int
	for i, n := range t.times {
		if len(found) < limit && (duplicates && n > 1 || !duplicates && n == 0) {
			found = append(found, i)
		}
	}
	return found
}

// member is one consumer of the group, its own kgo client polled on a goroutine of its own. It
// commits what it has processed whenever partitions are revoked and when it leaves on close.
type member struct {
	name     string
	cl       *kgo.Client
	tally    *tally
	count    int
	stop     context.CancelFunc
	done     chan struct{}
	consumed atomic.Int64
	commits  atomic.Int64
	lost     atomic.Int64
	mu       sync.Mutex
	err      error
}

func newMember(name, bootstrap, group, topic string, t *tally, count int) (*member, error) {
	m := &member{name: name, tally: t, count: count, done: make(chan struct{})}
	opts := append(groupOpts(bootstrap, group, topic, name),
		// No rebalance runs between a poll and AllowRebalance, so what the revocation commits is
		// exactly what was processed.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(m.revoked),
		kgo.OnPartitionsLost(m.onLost),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	ctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	go m.run(ctx)
	return m, nil
}

func (m *member) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = fmt.Errorf("%s: %w", m.name, err)
	}
}

func (m *member) error() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *member) run(ctx context.Context) {
	defer close(m.done)
	// Revokes the partitions (so commits what was processed) and leaves the group.
	defer m.cl.CloseAllowingRebalance()
	for ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, memberPoll)
		fetches := m.cl.PollRecords(pollCtx, 500)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				m.fail(fmt.Errorf("fetch %s [%d]: %w", fe.Topic, fe.Partition, fe.Err))
				return
			}
		}
		var bad error
		fetches.EachRecord(func(r *kgo.Record) {
			i, err := keyIndex(r.Key, fmt.Sprintf("%d:%d", r.Partition, r.Offset), m.count)
			if err != nil {
				bad = err
				return
			}
			m.tally.add(i)
			m.consumed.Add(1)
		})
		m.cl.AllowRebalance()
		if bad != nil {
			m.fail(bad)
			return
		}
	}
}

func (m *member) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		return
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		m.fail(fmt.Errorf("commit on revocation of %v: %w", revoked, err))
		return
	}
	m.commits.Add(1)
}

// onLost: lost, not revoked: another member may own them already, so nothing is committed.
func (m *member) onLost(context.Context, *kgo.Client, map[string][]int32) {
	m.lost.Add(1)
}

// close closes the member (on its own goroutine) and waits for that.
func (m *member) close() error {
	m.stop()
	select {
	case <-m.done:
		return nil
	case <-time.After(2 * callTimeout):
		return fail("%s did not close within %v", m.name, 2*callTimeout)
	}
}

func checkMembers(members []*member) error {
	for _, m := range members {
		if err := m.error(); err != nil {
			return err
		}
	}
	return nil
}

// pacedProducer is the producer of group-join-leave, on a goroutine of its own, sending up to
// what is released.
type pacedProducer struct {
	cl       *kgo.Client
	released atomic.Int64
	closing  atomic.Bool
	done     chan struct{}
	mu       sync.Mutex
	err      error
}

func newPacedProducer(bootstrap, topic string, count int) (*pacedProducer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID("skiff-compat-producer"),
		logger,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProduceRequestTimeout(15*time.Second),
	)
	if err != nil {
		return nil, err
	}
	p := &pacedProducer{cl: cl, done: make(chan struct{})}
	go p.run(topic, count)
	return p, nil
}

func (p *pacedProducer) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *pacedProducer) error() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *pacedProducer) run(topic string, count int) {
	defer close(p.done)
	defer p.cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*settleWithin)
	defer cancel()
	for sent := 0; sent < count && !p.closing.Load() && p.error() == nil; {
		end := min(int(p.released.Load()), sent+paceBurst)
		for ; sent < end; sent++ {
			r := &kgo.Record{Topic: topic, Key: key(sent), Value: []byte("value-" + strconv.Itoa(sent))}
			p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					p.fail(fmt.Errorf("send: %w", err))
				}
			})
		}
		time.Sleep(pacePause)
	}
	flushCtx, cancelFlush := callContext()
	defer cancelFlush()
	if err := p.cl.Flush(flushCtx); err != nil {
		p.fail(fmt.Errorf("flush: %w", err))
	}
}

// finish waits until every record was sent and acknowledged.
func (p *pacedProducer) finish() error {
	select {
	case <-p.done:
		return p.error()
	case <-time.After(2 * callTimeout):
		return fail("the producer did not finish within %v", 2*callTimeout)
	}
}

func (p *pacedProducer) close() {
	p.closing.Store(true)
	select {
	case <-p.done:
	case <-time.After(2 * callTimeout):
	}
}

// coordinatorNotReady is what a coordinator answers until it serves the group.
func coordinatorNotReady(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress)
}

// awaitGroup waits until the group is Stable with exactly `expected` as members (by client id)
// and every partition of the topic assigned to one of them, as DescribeGroups shows it; then
// ListGroups must list it. It returns what was seen: "Stable/<members>/<protocol>".
func awaitGroup(adm *kadm.Client, group, topic string, expected, all []*member) (string, error) {
	var want []string
	for _, m := range expected {
		want = append(want, m.name)
	}
	slices.Sort(want)
	deadline := time.Now().Add(settleWithin)
	last := "nothing"
	for {
		if err := checkMembers(all); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fail("group %s not Stable with %v and every partition assigned within %v; last described: %s",
				group, want, settleWithin, last)
		}
		ctx, cancel := callContext()
		described, err := adm.DescribeGroups(ctx, group)
		cancel()
		d, ok := described[group]
		switch {
		case err == nil && !ok:
			err = errors.New("not in the answer")
		case err == nil:
			err = d.Err
		}
		if err != nil {
			if !coordinatorNotReady(err) {
				return "", fail("describe group %s: %v", group, err)
			}
			last = err.Error()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var clients []string
		var assigned []int32
		for _, mem := range d.Members {
			clients = append(clients, mem.ClientID)
			if c, ok := mem.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					if t.Topic == topic {
						assigned = append(assigned, t.Partitions...)
					} else {
						assigned = append(assigned, -1)
					}
				}
			}
		}
		slices.Sort(clients)
		slices.Sort(assigned)
		covered := len(assigned) == groupPartitions
		for i, p := range assigned {
			covered = covered && p == int32(i)
		}
		last = fmt.Sprintf("%s with %d members %v, partitions %v assigned, protocol %s",
			d.State, len(d.Members), clients, assigned, d.Protocol)
		if d.State == "Stable" && slices.Equal(clients, want) && covered {
			ctx, cancel := callContext()
			listed, err := adm.ListGroups(ctx)
			cancel()
			if err != nil {
				return "", fail("list groups: %v", err)
			}
			l, ok := listed[group]
			if !ok || l.State != "Stable" && l.State != "" {
				return "", fail("DescribeGroups: %s; ListGroups: %+v (listed: %t)", last, l, ok)
			}
			return fmt.Sprintf("Stable/%d/%s", len(want), d.Protocol), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitConsumed waits until the group has consumed at least atLeast distinct records.
func awaitConsumed(t *tally, atLeast, count int, members []*member) error {
	deadline := time.Now().Add(consumeWithin)
	for {
		distinct, _ := t.counts()
		if distinct >= atLeast {
			return nil
		}
		if err := checkMembers(members); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fail("the group consumed %d of %d records within %v, waiting for %d; never consumed: %v...",
				distinct, count, consumeWithin, atLeast, t.list(false, 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func groupJoinLeave(bootstrap, topic, group string, count int) (line string, err error) {
	if count < 6 {
		return "", fail("--count must be at least 6")
	}
	started := time.Now()
	t := &tally{times: make([]int, count)}
	var members []*member
	var seen []string
	var producer *pacedProducer
	admin, adm, err := newAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	defer func() {
		if producer != nil {
			producer.close()
		}
		for _, m := range members {
			if cerr := m.close(); err == nil && cerr != nil {
				err = cerr
			}
		}
	}()
	join := func(name string) error {
		m, err := newMember(name, bootstrap, group, topic, t, count)
		if err != nil {
			return err
		}
		members = append(members, m)
		return nil
	}
	settled := func(expected []*member) error {
		s, err := awaitGroup(adm, group, topic, expected, members)
		seen = append(seen, s)
		return err
	}

	if err := createTopic(adm, topic, groupPartitions); err != nil {
		return "", err
	}
	for m := 1; m <= 3; m++ {
		if err := join(fmt.Sprintf("member-%d", m)); err != nil {
			return "", err
		}
	}
	if err := settled(members); err != nil {
		return "", err
	}
	firstStable := time.Since(started).Milliseconds()

	if producer, err = newPacedProducer(bootstrap, topic, count); err != nil {
		return "", err
	}
	producer.released.Store(int64(count / 3))
	if err := awaitConsumed(t, count/6, count, members); err != nil {
		return "", err
	}
	if err := members[0].close(); err != nil {
		return "", err
	}
	if err := settled(members[1:3]); err != nil {
		return "", err
	}

	producer.released.Store(int64(2 * count / 3))
	if err := awaitConsumed(t, count/2, count, members); err != nil {
		return "", err
	}
	if err := join("member-4"); err != nil {
		return "", err
	}
	if err := settled(members[1:4]); err != nil {
		return "", err
	}

	producer.released.Store(int64(count))
	if err := awaitConsumed(t, count, count, members); err != nil {
		return "", err
	}
	if err := producer.finish(); err != nil {
		return "", err
	}
	for _, m := range members[1:4] {
		if err := m.close(); err != nil {
			return "", err
		}
	}
	if err := checkMembers(members); err != nil {
		return "", err
	}

	// Everyone left: the group is Empty, and its commits cover everything.
	ctx, cancel := callContext()
	described, err := adm.DescribeGroups(ctx, group)
	cancel()
	if err != nil {
		return "", fail("describe group %s: %v", group, err)
	}
	if d := described[group]; d.Err != nil || d.State != "Empty" || len(d.Members) != 0 {
		return "", fail("after every member closed the group is %s with %d members (%v)", d.State, len(d.Members), d.Err)
	}
	committed, err := committedOffsets(adm, group)
	if err != nil {
		return "", err
	}
	end, err := endOffsets(adm, topic, groupPartitions)
	if err != nil {
		return "", err
	}
	var sum int64
	for p, e := range end {
		sum += e
		if c, ok := committed[p]; !ok || c != e {
			return "", fail("committed offsets %v, end offsets %v", committed, end)
		}
	}
	if sum != int64(count) {
		return "", fail("end offsets %v add up to %d, produced %d", end, sum, count)
	}

	distinct, deliveries := t.counts()
	var perMember []string
	var commits, lost int64
	for _, m := range members {
		perMember = append(perMember, strconv.FormatInt(m.consumed.Load(), 10))
		commits += m.commits.Load()
		lost += m.lost.Load()
	}
	if dup := deliveries - distinct; dup != 0 {
		return "", fail("%d records consumed twice despite the commits on revocation, e.g. %v "+
			"(partitions lost %d times)",
			dup, t.list(true, 10), lost)
	}
	return fmt.Sprintf("produced=%d consumed=%d deliveries=%d duplicates=0 partitions=%d per_member=%s groups=%s "+
		"revocation_commits=%d lost=%d first_stable_ms=%d elapsed_ms=%d client=%s result=ok",
		count, distinct, deliveries, groupPartitions, strings.Join(perMember, ","), strings.Join(seen, ","),
		commits, lost, firstStable, time.Since(started).Milliseconds(), clientVersion()), nil
}

// ---- commit-resume-restart ----

// commitHalf, before the restart: produce, read the first half of every partition in a group,
// commit exactly that, close.
func commitHalf(bootstrap, topic, group string, count int) (string, error) {
	admin, adm, err := newAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if err := createTopic(adm, topic, restartPartitions); err != nil {
		return "", err
	}
	base := time.Now().UnixMilli() - 3_600_000
	acks, err := produce(bootstrap, topic, count, "none", true, base)
	if err != nil {
		return "", err
	}
	end, err := endOffsets(adm, topic, restartPartitions)
	if err != nil {
		return "", err
	}
	half := make(map[int32]int64, len(end))
	processed := make(map[int32]int64, len(end))
	for p, e := range end {
		half[p] = e / 2
		processed[p] = 0
	}

	cl, err := kgo.NewClient(groupOpts(bootstrap, group, topic, "skiff-compat-before-restart")...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	got, beyond := 0, 0
	deadline := time.Now().Add(consumeWithin)
	for !maps.Equal(processed, half) {
		if time.Now().After(deadline) {
			return "", fail("read up to %v within %v, the first half is up to %v", processed, consumeWithin, half)
		}
		ctx, cancel := context.WithTimeout(context.Background(), memberPoll)
		fetches := cl.PollRecords(ctx, 500)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return "", fail("fetch %s [%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			where := fmt.Sprintf("%d:%d", r.Partition, r.Offset)
			if r.Offset >= half[r.Partition] {
				// Fetched, but past the half: not processed, so not committed.
				beyond++
				continue
			}
			if r.Offset != processed[r.Partition] {
				return "", fail("read %s, expected partition %d at %d", where, r.Partition, processed[r.Partition])
			}
			i, err := keyIndex(r.Key, where, count)
			if err != nil {
				return "", err
			}
			if err := checkRecord(r, i, acks[i], base, count); err != nil {
				return "", err
			}
			processed[r.Partition] = r.Offset + 1
			got++
		}
	}
	commit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range half {
		commit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	ctx, cancel := callContext()
	var commitErr error
	onDone := func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if resp == nil {
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && commitErr == nil {
					commitErr = fmt.Errorf("%s [%d]: %w", t.Topic, p.Partition, err)
				}
			}
		}
	}
	cl.CommitOffsetsSync(ctx, commit, onDone)
	cancel()
	if commitErr != nil {
		return "", fail("commit %v: %v", half, commitErr)
	}
	fetched, err := committedOffsets(adm, group)
	if err != nil {
		return "", err
	}
	if !maps.Equal(fetched, half) {
		return "", fail("committed %v, OffsetFetch answers %v", half, fetched)
	}
	return fmt.Sprintf("consumed=%d of=%d fetched_beyond=%d committed=%s client=%s result=ok",
		got, count, beyond, formatOffsets(half), clientVersion()), nil
}

// resume, after the restart: the commits are there, and a new member reads on from exactly them.
func resume(bootstrap, topic, group string, count int, expect string) (string, error) {
	expected := make(map[int32]int64)
	for _, part := range strings.Split(expect, ",") {
		ps, offs, ok := strings.Cut(part, ":")
		p, perr := strconv.ParseInt(ps, 10, 32)
		o, oerr := strconv.ParseInt(offs, 10, 64)
		if !ok || perr != nil || oerr != nil {
			return "", fail("bad --expect %q", expect)
		}
		expected[int32(p)] = o
	}
	if len(expected) != restartPartitions {
		return "", fail("--expect %q lacks partitions", expect)
	}
	admin, adm, err := newAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	stored, err := committedOffsets(adm, group)
	if err != nil {
		return "", err
	}
	if !maps.Equal(stored, expected) {
		return "", fail("after the restart OffsetFetch answers %v, committed before it %v", stored, expected)
	}
	end, err := endOffsets(adm, topic, restartPartitions)
	if err != nil {
		return "", err
	}
	var sum, left int64
	for p, e := range end {
		sum += e
		left += e - expected[p]
	}
	if sum != int64(count) {
		return "", fail("after the restart the end offsets %v add up to %d, produced %d", end, sum, count)
	}

	cl, err := kgo.NewClient(groupOpts(bootstrap, group, topic, "skiff-compat-after-restart")...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	next := make(map[int32]int64, len(expected))
	for p, o := range expected {
		next[p] = o
	}
	seen := make([]bool, count)
	var got int64
	deadline := time.Now().Add(consumeWithin)
	for got < left {
		if time.Now().After(deadline) {
			return "", fail("consumed %d of the %d records after the committed offsets within %v", got, left, consumeWithin)
		}
		ctx, cancel := context.WithTimeout(context.Background(), memberPoll)
		fetches := cl.PollRecords(ctx, 500)
		cancel()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return "", fail("fetch %s [%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			where := fmt.Sprintf("%d:%d", r.Partition, r.Offset)
			if r.Offset != next[r.Partition] {
				return "", fail("read %s, expected partition %d at %d (committed %d)",
					where, r.Partition, next[r.Partition], expected[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			i, err := keyIndex(r.Key, where, count)
			if err != nil {
				return "", err
			}
			if seen[i] {
				return "", fail("record %d consumed twice (again at %s)", i, where)
			}
			seen[i] = true
			got++
		}
	}
	return fmt.Sprintf("resumed_at=%s consumed=%d end=%s client=%s result=ok",
		formatOffsets(expected), got, formatOffsets(end), clientVersion()), nil
}
