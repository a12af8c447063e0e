package main

import (
	"context"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txListener decides by the message's "seq": commit, rollback, or unknown first and commit when
// the broker checks back (CHECK_TRANSACTION_STATE).
type txListener struct {
	mu      sync.Mutex
	checks  map[string]int
	checked map[string]time.Time
	txIDs   map[string]string
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch m.GetProperty("seq") {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	default:
		return primitive.UnknowState
	}
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	seq := m.GetProperty("seq")
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checks[seq]++
	if _, ok := l.checked[seq]; !ok {
		l.checked[seq] = time.Now()
	}
	l.txIDs[seq] = m.TransactionId
	if seq == "rollback" {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

// transaction: a transactional send committed by the local transaction is delivered, one rolled
// back never is, and one left unknown is checked back by the broker, committed by the check, and
// delivered only after it.
func scenarioTransaction(a args) {
	topic := "go_tx_" + a.id
	a.createTopic(topic, 4)
	got := newReceived()
	group := "go_tx_c_" + a.id
	c := startConsumer(a.consumerOptions(group, group), topic, "*", recorder(got, "c"))
	defer c.Shutdown()

	l := &txListener{checks: map[string]int{}, checked: map[string]time.Time{}, txIDs: map[string]string{}}
	pg := "go_tx_p_" + a.id
	p, err := producer.NewTransactionProducer(l, producer.WithNameServer(a.nameServer()),
		producer.WithGroupName(pg), producer.WithInstanceName(pg), producer.WithRetry(2))
	check(err, "new transaction producer")
	check(p.Start(), "start transaction producer")
	defer p.Shutdown()

	txID := map[string]string{}
	for _, seq := range []string{"commit", "rollback", "unknown"} {
		m := primitive.NewMessage(topic, []byte("transactional "+seq))
		m.WithTag("TagT")
		m.WithKeys([]string{"tx-" + seq})
		m.WithProperty("seq", seq)
		res, err := p.SendMessageInTransaction(context.Background(), m)
		check(err, "transactional send "+seq)
		if res.Status != primitive.SendOK {
			fail("transactional send %s: %v", seq, res.SendResult)
		}
		txID[seq] = res.TransactionID
	}
	if !waitFor(30*time.Second, func() bool { return got.has([]string{"commit"}) }) {
		fail("the committed message was not delivered within 30 s")
	}
	// Apache checks unresolved halves every transactionCheckInterval (30 s by default) once they
	// are older than transactionTimeOut (6 s).
	if !waitFor(150*time.Second, func() bool { return got.has([]string{"unknown"}) }) {
		l.mu.Lock()
		defer l.mu.Unlock()
		fail("the unknown transaction was not checked and delivered within 150 s (checks: %v)", l.checks)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	checkedAt, ok := l.checked["unknown"]
	if !ok {
		fail("the unknown transaction was delivered without a check-back")
	}
	deliveredAt := func() time.Time { got.mu.Lock(); defer got.mu.Unlock(); return got.at["unknown"][0] }()
	if deliveredAt.Before(checkedAt) {
		fail("the unknown transaction was delivered before the check-back committed it")
	}
	if l.txIDs["unknown"] != txID["unknown"] {
		fail("check-back named transaction %q, the send had %q", l.txIDs["unknown"], txID["unknown"])
	}
	if n := len(got.get("rollback")); n != 0 {
		fail("the rolled back message was delivered %d times", n)
	}
	for _, seq := range []string{"commit", "unknown"} {
		m := got.get(seq)
		if len(m) != 1 {
			fail("%s delivered %d times", seq, len(m))
		}
		if m[0].Topic != topic || m[0].GetTags() != "TagT" || m[0].GetKeys() != "tx-"+seq ||
			string(m[0].Body) != "transactional "+seq {
			fail("%s came back changed: topic %q tags %q keys %q body %q", seq, m[0].Topic,
				m[0].GetTags(), m[0].GetKeys(), m[0].Body)
		}
	}
}
