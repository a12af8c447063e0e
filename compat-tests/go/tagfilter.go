package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// tag-filter: a `TagA || TagC` push consumer gets every TagA and TagC message and none tagged
// TagB, TagAB or none.
func scenarioTagFilter(a args) {
	topic := "go_tag_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_tag_p_" + a.id)
	defer p.Shutdown()
	var want []string
	for i := 0; i < 40; i++ {
		tag := []string{"TagA", "TagB", "TagC", "TagAB", ""}[i%5]
		seq := fmt.Sprintf("%03d-%s", i, tag)
		m := primitive.NewMessage(topic, []byte("tag filter "+seq))
		m.WithProperty("seq", seq)
		if tag != "" {
			m.WithTag(tag)
		}
		_, err := p.SendSync(context.Background(), m)
		check(err, "send "+seq)
		if tag == "TagA" || tag == "TagC" {
			want = append(want, seq)
		}
	}
	got := newReceived()
	group := "go_tag_c_" + a.id
	c := startConsumer(a.consumerOptions(group, group), topic, "TagA || TagC", recorder(got, "c"))
	defer c.Shutdown()
	if !waitFor(60*time.Second, func() bool { return got.has(want) }) {
		fail("TagA/TagC messages not received within 60 s: %s (received %d deliveries)",
			short(got.missing(want)), got.count())
	}
	for _, s := range got.seqs() {
		m := got.get(s)[0]
		if t := m.GetTags(); t != "TagA" && t != "TagC" {
			fail("a TagA || TagC consumer received %s tagged %q", s, t)
		}
	}
}
