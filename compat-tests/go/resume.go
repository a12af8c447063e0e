package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// resume: a push consumer consumes 30 messages and shuts down, which commits its offsets
// (UPDATE_CONSUMER_OFFSET); 20 more are sent, and the same group restarted as a new client gets
// those 20 from the committed offsets (QUERY_CONSUMER_OFFSET) and none of the first 30.
func scenarioResume(a args) {
	topic := "go_res_" + a.id
	group := "go_res_c_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_res_p_" + a.id)
	defer p.Shutdown()
	send := func(round, n int) []string {
		var seqs []string
		for i := 0; i < n; i++ {
			seq := fmt.Sprintf("r%d-%03d", round, i)
			m := primitive.NewMessage(topic, []byte("resume "+seq))
			m.WithProperty("seq", seq)
			_, err := p.SendSync(context.Background(), m)
			check(err, "send "+seq)
			seqs = append(seqs, seq)
		}
		return seqs
	}
	first := send(1, 30)
	got1 := newReceived()
	c1 := startConsumer(a.consumerOptions(group, group+"_1"), topic, "*", recorder(got1, "c1"))
	if !waitFor(60*time.Second, func() bool { return got1.has(first) }) {
		fail("first 30 not received within 60 s: %s", short(got1.missing(first)))
	}
	check(c1.Shutdown(), "shut the first consumer down")
	second := send(2, 20)
	got2 := newReceived()
	c2 := startConsumer(a.consumerOptions(group, group+"_2"), topic, "*", recorder(got2, "c2"))
	defer c2.Shutdown()
	if !waitFor(60*time.Second, func() bool { return got2.has(second) }) {
		fail("the restarted group did not receive the 20 new messages within 60 s: %s", short(got2.missing(second)))
	}
	var again []string
	for _, s := range first {
		if len(got2.get(s)) > 0 {
			again = append(again, s)
		}
	}
	if len(again) > 0 {
		fail("the restarted group received %d of the 30 already consumed: %s", len(again), short(again))
	}
}
