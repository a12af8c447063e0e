use super::*;
use bytes::Bytes;
use skiff_store::StoreConfig;

const NOW: i64 = 1_800_000_000_000;

fn props(pairs: &[(&str, &str)]) -> Properties {
    pairs.iter().copied().collect()
}

fn redirect_now(config: &BrokerConfig, p: &mut Properties) -> Result<(String, i32), Reply> {
    redirect(config, false, 0, p, "TopicA", 3, NOW)
}

fn remark(reply: Reply) -> (ErrorKind, String) {
    match reply {
        Reply::Error(e) => (e.kind, e.message),
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn each_property_gives_its_due_time() {
    let at = |pairs: &[(&str, &str)]| deliver_ms(&props(pairs), NOW);
    assert_eq!(at(&[(keys::TIMER_DELAY_SEC, "3")]), Some(NOW + 3000));
    assert_eq!(at(&[(keys::TIMER_DELAY_MS, "3500")]), Some(NOW + 3500));
    assert_eq!(
        at(&[(keys::TIMER_DELIVER_MS, "1900000000000")]),
        Some(1_900_000_000_000)
    );
    // Java's order: seconds, then milliseconds, then the absolute time.
    assert_eq!(
        at(&[(keys::TIMER_DELIVER_MS, "5"), (keys::TIMER_DELAY_MS, "10")]),
        Some(NOW + 10)
    );
    assert_eq!(at(&[(keys::TIMER_DELAY_SEC, "soon")]), None);
    assert_eq!(at(&[]), None);
}

#[test]
fn a_timer_message_goes_to_the_wheel_topic_with_javas_properties() {
    let config = BrokerConfig::default();
    let mut p = props(&[(keys::TIMER_DELAY_MS, "3500"), ("TAGS", "a")]);
    assert_eq!(
        redirect_now(&config, &mut p).unwrap(),
        (TIMER_TOPIC.to_string(), 0)
    );
    // NOW + 3500 rounds down to its second.
    assert_eq!(p.get(TIMER_OUT_MS), Some((NOW + 3000).to_string().as_str()));
    assert_eq!(p.get(keys::REAL_TOPIC), Some("TopicA"));
    assert_eq!(p.get(keys::REAL_QUEUE_ID), Some("3"));
    assert_eq!(p.get(keys::TIMER_DELAY_MS), Some("3500"));

    // A delivery time on a tick boundary belongs to the tick before it.
    let mut p = props(&[(keys::TIMER_DELIVER_MS, &(NOW + 2000).to_string())]);
    redirect_now(&config, &mut p).unwrap();
    assert_eq!(p.get(TIMER_OUT_MS), Some((NOW + 1000).to_string().as_str()));
}

#[test]
fn what_is_not_a_later_timer_message_stays_where_it_was_sent() {
    let config = BrokerConfig::default();
    let unchanged = Ok(("TopicA".to_string(), 3));
    let mut plain = props(&[("TAGS", "a")]);
    assert_eq!(redirect_now(&config, &mut plain), unchanged);
    let mut past = props(&[(keys::TIMER_DELIVER_MS, "1000")]);
    assert_eq!(redirect_now(&config, &mut past), unchanged);
    let mut negative = props(&[(keys::TIMER_DELAY_SEC, "-5")]);
    assert_eq!(redirect_now(&config, &mut negative), unchanged);
    let mut already = props(&[(keys::TIMER_DELAY_SEC, "5"), (TIMER_OUT_MS, "1")]);
    assert_eq!(redirect_now(&config, &mut already), unchanged);
    // `__STARTDELIVERTIME` is not a timer property for Apache RocketMQ 5.3.3 either.
    let mut ons = props(&[("__STARTDELIVERTIME", &(NOW + 5000).to_string())]);
    assert_eq!(redirect_now(&config, &mut ons), unchanged);
    // Batches and prepared transaction halves are not redirected.
    let mut p = props(&[(keys::TIMER_DELAY_SEC, "5")]);
    assert_eq!(
        redirect(&config, true, 0, &mut p, "TopicA", 3, NOW),
        unchanged
    );
    assert_eq!(
        redirect(
            &config,
            false,
            sys_flag::TRANSACTION_PREPARED_TYPE,
            &mut p,
            "TopicA",
            3,
            NOW
        ),
        unchanged
    );
    // A delay level wins and the timer properties go.
    let mut level = props(&[(keys::DELAY_TIME_LEVEL, "3"), (keys::TIMER_DELAY_SEC, "5")]);
    assert_eq!(redirect_now(&config, &mut level), unchanged);
    assert!(!level.contains(keys::TIMER_DELAY_SEC));
}

#[test]
fn refusals_are_javas() {
    let config = BrokerConfig::default();
    let mut far = props(&[(keys::TIMER_DELAY_SEC, &(3 * 86_400 + 1).to_string())]);
    let (kind, text) = remark(redirect_now(&config, &mut far).unwrap_err());
    assert_eq!(kind, ErrorKind::MessageIllegal);
    assert_eq!(
        text,
        "timer message illegal, the delay time should not be bigger than the max delay 259200000ms; or if set del msg, the delay time should be bigger than the current time"
    );
    let mut garbage = props(&[(keys::TIMER_DELIVER_MS, "tomorrow")]);
    assert_eq!(
        remark(redirect_now(&config, &mut garbage).unwrap_err()).0,
        ErrorKind::MessageIllegal
    );
    // Java's arithmetic wraps: an absurd delay lands in the past and is not delayed; never a panic.
    let mut huge = props(&[(keys::TIMER_DELAY_SEC, &i64::MAX.to_string())]);
    assert_eq!(
        redirect_now(&config, &mut huge),
        Ok(("TopicA".to_string(), 3))
    );
    let mut delete_past = props(&[(keys::TIMER_DELIVER_MS, "1"), (TIMER_DEL_UNIQKEY, "x")]);
    assert_eq!(
        remark(redirect_now(&config, &mut delete_past).unwrap_err()).0,
        ErrorKind::MessageIllegal
    );
    let off = BrokerConfig {
        timer_wheel_enable: false,
        ..BrokerConfig::default()
    };
    let mut p = props(&[(keys::TIMER_DELAY_SEC, "5")]);
    let (kind, text) = remark(redirect_now(&off, &mut p).unwrap_err());
    assert_eq!(kind, ErrorKind::SystemError);
    assert_eq!(
        text,
        "accurate timer message is not enabled, timerWheelEnable is false"
    );
}

#[test]
fn exact_due_counts_relative_delays_from_the_store_time() {
    let p = props(&[(keys::TIMER_DELAY_SEC, "2")]);
    assert_eq!(exact_due_ms(&p, NOW), Some(NOW + 2000));
    let rolled = props(&[(keys::TIMER_DELAY_SEC, "2"), (TIMER_ROLL_TIMES, "1")]);
    assert_eq!(exact_due_ms(&rolled, NOW), None);
}

/// The timer over a real store in a temporary directory, driven with chosen clock values.
struct Harness {
    dir: tempfile::TempDir,
    config: BrokerConfig,
    store: Arc<MessageStore>,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            mapped_file_size_timer_log: 52 * 100 + 16,
            ..BrokerConfig::default()
        };
        let store = Arc::new(Self::open_store(dir.path()));
        Harness { dir, config, store }
    }

    fn open_store(dir: &std::path::Path) -> MessageStore {
        MessageStore::open(StoreConfig {
            commit_log_file_size: 4 * 1024 * 1024,
            ..StoreConfig::new(dir)
        })
        .unwrap()
    }

    fn timer(&self, now: i64) -> Timer {
        let (files, recovered) = TimerStore::open(&TimerStoreConfig {
            root_dir: self.config.store_path_root_dir.clone(),
            precision_ms: 1000,
            log_file_size: self.config.mapped_file_size_timer_log,
            log_resident_tail: self.config.commit_log_resident_tail / 64,
        })
        .unwrap();
        Timer::recover(&self.config, files, recovered, self.store.clone(), now)
    }

    fn send(&self, key: &str, deliver_ms: i64, now: i64) {
        self.send_with(key, deliver_ms, now, &[]);
    }

    fn send_with(&self, key: &str, deliver_ms: i64, now: i64, extra: &[(&str, &str)]) {
        let mut p = props(&[
            (keys::TIMER_DELIVER_MS, &deliver_ms.to_string()),
            (keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, key),
        ]);
        for (k, v) in extra {
            p.insert(*k, *v);
        }
        let (topic, queue_id) = redirect(&self.config, false, 0, &mut p, "TopicA", 1, now).unwrap();
        self.store
            .append_messages(vec![MessageToStore {
                topic,
                queue_id,
                flag: 0,
                sys_flag: 0,
                born_timestamp: now,
                born_host: "127.0.0.1:5000".parse().unwrap(),
                reconsume_times: 0,
                prepared_transaction_offset: 0,
                body: Bytes::from_static(b"body"),
                properties: p.encode(),
            }])
            .unwrap();
    }

    /// Keys delivered to TopicA queue 1, with their properties.
    fn delivered(&self) -> Vec<Properties> {
        let got = self
            .store
            .get_messages("TopicA", 1, 0, 1000, usize::MAX, &|_| true);
        got.messages
            .iter()
            .map(|b| Record::decode(b, false).unwrap().parsed_properties())
            .collect()
    }

    fn delivered_keys(&self) -> Vec<String> {
        self.delivered()
            .iter()
            .map(|p| p.uniq_key().unwrap().to_string())
            .collect()
    }
}

#[test]
fn messages_are_delivered_at_their_time_never_before() {
    let h = Harness::new();
    let mut timer = h.timer(NOW);
    h.send("a", NOW + 2_300, NOW);
    h.send("b", NOW + 3_500, NOW);
    h.send("c", NOW + 2_000, NOW);
    timer.enqueue(NOW + 5);
    for now in (NOW..NOW + 2_000).step_by(100) {
        timer.dequeue(now);
    }
    assert!(h.delivered_keys().is_empty());
    timer.dequeue(NOW + 2_000);
    assert_eq!(h.delivered_keys(), vec!["c"]);
    timer.dequeue(NOW + 2_299);
    assert_eq!(h.delivered_keys(), vec!["c"]);
    timer.dequeue(NOW + 2_300);
    assert_eq!(h.delivered_keys(), vec!["c", "a"]);
    timer.dequeue(NOW + 3_499);
    timer.dequeue(NOW + 3_500);
    assert_eq!(h.delivered_keys(), vec!["c", "a", "b"]);
    let props = &h.delivered()[0];
    // As Java's delivered messages: REAL_TOPIC and REAL_QID stay.
    assert_eq!(props.get(keys::REAL_TOPIC), Some("TopicA"));
    assert_eq!(props.get(keys::REAL_QUEUE_ID), Some("1"));
    assert_eq!(
        props.get(TIMER_OUT_MS),
        Some((NOW + 1000).to_string().as_str())
    );
    assert_eq!(props.get(TIMER_ENQUEUE_MS), Some(NOW.to_string().as_str()));
    assert_eq!(
        props.get(TIMER_DEQUEUE_MS),
        Some((NOW + 2_000).to_string().as_str())
    );
}

#[test]
fn a_message_sent_for_the_open_tick_or_a_past_one_is_not_lost() {
    let h = Harness::new();
    let mut timer = h.timer(NOW);
    timer.dequeue(NOW + 1_100); // opens the tick of NOW + 1000
    h.send("open", NOW + 1_700, NOW + 1_100);
    timer.enqueue(NOW + 1_150);
    timer.dequeue(NOW + 1_600);
    assert!(h.delivered_keys().is_empty());
    timer.dequeue(NOW + 1_700);
    assert_eq!(h.delivered_keys(), vec!["open"]);
    // Sent long ago (its tick passed while the entry waited in the topic): delivered at once.
    h.send("late", NOW + 500, NOW);
    timer.enqueue(NOW + 2_500);
    assert_eq!(h.delivered_keys(), vec!["open", "late"]);
    assert_eq!(
        h.delivered()[1].get(TIMER_ENQUEUE_MS),
        Some(i64::MAX.to_string().as_str())
    );
}

#[test]
fn a_restart_delivers_what_was_pending_once() {
    let h = Harness::new();
    {
        let mut timer = h.timer(NOW);
        h.send("early", NOW + 1_500, NOW);
        h.send("pending", NOW + 4_500, NOW);
        timer.enqueue(NOW + 10);
        timer.dequeue(NOW + 1_000);
        timer.dequeue(NOW + 2_000);
        timer.flush(NOW + 2_000);
        // Sent after the checkpoint and put in the wheel, then a crash (no flush).
        h.send("after", NOW + 5_200, NOW + 2_100);
        timer.enqueue(NOW + 2_100);
    }
    assert_eq!(h.delivered_keys(), vec!["early"]);
    let mut timer = h.timer(NOW + 3_000);
    timer.enqueue(NOW + 3_000);
    for now in (NOW + 3_000..NOW + 7_000).step_by(100) {
        timer.dequeue(now);
        timer.enqueue(now);
    }
    assert_eq!(h.delivered_keys(), vec!["early", "pending", "after"]);
}

#[test]
fn a_store_without_timer_files_delivers_from_the_topic() {
    let h = Harness::new();
    h.send("x", NOW + 1_500, NOW);
    h.send("y", NOW + 30_000, NOW);
    // No timer ever ran: no wheel, no log, no checkpoint.
    assert!(!skiff_store::timer::wheel_path(h.dir.path()).exists());
    let mut timer = h.timer(NOW + 10_000);
    timer.enqueue(NOW + 10_000);
    assert_eq!(h.delivered_keys(), vec!["x"]);
    timer.dequeue(NOW + 29_999);
    timer.dequeue(NOW + 30_000);
    assert_eq!(h.delivered_keys(), vec!["x", "y"]);
}

#[test]
fn a_far_message_is_rolled_back_onto_the_timer_topic() {
    let h = Harness::new();
    let config = BrokerConfig {
        timer_roll_window_slot: 10,
        ..h.config.clone()
    };
    let (files, recovered) = TimerStore::open(&TimerStoreConfig {
        root_dir: config.store_path_root_dir.clone(),
        precision_ms: 1000,
        log_file_size: config.mapped_file_size_timer_log,
        log_resident_tail: config.commit_log_resident_tail / 64,
    })
    .unwrap();
    let mut timer = Timer::recover(&config, files, recovered, h.store.clone(), NOW);
    h.send("far", NOW + 25_500, NOW);
    timer.enqueue(NOW);
    let mut now = NOW;
    while now <= NOW + 26_000 {
        timer.dequeue(now);
        timer.enqueue(now);
        if now < NOW + 25_500 {
            assert!(h.delivered_keys().is_empty(), "early at {now}");
        }
        now += 100;
    }
    let delivered = h.delivered();
    assert_eq!(delivered.len(), 1);
    let rolls: i32 = delivered[0].get(TIMER_ROLL_TIMES).unwrap().parse().unwrap();
    assert!(rolls >= 1);
}

#[test]
fn a_delete_marker_cancels_its_target_in_the_same_tick_only() {
    let h = Harness::new();
    let mut timer = h.timer(NOW);
    let cancel = |uniq: &str| format!("TopicA+{uniq}");
    h.send("victim", NOW + 2_300, NOW);
    h.send("kept", NOW + 2_300, NOW);
    h.send("elsewhere", NOW + 3_400, NOW);
    // The proxy's marker: same delivery time, the target named by REAL_TOPIC+UNIQ_KEY.
    h.send_with(
        "marker-1",
        NOW + 2_300,
        NOW,
        &[(TIMER_DEL_UNIQKEY, &cancel("victim"))],
    );
    // A marker for another tick than its target's deletes nothing (as in Java).
    h.send_with(
        "marker-2",
        NOW + 4_600,
        NOW,
        &[(TIMER_DEL_UNIQKEY, &cancel("elsewhere"))],
    );
    timer.enqueue(NOW + 5);
    for now in (NOW..NOW + 6_000).step_by(100) {
        timer.dequeue(now);
    }
    assert_eq!(h.delivered_keys(), vec!["kept", "elsewhere"]);
}

#[test]
fn a_delete_marker_reaching_an_open_tick_still_cancels() {
    let h = Harness::new();
    let mut timer = h.timer(NOW);
    h.send("victim", NOW + 1_800, NOW);
    timer.enqueue(NOW + 5);
    timer.dequeue(NOW + 1_100); // opens the tick of NOW + 1000 with the victim in it
    h.send_with(
        "marker",
        NOW + 1_800,
        NOW + 1_100,
        &[(TIMER_DEL_UNIQKEY, "TopicA+victim")],
    );
    timer.enqueue(NOW + 1_150);
    for now in (NOW + 1_200..NOW + 3_000).step_by(100) {
        timer.dequeue(now);
    }
    assert!(h.delivered_keys().is_empty(), "{:?}", h.delivered_keys());
}
