// The admin-topics scenario (see main.go).
package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// expectError checks that err is want; it returns err's message.
func expectError(what string, err, want error) (string, error) {
	if err == nil {
		return "", fail("%s succeeded, expected %v", what, want)
	}
	if !errors.Is(err, want) {
		return "", fail("%s failed with %v, expected %v", what, err, want)
	}
	return err.Error(), nil
}

// awaitTopics polls ListTopics until ok holds for its topics, for at most within.
func awaitTopics(
	adm *kadm.Client, ok func(kadm.TopicDetails) bool, what string, within time.Duration,
) (kadm.TopicDetails, error) {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := callContext()
		topics, err := adm.ListTopics(ctx)
		cancel()
		if err != nil {
			return nil, fail("list topics: %v", err)
		}
		if ok(topics) {
			return topics, nil
		}
		if time.Now().After(deadline) {
			return nil, fail("ListTopics did not %s within %v: %v", what, within, topics.Names())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func adminTopics(bootstrap, topic string) (string, error) {
	rf3 := topic + "-rf3"
	validated := topic + "-validate-only"
	admin, adm, err := newAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	defer admin.Close()

	// Each call has a context of its own: the waits between them are bounded apart.
	ctx, cancel := callContext()
	defer cancel()
	resps, err := adm.ValidateCreateTopics(ctx, 3, 1, nil, validated)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return "", fail("validate creating %s: %v", validated, err)
	}
	if err := createTopic(adm, topic, 3); err != nil {
		return "", err
	}
	_, err = adm.CreateTopic(ctx, 3, 1, nil, topic)
	if _, err := expectError("creating "+topic+" again", err, kerr.TopicAlreadyExists); err != nil {
		return "", err
	}
	_, err = adm.CreateTopic(ctx, 1, 3, nil, rf3)
	rf3Error, err := expectError("creating "+rf3+" with replication factor 3", err, kerr.InvalidReplicationFactor)
	if err != nil {
		return "", err
	}

	// The controller has created it; the broker's metadata may follow a moment later.
	shown := func(t kadm.TopicDetails) bool { return t.Has(topic) }
	topics, err := awaitTopics(adm, shown, "show "+topic, 10*time.Second)
	if err != nil {
		return "", err
	}
	if topics.Has(rf3) {
		return "", fail("ListTopics shows %s, whose creation failed", rf3)
	}
	if topics.Has(validated) {
		return "", fail("ListTopics shows %s, only validated", validated)
	}
	d := topics[topic]
	if d.Err != nil || len(d.Partitions) != 3 {
		return "", fail("ListTopics %s: %d partitions (%v)", topic, len(d.Partitions), d.Err)
	}
	for p := int32(0); p < 3; p++ {
		pd, ok := d.Partitions[p]
		if !ok || pd.Err != nil || pd.Leader < 0 || len(pd.Replicas) != 1 {
			return "", fail("ListTopics %s partition %d: %+v", topic, p, pd)
		}
	}

	ctx, cancel = callContext()
	defer cancel()
	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return "", fail("describe configs of %s: %v", topic, err)
	}
	rc, err := configs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return "", fail("describe configs of %s: %v", topic, err)
	}
	values := map[string]int64{}
	for _, c := range rc.Configs {
		if (c.Key == "retention.ms" || c.Key == "max.message.bytes") && c.Value != nil {
			v, err := strconv.ParseInt(*c.Value, 10, 64)
			if err != nil {
				return "", fail("describe configs of %s: %s = %s", topic, c.Key, *c.Value)
			}
			values[c.Key] = v
		}
	}
	retention, ok := values["retention.ms"]
	// -1 keeps records forever; anything else is a time.
	if !ok || retention != -1 && retention <= 0 {
		return "", fail("describe configs of %s: retention.ms %v", topic, values)
	}
	if maxBytes, ok := values["max.message.bytes"]; !ok || maxBytes <= 0 {
		return "", fail("describe configs of %s: max.message.bytes %v", topic, values)
	}

	deleting := time.Now()
	deleted, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		return "", fail("delete %s: %v", topic, err)
	}
	dropped := func(t kadm.TopicDetails) bool { return !t.Has(topic) }
	if _, err := awaitTopics(adm, dropped, "drop "+topic, 30*time.Second); err != nil {
		return "", err
	}
	deletedMs := time.Since(deleting).Milliseconds()
	ctx, cancel = callContext()
	defer cancel()
	deleted, err = adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = deleted.Error()
	}
	if _, err := expectError("deleting "+topic+" again", err, kerr.UnknownTopicOrPartition); err != nil {
		return "", err
	}
	return fmt.Sprintf("partitions=3 retention.ms=%d max.message.bytes=%d deleted_within_ms=%d rf3=%q "+
		"client=%s result=ok",
		retention, values["max.message.bytes"], deletedMs, rf3Error, clientVersion()), nil
}
