//! QUERY_ASSIGNMENT and SET_MESSAGE_REQUEST_MODE (`QueryAssignmentProcessor`,
//! `MessageRequestModeManager`): server-side rebalance for clients with `clientRebalance` off,
//! and the per group and topic switch between PULL and POP, persisted as
//! `config/messageRequestMode.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use skiff_model::command::{ErrorKind, Reply};
use skiff_model::pop::{
    Assignment, AssignmentQuery, MessageRequestMode, PopReply, RequestModeSetting,
};
use skiff_model::topic::is_retry_topic;
use tracing::warn;

use super::super::{persist, BrokerState};
use crate::net::Handled;

/// `AllocateMessageQueueAveragely.getName()`.
const STRATEGY_AVG: &str = "AVG";
/// `AllocateMessageQueueAveragelyByCircle.getName()`.
const STRATEGY_AVG_BY_CIRCLE: &str = "AVG_BY_CIRCLE";

/// topic → group → setting, as Java's `messageRequestModeMap`.
type ModeTable = BTreeMap<String, BTreeMap<String, RequestModeSetting>>;

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModeFile {
    #[serde(default)]
    message_request_mode_map: ModeTable,
}

pub(crate) struct RequestModeManager {
    table: RwLock<ModeTable>,
    path: PathBuf,
    /// One writer at a time, in order.
    write: parking_lot::Mutex<()>,
}

impl RequestModeManager {
    pub fn load(config: &crate::config::BrokerConfig) -> Self {
        let path = persist::config_dir(&config.store_path_root_dir).join("messageRequestMode.json");
        let file: ModeFile = persist::load(&path).unwrap_or_default();
        RequestModeManager {
            table: RwLock::new(file.message_request_mode_map),
            path,
            write: parking_lot::Mutex::new(()),
        }
    }

    pub fn get(&self, topic: &str, group: &str) -> Option<RequestModeSetting> {
        self.table.read().get(topic)?.get(group).cloned()
    }

    /// Every setting (GET_ALL_MESSAGE_REQUEST_MODE).
    pub fn table(&self) -> ModeTable {
        self.table.read().clone()
    }

    /// A slave takes its master's table as it is, and writes the file if it changed (blocking:
    /// call off the async workers).
    pub fn replace_from_master(&self, table: ModeTable) {
        if *self.table.read() == table {
            return;
        }
        *self.table.write() = table;
        self.persist();
    }

    fn set(&self, setting: RequestModeSetting) {
        self.table
            .write()
            .entry(setting.topic.clone())
            .or_default()
            .insert(setting.consumer_group.clone(), setting);
    }

    /// Writes the file (blocking: call off the async workers).
    fn persist(&self) {
        let _one_writer = self.write.lock();
        let file = ModeFile {
            message_request_mode_map: self.table.read().clone(),
        };
        let text = serde_json::to_string_pretty(&file).expect("modes serialize");
        if let Err(e) = persist::store(&self.path, &text) {
            warn!(path = %self.path.display(), "cannot write the message request modes: {e}");
        }
    }
}

pub(super) fn set_mode(state: &Arc<BrokerState>, setting: RequestModeSetting) -> Handled {
    if is_retry_topic(&setting.topic) {
        return Handled::Now(Reply::error(
            ErrorKind::NoPermission,
            "retry topic is not allowed to set mode",
        ));
    }
    if state.topics.get(&setting.topic).is_none() {
        return Handled::Now(Reply::error(
            ErrorKind::TopicNotExist,
            format!("topic[{}] not exist", setting.topic),
        ));
    }
    if state
        .groups
        .find_or_create(&setting.consumer_group)
        .is_none()
    {
        return Handled::Now(Reply::error(
            ErrorKind::SubscriptionGroupNotExist,
            "subscription group does not exist",
        ));
    }
    state.pop.modes.set(setting);
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let _ = tokio::task::spawn_blocking(move || state.pop.modes.persist()).await;
        Reply::Success
    }))
}

pub(super) fn query(state: &BrokerState, query: &AssignmentQuery) -> Reply {
    let setting = state
        .pop
        .modes
        .get(&query.topic, &query.consumer_group)
        .unwrap_or_else(|| RequestModeSetting {
            topic: query.topic.clone(),
            consumer_group: query.consumer_group.clone(),
            // `defaultMessageRequestMode` is PULL; a retry topic is always pulled.
            mode: MessageRequestMode::Pull,
            pop_share_queue_num: 0,
        });
    let queues = assign(state, query, &setting);
    Reply::pop(PopReply::Assignments(queues.map(|queues| {
        queues
            .into_iter()
            .map(|queue_id| Assignment {
                topic: query.topic.clone(),
                broker_name: state.config.broker_name.clone(),
                queue_id,
                mode: setting.mode,
            })
            .collect()
    })))
}

/// `doLoadBalance`: the queue ids of this broker given to the client; `None` = no valid answer.
fn assign(
    state: &BrokerState,
    query: &AssignmentQuery,
    setting: &RequestModeSetting,
) -> Option<Vec<i32>> {
    let config = state.topics.get(&query.topic)?;
    let all: Vec<i32> = (0..config.read_queue_nums).collect();
    if query.message_model == "BROADCASTING" {
        return Some(all);
    }
    if all.is_empty() {
        return Some(Vec::new());
    }
    let cids = state.consumers.client_ids(&query.consumer_group)?;
    let strategy = match query.strategy_name.as_str() {
        STRATEGY_AVG => averagely,
        STRATEGY_AVG_BY_CIRCLE => by_circle,
        other => {
            warn!(strategy = other, "QueryLoad: unsupported strategy");
            return None;
        }
    };
    if setting.mode != MessageRequestMode::Pop {
        return Some(strategy(&query.client_id, &all, &cids));
    }
    Some(allocate_for_pop(
        strategy,
        &query.client_id,
        &all,
        &cids,
        setting.pop_share_queue_num,
    ))
}

type Strategy = fn(&str, &[i32], &[String]) -> Vec<i32>;

/// `allocate4Pop`: with no sharing every client pops every queue (queue id -1).
fn allocate_for_pop(
    strategy: Strategy,
    client: &str,
    all: &[i32],
    cids: &[String],
    share: i32,
) -> Vec<i32> {
    if share <= 0 || share as usize >= cids.len().saturating_sub(1) {
        return vec![-1];
    }
    if cids.len() <= all.len() {
        let mut result = strategy(client, all, cids);
        if let Some(mut index) = cids.iter().position(|c| c == client) {
            for _ in 0..share {
                index = (index + 1) % cids.len();
                result.extend(strategy(&cids[index], all, cids));
            }
        }
        result
    } else {
        // More clients than queues: each client gets one queue.
        cids.iter()
            .position(|c| c == client)
            .map(|i| vec![all[i % all.len()]])
            .unwrap_or_default()
    }
}

/// `AllocateMessageQueueAveragely`.
fn averagely(client: &str, all: &[i32], cids: &[String]) -> Vec<i32> {
    let Some(index) = cids.iter().position(|c| c == client) else {
        return Vec::new();
    };
    let (n, m) = (all.len(), cids.len());
    let modulo = n % m;
    let average = if n <= m {
        1
    } else if modulo > 0 && index < modulo {
        n / m + 1
    } else {
        n / m
    };
    let start = if modulo > 0 && index < modulo {
        index * average
    } else {
        index * average + modulo
    };
    let range = average.min(n.saturating_sub(start));
    (0..range).map(|i| all[(start + i) % n]).collect()
}

/// `AllocateMessageQueueAveragelyByCircle`.
fn by_circle(client: &str, all: &[i32], cids: &[String]) -> Vec<i32> {
    let Some(index) = cids.iter().position(|c| c == client) else {
        return Vec::new();
    };
    (index..all.len())
        .filter(|i| i % cids.len() == index)
        .map(|i| all[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    #[test]
    fn strategies_split_like_java() {
        let all: Vec<i32> = (0..8).collect();
        assert_eq!(averagely("c0", &all, &cids(3)), vec![0, 1, 2]);
        assert_eq!(averagely("c2", &all, &cids(3)), vec![6, 7]);
        assert_eq!(by_circle("c1", &all, &cids(3)), vec![1, 4, 7]);
        assert_eq!(averagely("nobody", &all, &cids(3)), Vec::<i32>::new());
    }

    #[test]
    fn pop_without_sharing_pops_every_queue() {
        let all: Vec<i32> = (0..4).collect();
        assert_eq!(
            allocate_for_pop(averagely, "c0", &all, &cids(2), 0),
            vec![-1]
        );
        // Sharing with the next consumer: its own queues and the next one's.
        assert_eq!(
            allocate_for_pop(averagely, "c0", &all, &cids(4), 1),
            vec![0, 1]
        );
        assert_eq!(
            allocate_for_pop(averagely, "c4", &all[..2], &cids(5), 1),
            vec![0]
        );
    }
}
