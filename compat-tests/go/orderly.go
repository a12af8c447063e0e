package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// orderly: a producer with a hash queue selector (the Go MessageQueueSelector) sends 8 keys x 15
// messages to a 4-queue topic; all of a key go to one queue, and an orderly push consumer (queue
// locks from LOCK_BATCH_MQ) receives every key's messages in the order sent.
func scenarioOrderly(a args) {
	topic := "go_ord_" + a.id
	a.createTopic(topic, 4)
	p := a.newProducer("go_ord_p_"+a.id, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	defer p.Shutdown()

	const keys, perKey = 8, 15
	queueOf := map[string]int{}
	var want []string
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("order-%d", k)
			seq := fmt.Sprintf("%s-%03d", key, i)
			m := primitive.NewMessage(topic, []byte("orderly "+seq))
			m.WithShardingKey(key)
			m.WithKeys([]string{key})
			m.WithProperty("seq", seq)
			res, err := p.SendSync(context.Background(), m)
			check(err, "send "+seq)
			q := res.MessageQueue.QueueId
			if prev, ok := queueOf[key]; ok && prev != q {
				fail("the selector sent %s to queue %d, earlier ones of its key to %d", seq, q, prev)
			}
			queueOf[key] = q
			want = append(want, seq)
		}
	}

	var mu sync.Mutex
	next := map[string]int{} // key -> index expected next
	var disorder []string
	got := newReceived()
	group := "go_ord_c_" + a.id
	c := startConsumer(a.consumerOptions(group, group, consumer.WithConsumerOrder(true),
		consumer.WithRebalanceLockInterval(5*time.Second)), topic, "*",
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				key := m.GetKeys()
				var idx int
				fmt.Sscanf(m.GetProperty("seq")[len(key)+1:], "%d", &idx)
				if idx != next[key] {
					disorder = append(disorder, fmt.Sprintf("%s after %d of its key", m.GetProperty("seq"), next[key]))
				}
				next[key] = idx + 1
				if m.Queue.QueueId != queueOf[key] {
					disorder = append(disorder, fmt.Sprintf("%s read from queue %d, sent to %d",
						m.GetProperty("seq"), m.Queue.QueueId, queueOf[key]))
				}
				got.add("c", m)
			}
			return consumer.ConsumeSuccess, nil
		})
	defer c.Shutdown()
	if !waitFor(60*time.Second, func() bool { return got.has(want) }) {
		fail("orderly consumer did not receive everything within 60 s: %s (received %d deliveries)",
			short(got.missing(want)), got.count())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(disorder) > 0 {
		fail("out of order: %s", short(disorder))
	}
	if got.count() != len(want) {
		fail("%d deliveries of %d messages", got.count(), len(want))
	}
}
