//! A slave's metadata sync (Java's `SlaveSynchronize`): topics, subscription groups, committed
//! consumer offsets, delay-level progress and the groups' PULL/POP modes come from the master
//! over the remoting protocol, so
//! that consumers that move to the slave, or a slave promoted to master, carry on where the
//! master was.
//!
//! Java syncs every 60 s, the first time 60 s after start; Skiff syncs as soon as it learns its
//! master's address (from the name servers' answer to its registration), then every 60 s. A
//! failed call is logged and tried again at the next round.

use std::sync::Arc;
use std::time::Duration;

use skiff_model::admin::{AdminCommand, AdminReply};
use skiff_model::command::{Reply, Request};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::BrokerState;
use crate::remoting_client::RemotingClient;

/// Java's `syncAll` period.
const SYNC_PERIOD: Duration = Duration::from_secs(60);
/// Java's timeout for each call.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs on a slave until `shutdown`.
pub(super) async fn run(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let mut master = state.name_servers.master();
    let mut ticker = tokio::time::interval(SYNC_PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
            changed = master.changed() => {
                if changed.is_err() {
                    return;
                }
                ticker.reset();
            }
        }
        let addr = master.borrow_and_update().master_addr.clone();
        match addr {
            Some(addr) if addr != state.broker_addr => {
                if let Err(err) = sync_all(&state, &addr).await {
                    warn!(master = %addr, %err, "metadata sync from the master failed; retried in 60 s");
                }
            }
            _ => debug!("no master known yet: nothing to sync"),
        }
    }
}

/// One round: topics, groups, consumer offsets, delay offsets, request modes, each applied as
/// Java does. (The timer's checkpoint and metrics matter only to a promoted slave, which Skiff
/// does not do yet.)
async fn sync_all(state: &Arc<BrokerState>, master: &str) -> Result<(), String> {
    let client = RemotingClient::connect_with(
        master,
        CALL_TIMEOUT,
        state.config.tls.client_uses_tls(state.config.use_tls),
    )
    .await
    .map_err(|e| e.to_string())?
    .signed_by(state.name_servers.credentials());
    let ask = |request: Request| {
        let client = client.clone();
        async move {
            match client.invoke(&request, CALL_TIMEOUT).await {
                Ok(Reply::Error(err)) => Err(format!(
                    "{}: {}",
                    skiff_protocol::remoting::request_name(&request),
                    err.message
                )),
                Ok(reply) => Ok(reply),
                Err(err) => Err(format!(
                    "{}: {err}",
                    skiff_protocol::remoting::request_name(&request)
                )),
            }
        }
    };

    if let Reply::TopicConfigs {
        topics,
        data_version,
    } = ask(Request::GetAllTopicConfig).await?
    {
        if state.topics.replace_from_master(topics, data_version) {
            info!(master, "topics synced from the master");
        }
    }
    if let Reply::Admin(AdminReply::SubscriptionGroups {
        groups,
        data_version,
    }) = ask(Request::Admin(AdminCommand::GetAllSubscriptionGroups)).await?
    {
        if state.groups.replace_from_master(groups, data_version) {
            info!(master, "subscription groups synced from the master");
        }
    }
    if let Reply::Admin(AdminReply::ConsumerOffsets { table, .. }) =
        ask(Request::Admin(AdminCommand::GetAllConsumerOffsets)).await?
    {
        state.offsets.merge_from_master(table);
    }
    if let Reply::Admin(AdminReply::DelayOffsets {
        table,
        data_version,
    }) = ask(Request::Admin(AdminCommand::GetAllDelayOffsets)).await?
    {
        let state = state.clone();
        let _ = tokio::task::spawn_blocking(move || {
            state.schedule.replace_from_master(table, data_version)
        })
        .await;
    }
    // A 4.9 master does not know this code; its refusal is no reason to warn every minute.
    match ask(Request::Admin(AdminCommand::GetAllMessageRequestModes)).await {
        Ok(Reply::Admin(AdminReply::MessageRequestModes(table))) => {
            let state = state.clone();
            let _ = tokio::task::spawn_blocking(move || state.pop.modes.replace_from_master(table))
                .await;
        }
        Ok(_) => {}
        Err(err) => debug!(master, %err, "message request modes not synced"),
    }
    debug!(master, "metadata synced from the master");
    Ok(())
}
