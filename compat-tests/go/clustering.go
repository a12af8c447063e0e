package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// clustering: two push consumers of one group split an 8-queue topic. Everything sent while they
// settle arrives; once both have consumed, a second round arrives exactly once between them and
// both get part of it. Then one shuts down (the Go client just closes its connection; it sends no
// UNREGISTER_CLIENT): the broker must notice and the other must take over every queue, so a third
// round all arrives, at the one left.
func scenarioClustering(a args) {
	topic := "go_clu_" + a.id
	group := "go_clu_c_" + a.id
	a.createTopic(topic, 8)
	p := a.newProducer("go_clu_p_" + a.id)
	defer p.Shutdown()
	got := newReceived()
	c1 := startConsumer(a.consumerOptions(group, group+"_1"), topic, "*", recorder(got, "c1"))
	defer c1.Shutdown()
	c2 := startConsumer(a.consumerOptions(group, group+"_2"), topic, "*", recorder(got, "c2"))

	sendRound := func(round, n int) []string {
		var seqs []string
		for i := 0; i < n; i++ {
			seq := fmt.Sprintf("r%d-%03d", round, i)
			m := primitive.NewMessage(topic, []byte("clustering "+seq))
			m.WithProperty("seq", seq)
			_, err := p.SendSync(context.Background(), m)
			check(err, "send "+seq)
			seqs = append(seqs, seq)
		}
		return seqs
	}
	first := sendRound(1, 40)
	if !waitFor(60*time.Second, func() bool { return got.has(first) }) {
		fail("round 1 not received within 60 s: %s", short(got.missing(first)))
	}
	second := sendRound(2, 80)
	if !waitFor(60*time.Second, func() bool { return got.has(second) }) {
		fail("round 2 not received within 60 s: %s", short(got.missing(second)))
	}
	per := map[string]int{}
	for _, s := range second {
		by := func() []string { got.mu.Lock(); defer got.mu.Unlock(); return append([]string(nil), got.by[s]...) }()
		if len(by) != 1 {
			fail("round 2 message %s delivered %d times (%v) with a stable assignment", s, len(by), by)
		}
		per[by[0]]++
	}
	if per["c1"] == 0 || per["c2"] == 0 {
		fail("one consumer got all of round 2: %v", per)
	}
	c2.Shutdown()
	third := sendRound(3, 40)
	if !waitFor(60*time.Second, func() bool { return got.has(third) }) {
		fail("after one consumer left, round 3 was not received within 60 s: %s", short(got.missing(third)))
	}
	for _, s := range third {
		by := func() []string { got.mu.Lock(); defer got.mu.Unlock(); return append([]string(nil), got.by[s]...) }()
		for _, who := range by {
			if who != "c1" {
				fail("round 3 message %s delivered to %s after it shut down", s, who)
			}
		}
	}
}
