//! The name server's tables (`RouteInfoManager` in Apache RocketMQ): which broker groups exist,
//! where their members listen, which queues each topic has on each group, and when each broker
//! last registered.
//!
//! All tables sit behind one lock because a route is a consistent snapshot across several of them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use skiff_model::route::perm;
use skiff_model::route::{
    BrokerData, BrokerRegistration, ClusterInfo, DataVersion, QueueData, RegistrationResult,
    TopicConfig, TopicRouteData, MASTER_ID,
};
use skiff_model::static_topic::TopicQueueMappingInfo;

/// When a broker was last heard from, and on which connection.
struct BrokerLive {
    last_update: Instant,
    timeout: Duration,
    channel_id: u64,
    ha_server_addr: String,
    /// The topic table version of the last registration: an unchanged one leaves the routes as
    /// they are (so a `wipeWritePerm` lasts until the broker's topics change, as in Java).
    data_version: DataVersion,
}

#[derive(Default)]
struct Tables {
    /// topic → queues of that topic on each broker group.
    topic_queue_table: HashMap<String, GroupQueues>,
    /// static topic → what each broker group registered of its mapping.
    topic_queue_mapping_table: HashMap<String, BTreeMap<String, TopicQueueMappingInfo>>,
    /// broker name → group (cluster, member addresses).
    broker_addr_table: BTreeMap<String, BrokerData>,
    /// cluster → broker names.
    cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
    /// broker address → liveness.
    broker_live_table: HashMap<String, BrokerLive>,
}

/// A broker identified for removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerIdentity {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_addr: String,
    pub broker_id: i64,
}

#[derive(Default)]
pub struct RouteInfoManager {
    tables: RwLock<Tables>,
}

impl RouteInfoManager {
    /// Records a broker's registration (the periodic heartbeat of the broker, too).
    pub fn register_broker(
        &self,
        registration: &BrokerRegistration,
        channel_id: u64,
        default_timeout: Duration,
    ) -> RegistrationResult {
        let mut tables = self.tables.write();
        tables
            .cluster_addr_table
            .entry(registration.cluster_name.clone())
            .or_default()
            .insert(registration.broker_name.clone());

        let broker_data = tables
            .broker_addr_table
            .entry(registration.broker_name.clone())
            .or_insert_with(|| BrokerData {
                cluster: registration.cluster_name.clone(),
                broker_name: registration.broker_name.clone(),
                ..BrokerData::default()
            });
        broker_data.cluster = registration.cluster_name.clone();
        broker_data.enable_acting_master = registration.enable_acting_master == Some(true);
        // One address holds one role: a slave promoted to master must not stay listed as slave.
        broker_data
            .broker_addrs
            .retain(|id, addr| *addr != registration.broker_addr || *id == registration.broker_id);
        broker_data
            .broker_addrs
            .insert(registration.broker_id, registration.broker_addr.clone());

        let is_master = registration.broker_id == MASTER_ID;
        // Java's prime slave: a 5.x slave with the lowest id registered in its group, that is,
        // one whose master is gone. Its topics keep the group's queues in the routes (read-only
        // when the group lets a slave act as master).
        let is_prime_slave = !is_master
            && registration.enable_acting_master.is_some()
            && broker_data.broker_addrs.keys().next() == Some(&registration.broker_id);
        let wipe_write = is_prime_slave && broker_data.enable_acting_master;
        let topics_changed = tables
            .broker_live_table
            .get(&registration.broker_addr)
            .is_none_or(|live| live.data_version != registration.data_version);
        if is_master || is_prime_slave {
            // Java's `isTopicConfigChanged`, per topic: a new table version rewrites every
            // topic; an unchanged one (the periodic registration, or the later parts of a split
            // one, which carry the first part's version) only adds topics the broker does not
            // have here yet, so a wiped write permission stays.
            for topic in registration.topics.values() {
                let known = !topics_changed
                    && tables
                        .topic_queue_table
                        .get(&topic.topic_name)
                        .is_some_and(|queues| queues.contains(&registration.broker_name));
                if !known {
                    let mut topic = topic.clone();
                    if wipe_write {
                        topic.perm &= !perm::WRITE;
                    }
                    upsert_queue_data(&mut tables, &registration.broker_name, &topic);
                }
            }
            // Java's `topicQueueMappingInfoTable`: a new table version (or the first
            // registration) brings the mappings, each under the group it names.
            if topics_changed {
                for (topic, info) in &registration.topic_queue_mappings {
                    tables
                        .topic_queue_mapping_table
                        .entry(topic.clone())
                        .or_default()
                        .insert(info.bname.clone(), info.clone());
                }
            }
        }

        let timeout = registration
            .heartbeat_timeout_millis
            .filter(|ms| *ms > 0)
            .map(|ms| Duration::from_millis(ms as u64))
            .unwrap_or(default_timeout);
        tables.broker_live_table.insert(
            registration.broker_addr.clone(),
            BrokerLive {
                last_update: Instant::now(),
                timeout,
                channel_id,
                ha_server_addr: registration.ha_server_addr.clone(),
                data_version: registration.data_version,
            },
        );

        if registration.broker_id == MASTER_ID {
            return RegistrationResult::default();
        }
        let master_addr = tables
            .broker_addr_table
            .get(&registration.broker_name)
            .and_then(|data| data.broker_addrs.get(&MASTER_ID))
            .cloned();
        let ha_server_addr = master_addr
            .as_ref()
            .and_then(|addr| tables.broker_live_table.get(addr))
            .map(|live| live.ha_server_addr.clone());
        RegistrationResult {
            master_addr,
            ha_server_addr,
        }
    }

    /// Whether a broker at `broker_addr` is currently registered.
    pub fn is_live(&self, broker_addr: &str) -> bool {
        self.tables
            .read()
            .broker_live_table
            .contains_key(broker_addr)
    }

    /// Forgets a broker; a group with no members left disappears with its queues.
    pub fn unregister_broker(&self, broker: &BrokerIdentity) {
        let mut tables = self.tables.write();
        remove_broker(&mut tables, broker);
    }

    /// Removes brokers that have not registered within their timeout; returns them.
    pub fn scan_not_active_brokers(&self) -> Vec<BrokerIdentity> {
        let now = Instant::now();
        self.remove_brokers_where(|live| now.duration_since(live.last_update) > live.timeout)
    }

    /// Removes brokers whose registration came over a connection that just closed.
    pub fn on_channel_closed(&self, channel_id: u64) -> Vec<BrokerIdentity> {
        self.remove_brokers_where(|live| live.channel_id == channel_id)
    }

    fn remove_brokers_where(&self, dead: impl Fn(&BrokerLive) -> bool) -> Vec<BrokerIdentity> {
        let mut tables = self.tables.write();
        let dead_addrs: Vec<String> = tables
            .broker_live_table
            .iter()
            .filter(|(_, live)| dead(live))
            .map(|(addr, _)| addr.clone())
            .collect();
        let mut removed = Vec::new();
        for addr in dead_addrs {
            let identity = tables.broker_addr_table.values().find_map(|data| {
                data.broker_addrs
                    .iter()
                    .find(|(_, a)| **a == addr)
                    .map(|(id, _)| BrokerIdentity {
                        cluster_name: data.cluster.clone(),
                        broker_name: data.broker_name.clone(),
                        broker_addr: addr.clone(),
                        broker_id: *id,
                    })
            });
            match identity {
                Some(identity) => {
                    remove_broker(&mut tables, &identity);
                    removed.push(identity);
                }
                None => {
                    tables.broker_live_table.remove(&addr);
                }
            }
        }
        removed
    }

    /// The route of `topic`, or `None` if no live broker group serves it.
    pub fn topic_route(&self, topic: &str) -> Option<TopicRouteData> {
        let tables = self.tables.read();
        let queues = tables.topic_queue_table.get(topic)?;
        let queue_datas: Vec<QueueData> = queues.0.clone();
        let broker_datas: Vec<BrokerData> = queues
            .0
            .iter()
            .filter_map(|queues| tables.broker_addr_table.get(&queues.broker_name).cloned())
            .collect();
        if queue_datas.is_empty() || broker_datas.is_empty() {
            return None;
        }
        Some(TopicRouteData {
            queue_datas,
            broker_datas,
            topic_queue_mapping_by_broker: tables
                .topic_queue_mapping_table
                .get(topic)
                .map(|mappings| Box::new(mappings.clone())),
            ..TopicRouteData::default()
        })
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        let tables = self.tables.read();
        ClusterInfo {
            broker_addr_table: tables.broker_addr_table.clone(),
            cluster_addr_table: tables.cluster_addr_table.clone(),
        }
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS (`getSystemTopicList`): every cluster name and broker name
    /// (each broker keeps a topic of its own name), and the address of a broker, which the
    /// client asks for the broker's own system topics.
    pub fn system_topics(&self) -> (Vec<String>, Option<String>) {
        let tables = self.tables.read();
        let mut topics = Vec::new();
        for (cluster, brokers) in &tables.cluster_addr_table {
            topics.push(cluster.clone());
            topics.extend(brokers.iter().cloned());
        }
        let broker_addr = tables
            .broker_addr_table
            .values()
            .find_map(|broker| broker.broker_addrs.values().next().cloned());
        (topics, broker_addr)
    }

    pub fn all_topics(&self) -> Vec<String> {
        let tables = self.tables.read();
        let mut topics: Vec<String> = tables.topic_queue_table.keys().cloned().collect();
        topics.sort();
        topics
    }

    /// Deletes a topic everywhere, or only from the broker groups of `cluster`.
    pub fn delete_topic(&self, topic: &str, cluster: Option<&str>) {
        let mut tables = self.tables.write();
        let Some(cluster) = cluster.filter(|c| !c.is_empty()) else {
            tables.topic_queue_table.remove(topic);
            tables.topic_queue_mapping_table.remove(topic);
            return;
        };
        let brokers = tables
            .cluster_addr_table
            .get(cluster)
            .cloned()
            .unwrap_or_default();
        if let Some(queues) = tables.topic_queue_table.get_mut(topic) {
            queues
                .0
                .retain(|queues| !brokers.contains(&queues.broker_name));
            if queues.0.is_empty() {
                tables.topic_queue_table.remove(topic);
            }
        }
        if let Some(mappings) = tables.topic_queue_mapping_table.get_mut(topic) {
            mappings.retain(|broker_name, _| !brokers.contains(broker_name));
            if mappings.is_empty() {
                tables.topic_queue_mapping_table.remove(topic);
            }
        }
    }
}

/// One topic's queues on each broker group, sorted by broker name. Most topics live on one or
/// a few groups: a vector costs a fraction of a map's node (a name server holding 100,000
/// topics allocated ~70 MB of nearly empty `BTreeMap` nodes, which the first registration
/// spent a quarter of its time faulting in).
#[derive(Default)]
struct GroupQueues(Vec<QueueData>);

impl GroupQueues {
    /// Sets the queues of `queue_data.broker_name`'s group.
    fn upsert(&mut self, queue_data: QueueData) {
        match self
            .0
            .binary_search_by(|q| q.broker_name.as_str().cmp(&queue_data.broker_name))
        {
            Ok(at) => self.0[at] = queue_data,
            Err(at) => self.0.insert(at, queue_data),
        }
    }

    fn remove(&mut self, broker_name: &str) {
        self.0.retain(|q| q.broker_name != broker_name);
    }

    fn contains(&self, broker_name: &str) -> bool {
        self.0
            .binary_search_by(|q| q.broker_name.as_str().cmp(broker_name))
            .is_ok()
    }

    fn get_mut(&mut self, broker_name: &str) -> Option<&mut QueueData> {
        self.0
            .binary_search_by(|q| q.broker_name.as_str().cmp(broker_name))
            .ok()
            .map(|at| &mut self.0[at])
    }
}

impl RouteInfoManager {
    /// `wipeWritePermOfBrokerByLock` / `addWritePermOfBrokerByLock`: takes the write bit off
    /// every queue of `broker_name` (wipe), or makes them read-write (add). Returns how many
    /// topics it touched.
    pub fn set_write_perm(&self, broker_name: &str, writable: bool) -> i32 {
        let mut tables = self.tables.write();
        let mut count = 0;
        for queues in tables.topic_queue_table.values_mut() {
            if let Some(queue) = queues.get_mut(broker_name) {
                queue.perm = if writable {
                    perm::READ | perm::WRITE
                } else {
                    queue.perm & !perm::WRITE
                };
                count += 1;
            }
        }
        count
    }
}

fn upsert_queue_data(tables: &mut Tables, broker_name: &str, topic: &TopicConfig) {
    let queue_data = QueueData {
        broker_name: broker_name.to_string(),
        read_queue_nums: topic.read_queue_nums,
        write_queue_nums: topic.write_queue_nums,
        perm: topic.perm,
        topic_sys_flag: topic.topic_sys_flag,
    };
    // A re-registration (every 30 s, all topics) finds the topic: no key copied.
    match tables.topic_queue_table.get_mut(&topic.topic_name) {
        Some(queues) => queues.upsert(queue_data),
        None => {
            tables
                .topic_queue_table
                .insert(topic.topic_name.clone(), GroupQueues(vec![queue_data]));
        }
    }
}

fn remove_broker(tables: &mut Tables, broker: &BrokerIdentity) {
    tables.broker_live_table.remove(&broker.broker_addr);
    let mut group_gone = false;
    if let Some(data) = tables.broker_addr_table.get_mut(&broker.broker_name) {
        data.broker_addrs
            .retain(|id, addr| !(*id == broker.broker_id && *addr == broker.broker_addr));
        group_gone = data.broker_addrs.is_empty();
    }
    if !group_gone {
        return;
    }
    tables.broker_addr_table.remove(&broker.broker_name);
    for names in tables.cluster_addr_table.values_mut() {
        names.remove(&broker.broker_name);
    }
    tables
        .cluster_addr_table
        .retain(|_, names| !names.is_empty());
    tables.topic_queue_table.retain(|_, queues| {
        queues.remove(&broker.broker_name);
        !queues.0.is_empty()
    });
    tables.topic_queue_mapping_table.retain(|_, mappings| {
        mappings.remove(&broker.broker_name);
        !mappings.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(name: &str, addr: &str, id: i64, topics: &[&str]) -> BrokerRegistration {
        BrokerRegistration {
            cluster_name: "DefaultCluster".into(),
            broker_name: name.into(),
            broker_addr: addr.into(),
            broker_id: id,
            ha_server_addr: format!("{addr}-ha"),
            topics: topics
                .iter()
                .map(|t| (t.to_string(), TopicConfig::new(*t, 4)))
                .collect(),
            ..BrokerRegistration::default()
        }
    }

    const TIMEOUT: Duration = Duration::from_secs(120);

    fn perms(routes: &RouteInfoManager, topic: &str) -> Vec<(String, i32)> {
        let route = routes.topic_route(topic).unwrap();
        route
            .queue_datas
            .iter()
            .map(|q| (q.broker_name.clone(), q.perm))
            .collect()
    }

    #[test]
    fn system_topics_are_cluster_and_broker_names_with_a_broker_to_ask() {
        let routes = RouteInfoManager::default();
        assert_eq!(routes.system_topics(), (vec![], None));
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["T"]), 1, TIMEOUT);
        routes.register_broker(&registration("b", "10.0.0.2:10911", 0, &["T"]), 2, TIMEOUT);
        let (topics, addr) = routes.system_topics();
        assert_eq!(topics, ["DefaultCluster", "a", "b"]);
        assert_eq!(addr.as_deref(), Some("10.0.0.1:10911"));
    }

    #[test]
    fn later_parts_of_a_split_registration_add_their_topics() {
        // Every part carries the version of the first one (Java's registerBrokerAll).
        let routes = RouteInfoManager::default();
        routes.register_broker(
            &registration("a", "10.0.0.1:10911", 0, &["T", "U"]),
            1,
            TIMEOUT,
        );
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["V"]), 1, TIMEOUT);
        for topic in ["T", "U", "V"] {
            assert_eq!(perms(&routes, topic), vec![("a".to_string(), 6)], "{topic}");
        }
    }

    #[test]
    fn wipe_and_add_write_perm_touch_one_broker_and_survive_heartbeats() {
        let routes = RouteInfoManager::default();
        let a = registration("a", "10.0.0.1:10911", 0, &["T", "U"]);
        routes.register_broker(&a, 1, TIMEOUT);
        routes.register_broker(&registration("b", "10.0.0.2:10911", 0, &["T"]), 2, TIMEOUT);
        assert_eq!(routes.set_write_perm("a", false), 2);
        assert_eq!(
            perms(&routes, "T"),
            vec![("a".to_string(), perm::READ), ("b".to_string(), 6)]
        );
        // The periodic registration with an unchanged topic table keeps the wipe (as Java).
        routes.register_broker(&a, 1, TIMEOUT);
        assert_eq!(perms(&routes, "U"), vec![("a".to_string(), perm::READ)]);
        assert_eq!(routes.set_write_perm("a", true), 2);
        assert_eq!(perms(&routes, "U"), vec![("a".to_string(), 6)]);
        assert_eq!(routes.set_write_perm("nobody", false), 0);
        // A changed topic table is applied again.
        routes.set_write_perm("a", false);
        let mut changed = a.clone();
        changed.data_version.counter += 1;
        routes.register_broker(&changed, 1, TIMEOUT);
        assert_eq!(perms(&routes, "U"), vec![("a".to_string(), 6)]);
    }

    #[test]
    fn a_static_topics_route_carries_each_groups_mapping_until_the_topic_goes() {
        let routes = RouteInfoManager::default();
        let mut a = registration("a", "10.0.0.1:10911", 0, &["S", "T"]);
        let info = TopicQueueMappingInfo {
            topic: "S".into(),
            total_queues: 2,
            bname: "a".into(),
            epoch: 9,
            curr_id_map: BTreeMap::from([(0, 0), (1, 1)]),
            ..TopicQueueMappingInfo::default()
        };
        a.topic_queue_mappings.insert("S".into(), info.clone());
        routes.register_broker(&a, 1, TIMEOUT);
        let mapping = routes
            .topic_route("S")
            .unwrap()
            .topic_queue_mapping_by_broker;
        assert_eq!(
            mapping,
            Some(Box::new(BTreeMap::from([("a".to_string(), info)])))
        );
        assert_eq!(
            routes
                .topic_route("T")
                .unwrap()
                .topic_queue_mapping_by_broker,
            None
        );
        routes.delete_topic("S", None);
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["S"]), 1, TIMEOUT);
        assert_eq!(
            routes
                .topic_route("S")
                .unwrap()
                .topic_queue_mapping_by_broker,
            None
        );
    }

    #[test]
    fn route_lists_every_group_serving_a_topic() {
        let routes = RouteInfoManager::default();
        routes.register_broker(&registration("b", "10.0.0.2:10911", 0, &["T"]), 1, TIMEOUT);
        routes.register_broker(
            &registration("a", "10.0.0.1:10911", 0, &["T", "U"]),
            2,
            TIMEOUT,
        );
        let route = routes.topic_route("T").unwrap();
        let names: Vec<_> = route
            .queue_datas
            .iter()
            .map(|q| q.broker_name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(route.broker_datas.len(), 2);
        assert_eq!(route.broker_datas[0].broker_addrs[&0], "10.0.0.1:10911");
        assert!(routes.topic_route("missing").is_none());
        assert_eq!(routes.all_topics(), ["T", "U"]);
    }

    #[test]
    fn slaves_learn_their_master() {
        let routes = RouteInfoManager::default();
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["T"]), 1, TIMEOUT);
        let result =
            routes.register_broker(&registration("a", "10.0.0.9:10911", 1, &["T"]), 2, TIMEOUT);
        assert_eq!(result.master_addr.as_deref(), Some("10.0.0.1:10911"));
        assert_eq!(result.ha_server_addr.as_deref(), Some("10.0.0.1:10911-ha"));
    }

    /// Java's prime slave: once its master is gone, a 5.x slave's topics reach the routes
    /// (read-only with `enableActingMaster`); a pre-5.0 slave's never do.
    #[test]
    fn a_slave_whose_master_is_gone_keeps_the_routes_up_to_date() {
        let routes = RouteInfoManager::default();
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["T"]), 1, TIMEOUT);
        let mut slave = registration("a", "10.0.0.9:10911", 1, &["T", "New"]);
        slave.enable_acting_master = Some(false);
        routes.register_broker(&slave, 2, TIMEOUT);
        assert!(routes.topic_route("New").is_none(), "a master is up");

        routes.on_channel_closed(1);
        routes.register_broker(&slave, 2, TIMEOUT);
        assert_eq!(perms(&routes, "New"), [("a".to_string(), 6)]);

        let mut acting = registration("a", "10.0.0.9:10911", 1, &["Acting"]);
        acting.enable_acting_master = Some(true);
        acting.data_version.counter = 1;
        routes.register_broker(&acting, 2, TIMEOUT);
        assert_eq!(perms(&routes, "Acting"), [("a".to_string(), 4)]);

        let mut old = registration("b", "10.0.0.8:10911", 1, &["Old"]);
        old.enable_acting_master = None;
        routes.register_broker(&old, 3, TIMEOUT);
        assert!(routes.topic_route("Old").is_none());
    }

    #[test]
    fn brokers_disappear_with_their_connection_or_timeout() {
        let routes = RouteInfoManager::default();
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["T"]), 7, TIMEOUT);
        let mut quick = registration("b", "10.0.0.2:10911", 0, &["T"]);
        quick.heartbeat_timeout_millis = Some(1);
        routes.register_broker(&quick, 8, TIMEOUT);
        std::thread::sleep(Duration::from_millis(5));
        let expired = routes.scan_not_active_brokers();
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].broker_name, "b");
        assert_eq!(routes.topic_route("T").unwrap().queue_datas.len(), 1);
        let closed = routes.on_channel_closed(7);
        assert_eq!(closed[0].broker_addr, "10.0.0.1:10911");
        assert!(routes.topic_route("T").is_none());
        assert!(routes.cluster_info().broker_addr_table.is_empty());
        assert!(routes.cluster_info().cluster_addr_table.is_empty());
    }

    #[test]
    fn delete_topic_by_cluster() {
        let routes = RouteInfoManager::default();
        routes.register_broker(&registration("a", "10.0.0.1:10911", 0, &["T"]), 1, TIMEOUT);
        routes.delete_topic("T", Some("OtherCluster"));
        assert!(routes.topic_route("T").is_some());
        routes.delete_topic("T", Some("DefaultCluster"));
        assert!(routes.topic_route("T").is_none());
    }
}
