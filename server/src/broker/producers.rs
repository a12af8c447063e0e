//! Live producer groups (`ProducerManager`): which connections heartbeat as members of each group,
//! so that the transaction check can ask one of them about a half message.
//!
//! Membership is per connection, like consumers': a producer that disconnects, unregisters or
//! stops heartbeating leaves every group it was in.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use skiff_model::admin::{ClientConnection, ProducerInfo};

use super::consumers::Heartbeater;
use crate::net::ClientChannel;

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

#[derive(Default)]
pub struct ProducerManager {
    groups: RwLock<HashMap<String, HashMap<u64, Member>>>,
}

impl ProducerManager {
    /// Records a producer's heartbeat.
    pub fn register(&self, from: &Heartbeater, group: &str) {
        let mut groups = self.groups.write();
        let members = groups.entry(group.to_string()).or_default();
        let member = members.entry(from.channel.id()).or_insert_with(|| Member {
            channel: from.channel.clone(),
            client_id: String::new(),
            language: from.language,
            version: from.version,
            last_heartbeat: Instant::now(),
        });
        member.last_heartbeat = Instant::now();
        if member.client_id != from.client_id {
            member.client_id = from.client_id.to_string();
        }
        member.language = from.language;
        member.version = from.version;
    }

    /// The group's live connections (GET_PRODUCER_CONNECTION_LIST), by client id; `None` if the
    /// group has none.
    pub fn connections(&self, group: &str) -> Option<Vec<ClientConnection>> {
        let groups = self.groups.read();
        let mut list: Vec<ClientConnection> = groups
            .get(group)?
            .values()
            .map(Member::connection)
            .collect();
        list.sort_by(|a, b| a.client_id.cmp(&b.client_id));
        Some(list)
    }

    /// Every group's connections with their last heartbeat (GET_ALL_PRODUCER_INFO); `now_ms` is
    /// the wall clock the heartbeat ages are turned into timestamps with.
    pub fn table(&self, now_ms: i64) -> BTreeMap<String, Vec<ProducerInfo>> {
        let groups = self.groups.read();
        groups
            .iter()
            .map(|(group, members)| {
                let mut list: Vec<ProducerInfo> = members
                    .values()
                    .map(|m| ProducerInfo {
                        connection: m.connection(),
                        last_update_timestamp: now_ms
                            - m.last_heartbeat.elapsed().as_millis() as i64,
                    })
                    .collect();
                list.sort_by(|a, b| a.connection.client_id.cmp(&b.connection.client_id));
                (group.clone(), list)
            })
            .collect()
    }

    /// Producer connections over all groups (a connection in two groups counts twice, as in
    /// Java's `rocketmq_producer_connections`).
    pub fn connection_count(&self) -> usize {
        self.groups.read().values().map(HashMap::len).sum()
    }

    /// Removes `channel` from `group`.
    pub fn unregister(&self, group: &str, channel: &ClientChannel) {
        let mut groups = self.groups.write();
        if let Some(members) = groups.get_mut(group) {
            members.remove(&channel.id());
            if members.is_empty() {
                groups.remove(group);
            }
        }
    }

    /// Removes a closed connection from every group.
    pub fn on_channel_closed(&self, channel: &ClientChannel) {
        self.remove_members_where(|m| m.channel.id() == channel.id());
    }

    /// Removes members silent for longer than `timeout` (`ProducerManager.scanNotActiveChannel`).
    pub fn scan_expired(&self, timeout: Duration) {
        let now = Instant::now();
        self.remove_members_where(|m| now.duration_since(m.last_heartbeat) > timeout);
    }

    fn remove_members_where(&self, gone: impl Fn(&Member) -> bool) {
        let mut groups = self.groups.write();
        groups.retain(|_, members| {
            members.retain(|_, m| !gone(m));
            !members.is_empty()
        });
    }

    /// An open connection of the group (`getAvailableChannel`); the most recently heard from, so a
    /// producer that just restarted is asked rather than its dead predecessor.
    pub fn available_channel(&self, group: &str) -> Option<ClientChannel> {
        let groups = self.groups.read();
        groups
            .get(group)?
            .values()
            .filter(|m| !m.channel.is_closed())
            .max_by_key(|m| m.last_heartbeat)
            .map(|m| m.channel.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from<'a>(channel: &'a ClientChannel, client_id: &'a str) -> Heartbeater<'a> {
        Heartbeater {
            channel,
            client_id,
            language: "JAVA",
            version: 479,
        }
    }

    #[test]
    fn members_come_and_go_per_connection() {
        let producers = ProducerManager::default();
        let (a, _rx_a) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        let (b, _rx_b) = ClientChannel::detached("127.0.0.1:2".parse().unwrap());
        assert!(producers.available_channel("g").is_none());
        producers.register(&from(&a, "client-a"), "g");
        producers.register(&from(&b, "client-b"), "g");
        assert!(producers.available_channel("g").is_some());
        let table = producers.table(1_000_000);
        assert_eq!(table["g"].len(), 2);
        assert!(table["g"][0].last_update_timestamp <= 1_000_000);
        assert!(table["g"][0].last_update_timestamp > 1_000_000 - 60_000);
        let ids: Vec<_> = producers
            .connections("g")
            .unwrap()
            .into_iter()
            .map(|c| (c.client_id, c.client_addr, c.language))
            .collect();
        assert_eq!(
            ids,
            [
                ("client-a".into(), "127.0.0.1:1".into(), "JAVA".into()),
                ("client-b".into(), "127.0.0.1:2".into(), "JAVA".into())
            ]
        );
        producers.on_channel_closed(&a);
        assert_eq!(producers.available_channel("g"), Some(b.clone()));
        producers.unregister("g", &b);
        assert!(producers.available_channel("g").is_none());
        assert!(producers.connections("g").is_none());
        producers.register(&from(&a, "client-a"), "g");
        std::thread::sleep(Duration::from_millis(2));
        producers.scan_expired(Duration::from_millis(1));
        assert!(producers.available_channel("g").is_none());
    }
}
