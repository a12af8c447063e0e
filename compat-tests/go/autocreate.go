package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// auto-create: a producer sends to a topic nobody created. The Go client finds no route for it,
// sends through the route of TBW102 (the default topic), and the broker creates it
// (autoCreateTopicEnable); a consumer then reads back every message.
func scenarioAutoCreate(a args) {
	topic := "go_auto_" + a.id
	p := a.newProducer("go_auto_p_" + a.id)
	defer p.Shutdown()
	var want []string
	for i := 0; i < 8; i++ {
		seq := fmt.Sprintf("auto-%02d", i)
		m := primitive.NewMessage(topic, []byte("auto-created "+seq))
		m.WithTag("TagA")
		m.WithProperty("seq", seq)
		res, err := p.SendSync(context.Background(), m)
		check(err, "send "+seq+" to a topic nobody created")
		if res.Status != primitive.SendOK || res.MessageQueue.Topic != topic {
			fail("send %s: %v", seq, res)
		}
		want = append(want, seq)
	}
	got := newReceived()
	group := "go_auto_c_" + a.id
	// The consumer needs the new topic's route, which the broker registers with the name server.
	var c interface{ Shutdown() error }
	var startErr error
	if !waitFor(30*time.Second, func() bool {
		c, startErr = tryStartConsumer(a.consumerOptions(group, group), topic, "*", recorder(got, "c"))
		return startErr == nil
	}) {
		fail("no consumer could start on the auto-created topic within 30 s: %v", startErr)
	}
	defer c.Shutdown()
	if !waitFor(60*time.Second, func() bool { return got.has(want) }) {
		fail("messages of the auto-created topic not received within 60 s: %s", short(got.missing(want)))
	}
	if got.count() != len(want) {
		fail("%d deliveries of %d messages", got.count(), len(want))
	}
}
