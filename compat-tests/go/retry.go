package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// retry: a push consumer answers ConsumeRetryLater (next delay level 1, 1 s) twice for each
// message; each comes back through the group's retry topic with its reconsume times 1, then 2,
// reported on its original topic with body, tag, keys, properties and msgId intact. A broker that
// drops the CONSUMER_SEND_MSG_BACK (the Go client takes any answer to it as success and moves its
// offset on) loses the messages: they never come back.
func scenarioRetry(a args) {
	topic := "go_retry_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_retry_p_" + a.id)
	defer p.Shutdown()
	got := newReceived()
	group := "go_retry_c_" + a.id
	c := startConsumer(a.consumerOptions(group, group, consumer.WithMaxReconsumeTimes(5)), topic, "*",
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			retry := false
			for _, m := range msgs {
				got.add("c", m)
				if m.ReconsumeTimes < 2 {
					retry = true
				}
			}
			if retry {
				if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
					cc.DelayLevelWhenNextConsume = 1
				}
				return consumer.ConsumeRetryLater, nil
			}
			return consumer.ConsumeSuccess, nil
		})
	defer c.Shutdown()

	ids := map[string]string{}
	var seqs []string
	for i := 0; i < 3; i++ {
		seq := fmt.Sprintf("retry-%d", i)
		m := primitive.NewMessage(topic, []byte("retried "+seq))
		m.WithTag("TagR")
		m.WithKeys([]string{seq})
		m.WithProperty("seq", seq)
		m.WithProperty("user", "kept ✓")
		res, err := p.SendSync(context.Background(), m)
		check(err, "send "+seq)
		ids[seq] = res.MsgID
		seqs = append(seqs, seq)
	}
	if !waitFor(30*time.Second, func() bool { return got.has(seqs) }) {
		fail("first deliveries not received within 30 s: %s", short(got.missing(seqs)))
	}
	thrice := func() bool {
		for _, s := range seqs {
			if len(got.get(s)) < 3 {
				return false
			}
		}
		return true
	}
	// The retry topic's route reaches the Go client with its route poll (every 30 s).
	if !waitFor(100*time.Second, thrice) {
		var counts []string
		for _, s := range seqs {
			counts = append(counts, fmt.Sprintf("%s: %d", s, len(got.get(s))))
		}
		fail("messages answered with ConsumeRetryLater did not come back twice within 100 s (deliveries %v): lost", counts)
	}
	for _, s := range seqs {
		for i, m := range got.get(s)[:3] {
			if int(m.ReconsumeTimes) != i {
				fail("delivery %d of %s has reconsume times %d", i+1, s, m.ReconsumeTimes)
			}
			if m.Topic != topic || m.GetTags() != "TagR" || m.GetKeys() != s || m.GetProperty("user") != "kept ✓" ||
				string(m.Body) != "retried "+s || m.MsgId != ids[s] {
				fail("delivery %d of %s came back changed: topic %q tags %q keys %q user %q body %q msgId %s (sent %s)",
					i+1, s, m.Topic, m.GetTags(), m.GetKeys(), m.GetProperty("user"), m.Body, m.MsgId, ids[s])
			}
		}
	}
}
