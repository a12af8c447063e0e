//! Live consumer groups (`ConsumerManager`): which connections belong to each group, their client
//! ids, and the group's subscriptions as the latest heartbeat described them.
//!
//! Membership is per connection: a client that disconnects, unregisters or stops heartbeating
//! leaves every group it was in. Callers learn which groups changed so they can tell the remaining
//! members to rebalance.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use skiff_model::admin::{ClientConnection, ConsumerConnections};
use skiff_model::consumer::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, SubscriptionData,
};

use crate::net::ClientChannel;

/// Who a heartbeat came from: its client id and what its header said of the client.
pub struct Heartbeater<'a> {
    pub channel: &'a ClientChannel,
    pub client_id: &'a str,
    pub language: &'static str,
    pub version: i32,
}

struct Member {
    channel: ClientChannel,
    client_id: String,
    language: &'static str,
    version: i32,
    last_heartbeat: Instant,
}

impl Member {
    fn connection(&self) -> ClientConnection {
        ClientConnection {
            client_id: self.client_id.clone(),
            client_addr: self.channel.peer().to_string(),
            language: self.language.to_string(),
            version: self.version,
        }
    }
}

struct ConsumerGroupInfo {
    members: HashMap<u64, Member>,
    subscriptions: HashMap<String, SubscriptionData>,
    /// As the latest heartbeat said (Java keeps the group's `consumeType`, `messageModel` and
    /// `consumeFromWhere` the same way).
    consume_type: ConsumeType,
    message_model: MessageModel,
    consume_from_where: ConsumeFromWhere,
}

/// A live group as metrics see it.
pub struct OnlineGroup {
    pub name: String,
    pub members: usize,
    pub topics: Vec<String>,
    pub consume_type: ConsumeType,
}

#[derive(Default)]
pub struct ConsumerManager {
    groups: RwLock<HashMap<String, ConsumerGroupInfo>>,
}

impl ConsumerManager {
    /// Records a consumer's heartbeat; returns whether the group gained a member.
    pub fn register(&self, from: &Heartbeater, data: &ConsumerData) -> bool {
        let mut groups = self.groups.write();
        let group = groups
            .entry(data.group_name.clone())
            .or_insert_with(|| ConsumerGroupInfo {
                members: HashMap::new(),
                subscriptions: HashMap::new(),
                consume_type: data.consume_type,
                message_model: data.message_model,
                consume_from_where: data.consume_from_where,
            });
        group.consume_type = data.consume_type;
        group.message_model = data.message_model;
        group.consume_from_where = data.consume_from_where;
        let joined = match group.members.get_mut(&from.channel.id()) {
            Some(member) => {
                member.last_heartbeat = Instant::now();
                member.client_id = from.client_id.to_string();
                member.language = from.language;
                member.version = from.version;
                false
            }
            None => {
                group.members.insert(
                    from.channel.id(),
                    Member {
                        channel: from.channel.clone(),
                        client_id: from.client_id.to_string(),
                        language: from.language,
                        version: from.version,
                        last_heartbeat: Instant::now(),
                    },
                );
                true
            }
        };
        // The latest heartbeat describes the whole subscription set (`updateSubscription`).
        group
            .subscriptions
            .retain(|topic, _| data.subscription_data_set.iter().any(|s| &s.topic == topic));
        for sub in &data.subscription_data_set {
            match group.subscriptions.get(&sub.topic) {
                Some(existing) if existing.sub_version > sub.sub_version => {}
                _ => {
                    group.subscriptions.insert(sub.topic.clone(), sub.clone());
                }
            }
        }
        joined
    }

    /// Every live group with its member count and subscribed topics (for metrics).
    pub fn online_groups(&self) -> Vec<OnlineGroup> {
        self.groups
            .read()
            .iter()
            .map(|(name, group)| OnlineGroup {
                name: name.clone(),
                members: group.members.len(),
                topics: group.subscriptions.keys().cloned().collect(),
                consume_type: group.consume_type,
            })
            .collect()
    }

    /// Removes `channel` from `group`; returns whether it was a member.
    pub fn unregister(&self, group: &str, channel: &ClientChannel) -> bool {
        let mut groups = self.groups.write();
        let Some(info) = groups.get_mut(group) else {
            return false;
        };
        let removed = info.members.remove(&channel.id()).is_some();
        if info.members.is_empty() {
            groups.remove(group);
        }
        removed
    }

    /// Removes a closed connection from every group; returns the groups it left.
    pub fn on_channel_closed(&self, channel: &ClientChannel) -> Vec<String> {
        self.remove_members_where(|member| member.channel.id() == channel.id())
    }

    /// Removes members silent for longer than `timeout` and closes their connections
    /// (`ClientHousekeepingService`); returns the groups that lost members.
    pub fn scan_expired(&self, timeout: Duration) -> Vec<String> {
        let now = Instant::now();
        self.remove_members_where(|member| {
            let expired = now.duration_since(member.last_heartbeat) > timeout;
            if expired {
                member.channel.close();
            }
            expired
        })
    }

    fn remove_members_where(&self, gone: impl Fn(&Member) -> bool) -> Vec<String> {
        let mut groups = self.groups.write();
        let mut changed = Vec::new();
        groups.retain(|name, info| {
            let before = info.members.len();
            info.members.retain(|_, member| !gone(member));
            if info.members.len() != before {
                changed.push(name.clone());
            }
            !info.members.is_empty()
        });
        changed
    }

    /// Client ids of the group's members, or `None` if the group has none.
    pub fn client_ids(&self, group: &str) -> Option<Vec<String>> {
        let groups = self.groups.read();
        let info = groups.get(group)?;
        let mut ids: Vec<String> = info.members.values().map(|m| m.client_id.clone()).collect();
        ids.sort();
        ids.dedup();
        Some(ids)
    }

    /// Connections of the group's members.
    pub fn channels(&self, group: &str) -> Vec<ClientChannel> {
        self.groups
            .read()
            .get(group)
            .map(|info| info.members.values().map(|m| m.channel.clone()).collect())
            .unwrap_or_default()
    }

    /// The group's connections and subscriptions (GET_CONSUMER_CONNECTION_LIST); `None` if the
    /// group has no live member.
    pub fn connections(&self, group: &str) -> Option<ConsumerConnections> {
        let groups = self.groups.read();
        let info = groups.get(group)?;
        let mut connections: Vec<ClientConnection> =
            info.members.values().map(Member::connection).collect();
        connections.sort_by(|a, b| a.client_id.cmp(&b.client_id));
        Some(ConsumerConnections {
            connections,
            subscriptions: info
                .subscriptions
                .iter()
                .map(|(topic, sub)| (topic.clone(), sub.clone()))
                .collect(),
            consume_type: info.consume_type,
            message_model: info.message_model,
            consume_from_where: info.consume_from_where,
        })
    }

    /// The group's members: client id and connection, by client id.
    pub fn members(&self, group: &str) -> Vec<(String, ClientChannel)> {
        let mut members: Vec<(String, ClientChannel)> = self
            .groups
            .read()
            .get(group)
            .map(|info| {
                info.members
                    .values()
                    .map(|m| (m.client_id.clone(), m.channel.clone()))
                    .collect()
            })
            .unwrap_or_default();
        members.sort_by(|a, b| a.0.cmp(&b.0));
        members
    }

    /// The open connection of the group's member `client_id` (`findChannel`).
    pub fn find_channel(&self, group: &str, client_id: &str) -> Option<ClientChannel> {
        let groups = self.groups.read();
        groups
            .get(group)?
            .members
            .values()
            .filter(|m| m.client_id == client_id && !m.channel.is_closed())
            .max_by_key(|m| m.last_heartbeat)
            .map(|m| m.channel.clone())
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<SubscriptionData> {
        self.groups
            .read()
            .get(group)
            .and_then(|info| info.subscriptions.get(topic).cloned())
    }

    /// Groups with a live member subscribed to `topic` (`queryTopicConsumeByWho`), sorted.
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        let mut groups: Vec<String> = self
            .groups
            .read()
            .iter()
            .filter(|(_, info)| info.subscriptions.contains_key(topic))
            .map(|(group, _)| group.clone())
            .collect();
        groups.sort();
        groups
    }

    /// How the live group consumes, as its latest heartbeat said.
    pub fn consume_type(&self, group: &str) -> Option<ConsumeType> {
        self.groups.read().get(group).map(|info| info.consume_type)
    }

    /// How many topics the group subscribes to; `None` if the group has no live member.
    pub fn subscription_count(&self, group: &str) -> Option<usize> {
        self.groups
            .read()
            .get(group)
            .map(|info| info.subscriptions.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consumer(group: &str, topics: &[(&str, i64)]) -> ConsumerData {
        ConsumerData {
            group_name: group.to_string(),
            subscription_data_set: topics
                .iter()
                .map(|(topic, version)| {
                    SubscriptionData::from_expression(topic, "TAG", "*", *version)
                })
                .collect(),
            ..ConsumerData::default()
        }
    }

    fn from<'a>(channel: &'a ClientChannel, client_id: &'a str) -> Heartbeater<'a> {
        Heartbeater {
            channel,
            client_id,
            language: "JAVA",
            version: 479,
        }
    }

    #[test]
    fn membership_follows_heartbeats_and_connections() {
        let manager = ConsumerManager::default();
        let (a, _rx_a) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        let (b, _rx_b) = ClientChannel::detached("127.0.0.1:2".parse().unwrap());
        assert!(manager.register(&from(&a, "client-a"), &consumer("g", &[("T", 1)])));
        assert!(!manager.register(&from(&a, "client-a"), &consumer("g", &[("T", 1)])));
        assert!(manager.register(&from(&b, "client-b"), &consumer("g", &[("T", 1)])));
        assert_eq!(manager.client_ids("g").unwrap(), ["client-a", "client-b"]);
        assert_eq!(manager.channels("g").len(), 2);

        assert_eq!(manager.on_channel_closed(&a), ["g"]);
        assert_eq!(manager.client_ids("g").unwrap(), ["client-b"]);
        assert!(manager.unregister("g", &b));
        assert!(manager.client_ids("g").is_none());
        assert!(manager.subscription_count("g").is_none());
    }

    #[test]
    fn the_latest_heartbeat_defines_the_subscriptions() {
        let manager = ConsumerManager::default();
        let (a, _rx) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        manager.register(&from(&a, "c"), &consumer("g", &[("T", 5), ("U", 5)]));
        manager.register(&from(&a, "c"), &consumer("g", &[("T", 4)]));
        assert_eq!(
            manager.subscription("g", "T").unwrap().sub_version,
            5,
            "older version ignored"
        );
        assert!(
            manager.subscription("g", "U").is_none(),
            "dropped topic removed"
        );
        manager.register(&from(&a, "c2"), &consumer("f", &[("T", 1)]));
        assert_eq!(manager.groups_subscribing("T"), ["f", "g"]);
        assert!(manager.groups_subscribing("U").is_empty());
    }

    #[test]
    fn connections_say_who_is_connected_and_what_the_group_subscribes() {
        let manager = ConsumerManager::default();
        let (a, _rx_a) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        let (b, _rx_b) = ClientChannel::detached("127.0.0.1:2".parse().unwrap());
        assert!(manager.connections("g").is_none());
        let data = ConsumerData {
            message_model: MessageModel::Broadcasting,
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            ..consumer("g", &[("T", 1)])
        };
        manager.register(&from(&b, "client-b"), &data);
        let go = Heartbeater {
            language: "GO",
            version: 317,
            ..from(&a, "client-a")
        };
        manager.register(&go, &data);
        let group = manager.connections("g").unwrap();
        let ids: Vec<_> = group.connections.iter().map(|c| &c.client_id).collect();
        assert_eq!(ids, ["client-a", "client-b"]);
        assert_eq!(group.connections[0].language, "GO");
        assert_eq!(group.connections[0].version, 317);
        assert_eq!(group.connections[0].client_addr, "127.0.0.1:1");
        assert_eq!(group.message_model, MessageModel::Broadcasting);
        assert_eq!(
            group.consume_from_where,
            ConsumeFromWhere::ConsumeFromFirstOffset
        );
        assert!(group.subscriptions.contains_key("T"));
        assert_eq!(manager.find_channel("g", "client-a"), Some(a.clone()));
        assert!(manager.find_channel("g", "client-c").is_none());
        a.close();
        assert!(manager.find_channel("g", "client-a").is_none());
    }

    #[test]
    fn silent_members_expire_and_get_disconnected() {
        let manager = ConsumerManager::default();
        let (a, _rx) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        manager.register(&from(&a, "c"), &consumer("g", &[("T", 1)]));
        assert!(manager.scan_expired(Duration::from_secs(60)).is_empty());
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(manager.scan_expired(Duration::from_millis(1)), ["g"]);
        assert!(a.is_closed());
    }
}
