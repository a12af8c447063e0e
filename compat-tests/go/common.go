package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// args are the flags every scenario gets: --namesrv, --broker, --id.
type args struct {
	namesrv string
	broker  string
	id      string
}

func parseArgs(list []string) (args, error) {
	var a args
	for i := 0; i < len(list); i += 2 {
		if i+1 >= len(list) || !strings.HasPrefix(list[i], "--") {
			return a, fmt.Errorf("expected --key value pairs, got %q", list[i:])
		}
		v := list[i+1]
		switch list[i] {
		case "--namesrv":
			a.namesrv = v
		case "--broker":
			a.broker = v
		case "--id":
			a.id = v
		default:
			return a, fmt.Errorf("unknown flag %s", list[i])
		}
	}
	if a.namesrv == "" || a.broker == "" || a.id == "" {
		return a, fmt.Errorf("--namesrv, --broker and --id are required")
	}
	return a, nil
}

// setupLogging sends the client's logs to logs/rocketmq-go.log under the working directory (the
// harness runs every scenario in its own run directory), at warn unless ROCKETMQ_GO_LOG_LEVEL
// asks for more.
func setupLogging() {
	_ = os.MkdirAll("logs", 0o755)
	path, _ := filepath.Abs(filepath.Join("logs", "rocketmq-go.log"))
	_ = rlog.SetOutputPath(path)
	level := os.Getenv("ROCKETMQ_GO_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	rlog.SetLogLevel(level)
}

// failure ends a scenario with FAIL: reason (see main).
type failure struct{ reason string }

func fail(format string, a ...interface{}) {
	panic(failure{fmt.Sprintf(format, a...)})
}

func check(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

// waitFor polls cond every 20 ms for at most timeout; false if it never held.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (a args) nameServer() primitive.NamesrvAddr {
	return primitive.NamesrvAddr{a.namesrv}
}

// createTopic creates topic with `queues` queues on the broker (UPDATE_AND_CREATE_TOPIC) and waits
// until the name server routes it, so that consumers can start (a Go push consumer refuses to start
// on a topic without a route).
func (a args) createTopic(topic string, queues int) {
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{a.namesrv})))
	check(err, "create admin")
	defer adm.Close()
	ctx := context.Background()
	check(adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(a.broker),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues)), "create topic "+topic)
	var last error
	if !waitFor(30*time.Second, func() bool {
		mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
		last = err
		return err == nil && len(mqs) == queues
	}) {
		fail("topic %s was not routed with %d queues within 30 s (last error: %v)", topic, queues, last)
	}
}

func (a args) newProducer(group string, opts ...producer.Option) rocketmq.Producer {
	all := append([]producer.Option{
		producer.WithNameServer(a.nameServer()),
		producer.WithGroupName(group),
		producer.WithInstanceName(group),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(10 * time.Second),
	}, opts...)
	p, err := rocketmq.NewProducer(all...)
	check(err, "new producer")
	check(p.Start(), "start producer")
	return p
}

// consumerOptions are the options of every push consumer here: the name server, the group, an
// instance name of its own (two consumers of one group in this process must not share a client),
// and consumption from the first offset for a new group.
func (a args) consumerOptions(group, instance string, opts ...consumer.Option) []consumer.Option {
	return append([]consumer.Option{
		consumer.WithNameServer(a.nameServer()),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithPullBatchSize(32),
	}, opts...)
}

// received is a thread-safe record of what consumers got, by the message's "seq" property.
type received struct {
	mu   sync.Mutex
	msgs map[string][]*primitive.MessageExt
	by   map[string][]string // seq -> consumer names, one per delivery
	at   map[string][]time.Time
}

func newReceived() *received {
	return &received{
		msgs: map[string][]*primitive.MessageExt{},
		by:   map[string][]string{},
		at:   map[string][]time.Time{},
	}
}

func (r *received) add(who string, msg *primitive.MessageExt) {
	seq := msg.GetProperty("seq")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[seq] = append(r.msgs[seq], msg)
	r.by[seq] = append(r.by[seq], who)
	r.at[seq] = append(r.at[seq], time.Now())
}

// has tells whether every seq in want was received at least once.
func (r *received) has(want []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range want {
		if len(r.msgs[s]) == 0 {
			return false
		}
	}
	return true
}

func (r *received) missing(want []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range want {
		if len(r.msgs[s]) == 0 {
			out = append(out, s)
		}
	}
	return out
}

func (r *received) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		n += len(m)
	}
	return n
}

func (r *received) get(seq string) []*primitive.MessageExt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*primitive.MessageExt(nil), r.msgs[seq]...)
}

func (r *received) seqs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for s := range r.msgs {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// short lists at most 10 items, for failure messages.
func short(items []string) string {
	if len(items) > 10 {
		return fmt.Sprintf("%v … (%d in all)", items[:10], len(items))
	}
	return fmt.Sprintf("%v", items)
}

// recorder is a push consumer callback that records every message and reports success.
func recorder(r *received, who string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			r.add(who, m)
		}
		return consumer.ConsumeSuccess, nil
	}
}

// startConsumer subscribes a new push consumer to topic with expression and starts it.
func startConsumer(opts []consumer.Option, topic, expression string,
	f func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) rocketmq.PushConsumer {
	c, err := tryStartConsumer(opts, topic, expression, f)
	check(err, "start push consumer")
	return c
}

// tryStartConsumer is startConsumer returning the error (Start fails while the topic has no route).
func tryStartConsumer(opts []consumer.Option, topic, expression string,
	f func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) (rocketmq.PushConsumer, error) {
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		return nil, fmt.Errorf("new push consumer: %w", err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expression}, f); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", topic, err)
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// sameUserProps checks that every property of sent is on got with the same value.
func sameUserProps(sent map[string]string, got *primitive.MessageExt) error {
	for k, v := range sent {
		if g := got.GetProperty(k); g != v {
			return fmt.Errorf("property %q is %q, sent %q", k, g, v)
		}
	}
	return nil
}
