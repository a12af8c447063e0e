//! Connections to the brokers, shared by producers and consumers and reopened when they close.

use std::collections::HashMap;
use std::time::Duration;

use skiff_server::remoting_client::{ClientError, RemotingClient};
use tokio::sync::Mutex;

/// A fixed number of connections per broker; a caller picks one by an index of its own.
pub struct Pool {
    brokers: HashMap<String, Vec<Mutex<RemotingClient>>>,
    timeout: Duration,
}

impl Pool {
    pub async fn connect(
        brokers: &[String],
        per_broker: u32,
        timeout: Duration,
    ) -> Result<Pool, ClientError> {
        let mut map = HashMap::new();
        for broker in brokers {
            let mut slots = Vec::new();
            for _ in 0..per_broker.max(1) {
                slots.push(Mutex::new(RemotingClient::connect(broker, timeout).await?));
            }
            map.insert(broker.clone(), slots);
        }
        Ok(Pool {
            brokers: map,
            timeout,
        })
    }

    /// Connection `index` (modulo the count) to `broker`, reconnecting if it was closed.
    pub async fn client(&self, broker: &str, index: usize) -> Result<RemotingClient, ClientError> {
        let Some(slots) = self.brokers.get(broker) else {
            // A broker the route did not name at start: connect on demand, unpooled.
            return RemotingClient::connect(broker, self.timeout).await;
        };
        let mut slot = slots[index % slots.len()].lock().await;
        if slot.is_closed() {
            *slot = RemotingClient::connect(broker, self.timeout).await?;
        }
        Ok(slot.clone())
    }
}
