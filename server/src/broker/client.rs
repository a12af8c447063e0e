//! Client traffic about group membership (`ClientManageProcessor`, `ConsumerManageProcessor`):
//! HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, and the NOTIFY_CONSUMER_IDS_CHANGED
//! the broker pushes to a group's members whenever the group changes, so they rebalance at once
//! instead of at their next 20 s rebalance.

use std::sync::Arc;
use std::time::Duration;

use skiff_model::command::{ErrorKind, Reply, Request};
use skiff_model::consumer::HeartbeatData;
use skiff_model::route::perm;
use skiff_model::topic;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::consumers::Heartbeater;
use super::BrokerState;
use crate::net::RequestContext;

/// How often silent clients are looked for (`ClientHousekeepingService` runs every 10 s).
const HOUSEKEEPING_PERIOD: Duration = Duration::from_secs(10);

pub(super) fn heartbeat(
    state: &BrokerState,
    ctx: &RequestContext,
    heartbeat: HeartbeatData,
) -> Reply {
    let from = Heartbeater {
        channel: &ctx.channel,
        client_id: &heartbeat.client_id,
        language: ctx.language.name(),
        version: ctx.version,
    };
    for producer in &heartbeat.producer_data_set {
        state.producers.register(&from, &producer.group_name);
    }
    for consumer in &heartbeat.consumer_data_set {
        let group_config = state.groups.find_or_create(&consumer.group_name);
        let notify = group_config
            .as_ref()
            .is_none_or(|g| g.notify_consumer_ids_changed_enable);
        if let Some(group_config) = &group_config {
            // Clustering consumers get their failed messages back through %RETRY%group.
            state.topics.create_if_absent(
                &topic::retry_topic(&consumer.group_name),
                group_config.retry_queue_nums,
                perm::READ | perm::WRITE,
            );
        }
        let joined = state.consumers.register(&from, consumer);
        if joined {
            info!(group = %consumer.group_name, client = %heartbeat.client_id,
                  model = ?consumer.message_model, "consumer joined");
            if notify {
                notify_consumer_ids_changed(state, &consumer.group_name);
            }
        }
    }
    Reply::Success
}

pub(super) fn unregister(
    state: &BrokerState,
    ctx: &RequestContext,
    client_id: &str,
    producer_group: Option<&str>,
    consumer_group: Option<&str>,
) -> Reply {
    if let Some(group) = producer_group.filter(|g| !g.is_empty()) {
        state.producers.unregister(group, &ctx.channel);
    }
    if let Some(group) = consumer_group.filter(|g| !g.is_empty()) {
        if state.consumers.unregister(group, &ctx.channel) {
            info!(group, client = client_id, "consumer left");
            notify_consumer_ids_changed(state, group);
        }
        // The client is leaving the group for good: its queue locks need not wait to expire.
        let released = state.locks.unlock_all_of(group, client_id);
        if released > 0 {
            info!(
                group,
                client = client_id,
                released,
                "queue locks released on unregister"
            );
        }
    }
    Reply::Success
}

pub(super) fn consumer_list(state: &BrokerState, group: &str) -> Reply {
    match state.consumers.client_ids(group) {
        Some(ids) if !ids.is_empty() => Reply::ConsumerIds(ids),
        _ => Reply::error(
            ErrorKind::SystemError,
            format!("no consumer for this group, {group}"),
        ),
    }
}

/// Tells every member of `group` to rebalance now.
pub(super) fn notify_consumer_ids_changed(state: &BrokerState, group: &str) {
    let request = Request::NotifyConsumerIdsChanged {
        group: group.to_string(),
    };
    for channel in state.consumers.channels(group) {
        debug!(group, ?channel, "notifying consumer ids changed");
        channel.send_oneway(&request);
    }
}

/// Drops consumers that stopped heartbeating (`channelExpiredTimeout`, 120 s by default).
pub(super) async fn expire_silent_clients(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let timeout = Duration::from_millis(state.config.channel_expired_timeout);
    let mut ticker = tokio::time::interval(HOUSEKEEPING_PERIOD);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {
                state.producers.scan_expired(timeout);
                state.locks.purge_expired(super::now_millis());
                for group in state.consumers.scan_expired(timeout) {
                    info!(group, "removed consumers that stopped heartbeating");
                    notify_consumer_ids_changed(&state, &group);
                }
            }
        }
    }
}
