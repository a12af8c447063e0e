package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// delay: messages with DelayTimeLevel 2 (5 s) and 3 (10 s) reach a running push consumer no
// earlier than their delay after the send began, and within 10 s after it, intact; messages
// without a delay arrive at once.
func scenarioDelay(a args) {
	topic := "go_delay_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_delay_p_" + a.id)
	defer p.Shutdown()
	got := newReceived()
	group := "go_delay_c_" + a.id
	c := startConsumer(a.consumerOptions(group, group), topic, "*", recorder(got, "c"))
	defer c.Shutdown()

	delays := map[int]time.Duration{0: 0, 2: 5 * time.Second, 3: 10 * time.Second}
	type delayed struct {
		seq    string
		level  int
		sentAt time.Time
	}
	var all []delayed
	var want []string
	for _, level := range []int{2, 3, 0, 2, 3, 0} {
		seq := fmt.Sprintf("level%d-%d", level, len(all))
		m := primitive.NewMessage(topic, []byte("delayed "+seq))
		m.WithTag("TagD")
		m.WithKeys([]string{seq})
		m.WithProperty("seq", seq)
		m.WithProperty("user", "kept ✓")
		if level > 0 {
			m.WithDelayTimeLevel(level)
		}
		sentAt := time.Now()
		_, err := p.SendSync(context.Background(), m)
		check(err, "send "+seq)
		all = append(all, delayed{seq, level, sentAt})
		want = append(want, seq)
	}
	if !waitFor(45*time.Second, func() bool { return got.has(want) }) {
		fail("delayed messages not received within 45 s: %s", short(got.missing(want)))
	}
	for _, d := range all {
		msgs := got.get(d.seq)
		m := msgs[0]
		took := func() time.Duration { got.mu.Lock(); defer got.mu.Unlock(); return got.at[d.seq][0].Sub(d.sentAt) }()
		if took < delays[d.level] {
			fail("%s (delay level %d = %v) was delivered after %v", d.seq, d.level, delays[d.level], took)
		}
		if took > delays[d.level]+10*time.Second {
			fail("%s (delay level %d = %v) was delivered only after %v", d.seq, d.level, delays[d.level], took)
		}
		if m.Topic != topic || m.GetTags() != "TagD" || m.GetKeys() != d.seq || m.GetProperty("user") != "kept ✓" ||
			string(m.Body) != "delayed "+d.seq {
			fail("%s came back changed: topic %q tags %q keys %q user %q body %q", d.seq, m.Topic,
				m.GetTags(), m.GetKeys(), m.GetProperty("user"), m.Body)
		}
		if len(msgs) != 1 {
			fail("%s delivered %d times", d.seq, len(msgs))
		}
	}
}
