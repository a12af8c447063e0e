package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// broadcasting: each of two broadcasting push consumers of one group (offsets kept locally)
// receives every message exactly once.
func scenarioBroadcasting(a args) {
	topic := "go_bc_" + a.id
	group := "go_bc_c_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_bc_p_" + a.id)
	defer p.Shutdown()
	var want []string
	for i := 0; i < 30; i++ {
		seq := fmt.Sprintf("bc-%03d", i)
		m := primitive.NewMessage(topic, []byte("broadcast "+seq))
		m.WithProperty("seq", seq)
		_, err := p.SendSync(context.Background(), m)
		check(err, "send "+seq)
		want = append(want, seq)
	}
	var gots []*received
	for i := 1; i <= 2; i++ {
		got := newReceived()
		gots = append(gots, got)
		name := fmt.Sprintf("c%d", i)
		c := startConsumer(a.consumerOptions(group, fmt.Sprintf("%s_%d", group, i),
			consumer.WithConsumerModel(consumer.BroadCasting)), topic, "*", recorder(got, name))
		defer c.Shutdown()
	}
	for i, got := range gots {
		if !waitFor(60*time.Second, func() bool { return got.has(want) }) {
			fail("broadcasting consumer %d did not receive everything within 60 s: %s", i+1, short(got.missing(want)))
		}
	}
	for i, got := range gots {
		if got.count() != len(want) {
			fail("broadcasting consumer %d got %d deliveries of %d messages", i+1, got.count(), len(want))
		}
	}
}
