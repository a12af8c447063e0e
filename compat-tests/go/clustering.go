package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// clustering: two push consumers of one group split an 8-queue topic. Everything sent while they
// settle arrives; once both have consumed, a second round arrives exactly once between them and
// both get part of it.
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
	defer c2.Shutdown()

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
}
