package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// sent is what a scenario sent, by seq, to compare with what comes back.
type sent struct {
	seq   string
	mode  string
	body  []byte
	tag   string
	keys  []string
	props map[string]string
	res   *primitive.SendResult // nil for oneway and batch members
}

func newMessage(topic, mode string, i int, id string) (*primitive.Message, *sent) {
	seq := fmt.Sprintf("%s-%03d", mode, i)
	s := &sent{
		seq:  seq,
		mode: mode,
		body: []byte(fmt.Sprintf("go %s message %d of %s: %s", mode, i, id, strings.Repeat("x", i*37))),
		tag:  []string{"TagA", "TagB", "TagC"}[i%3],
		keys: []string{"key-" + seq, "shared-" + mode},
		props: map[string]string{
			"seq":        seq,
			"unicode":    "héllo wörld ✓ 消息",
			"with space": "a value with spaces",
		},
	}
	m := primitive.NewMessage(topic, s.body)
	m.WithTag(s.tag)
	m.WithKeys(s.keys)
	for k, v := range s.props {
		m.WithProperty(k, v)
	}
	return m, s
}

// send: sync, async, oneway and batch sends with tags, keys and user properties, read back by a
// push consumer exactly once with everything intact, and the ids and offsets of the send results.
func scenarioSend(a args) {
	topic := "go_send_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_send_p_" + a.id)
	defer p.Shutdown()
	ctx := context.Background()
	var all []*sent

	for i := 0; i < 10; i++ {
		m, s := newMessage(topic, "sync", i, a.id)
		res, err := p.SendSync(ctx, m)
		check(err, "sync send "+s.seq)
		if res.Status != primitive.SendOK || res.MsgID == "" || res.OffsetMsgID == "" {
			fail("sync send %s: %v", s.seq, res)
		}
		s.res = res
		all = append(all, s)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var asyncErr []string
	for i := 0; i < 10; i++ {
		m, s := newMessage(topic, "async", i, a.id)
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil || res.Status != primitive.SendOK {
				asyncErr = append(asyncErr, fmt.Sprintf("%s: %v %v", s.seq, res, err))
				return
			}
			s.res = res
		}, m)
		if err != nil {
			wg.Done()
			fail("async send %s: %v", s.seq, err)
		}
		all = append(all, s)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fail("async send callbacks did not all arrive within 30 s")
	}
	if len(asyncErr) > 0 {
		fail("async sends failed: %v", asyncErr)
	}

	for i := 0; i < 10; i++ {
		m, s := newMessage(topic, "oneway", i, a.id)
		check(p.SendOneWay(ctx, m), "oneway send "+s.seq)
		all = append(all, s)
	}

	var batch []*primitive.Message
	for i := 0; i < 5; i++ {
		m, s := newMessage(topic, "batch", i, a.id)
		batch = append(batch, m)
		all = append(all, s)
	}
	res, err := p.SendSync(ctx, batch...)
	check(err, "batch send")
	if res.Status != primitive.SendOK {
		fail("batch send: %v", res)
	}

	got := newReceived()
	c := startConsumer(a.consumerOptions("go_send_c_"+a.id, "go_send_c_"+a.id), topic, "*", recorder(got, "c"))
	defer c.Shutdown()
	var want []string
	for _, s := range all {
		want = append(want, s.seq)
	}
	if !waitFor(60*time.Second, func() bool { return got.has(want) }) {
		fail("messages not received within 60 s: %s", short(got.missing(want)))
	}
	// Anything delivered twice would normally arrive with its first copy; give stragglers a moment
	// by waiting until the count has not changed for 500 ms (bounded).
	last, stable := got.count(), time.Now()
	waitFor(5*time.Second, func() bool {
		if n := got.count(); n != last {
			last, stable = n, time.Now()
		}
		return time.Since(stable) > 500*time.Millisecond
	})
	if got.count() != len(all) {
		fail("received %d deliveries of %d messages (duplicates or strangers): %v", got.count(), len(all), got.seqs())
	}
	for _, s := range all {
		m := got.get(s.seq)[0]
		if m.Topic != topic {
			fail("%s: topic %q", s.seq, m.Topic)
		}
		if !bytes.Equal(m.Body, s.body) {
			fail("%s: body %q, sent %q", s.seq, m.Body, s.body)
		}
		if m.GetTags() != s.tag {
			fail("%s: tag %q, sent %q", s.seq, m.GetTags(), s.tag)
		}
		if m.GetKeys() != strings.Join(s.keys, " ") {
			fail("%s: keys %q, sent %q", s.seq, m.GetKeys(), strings.Join(s.keys, " "))
		}
		if err := sameUserProps(s.props, m); err != nil {
			fail("%s: %v", s.seq, err)
		}
		if m.StoreHost != a.broker {
			fail("%s: store host %s, broker is %s", s.seq, m.StoreHost, a.broker)
		}
		if s.res != nil {
			if m.MsgId != s.res.MsgID || m.Queue.QueueId != s.res.MessageQueue.QueueId ||
				m.QueueOffset != s.res.QueueOffset {
				fail("%s: read back as msgId %s queue %d offset %d, sent as %s queue %d offset %d",
					s.seq, m.MsgId, m.Queue.QueueId, m.QueueOffset,
					s.res.MsgID, s.res.MessageQueue.QueueId, s.res.QueueOffset)
			}
			if !strings.EqualFold(m.OffsetMsgId, s.res.OffsetMsgID) {
				fail("%s: offset msgId %s, send result said %s", s.seq, m.OffsetMsgId, s.res.OffsetMsgID)
			}
		}
	}
}
