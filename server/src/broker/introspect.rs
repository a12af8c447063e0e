//! Operator requests answered from the broker's tables: who consumes a topic
//! (QUERY_TOPIC_CONSUME_BY_WHO, which `mqadmin queryMsgById` and the dashboard use to track a
//! message) and the replication status (GET_BROKER_HA_STATUS, `mqadmin haStatus`); the broker's
//! settings and subscription groups (GET_BROKER_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
//! DELETE_SUBSCRIPTIONGROUP).

use skiff_model::admin::{AdminCommand, AdminReply, HaStatus};
use skiff_model::command::{ErrorKind, Reply, Request};
use skiff_model::route::DataVersion;

use tracing::info;

use super::BrokerState;

pub(super) fn handle(state: &BrokerState, command: AdminCommand) -> Reply {
    match command {
        AdminCommand::TopicConsumers { topic } => Reply::Admin(AdminReply::Groups(merge_groups(
            state.consumers.groups_subscribing(&topic),
            state.offsets.groups_of_topic(&topic),
        ))),
        AdminCommand::HaStatus => Reply::Admin(AdminReply::HaStatus(master_without_slaves(
            state.store.commit_log_max_offset(),
        ))),
        AdminCommand::GetBrokerConfig => Reply::Admin(AdminReply::Config {
            properties: state
                .config
                .java_properties()
                .into_iter()
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
            data_version: Some(DataVersion::default()),
        }),
        AdminCommand::GetAllSubscriptionGroups => {
            let (groups, data_version) = state.groups.snapshot();
            Reply::Admin(AdminReply::SubscriptionGroups {
                groups,
                data_version,
            })
        }
        AdminCommand::DeleteSubscriptionGroup {
            group,
            clean_offset,
        } => {
            let existed = state.groups.remove(&group);
            if clean_offset {
                state.offsets.remove_group(&group);
            }
            info!(group, existed, clean_offset, "subscription group deleted");
            Reply::Success
        }
        other => Reply::error(
            ErrorKind::RequestNotSupported,
            format!(
                "the broker does not serve {}; send it to a name server",
                super::request_name(&Request::Admin(other))
            ),
        ),
    }
}

/// Java answers the union of live subscribers and groups that hold offsets on the topic.
fn merge_groups(mut live: Vec<String>, with_offsets: Vec<String>) -> Vec<String> {
    live.extend(with_offsets);
    live.sort();
    live.dedup();
    live
}

/// Skiff brokers are masters and replicate to no one: Java's `DefaultHAService.getRuntimeInfo`
/// of a master with an empty connection list.
fn master_without_slaves(commit_log_max_offset: i64) -> HaStatus {
    HaStatus {
        master: true,
        master_commit_log_max_offset: commit_log_max_offset,
        in_sync_slave_nums: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_are_live_and_offset_holding_groups_once_each() {
        let groups = merge_groups(vec!["b".into(), "c".into()], vec!["a".into(), "b".into()]);
        assert_eq!(groups, ["a", "b", "c"]);
        assert!(merge_groups(vec![], vec![]).is_empty());
    }

    #[test]
    fn ha_status_is_a_master_without_slaves() {
        let status = master_without_slaves(1234);
        assert!(status.master);
        assert_eq!(status.master_commit_log_max_offset, 1234);
        assert_eq!(status.in_sync_slave_nums, 0);
    }
}
