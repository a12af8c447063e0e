//! What a slave broker refuses, as Java's does: it holds a copy of its master's CommitLog, so
//! nothing may write to it but replication (`SendMessageProcessor.rejectRequest`,
//! `PullMessageProcessor.rejectRequest`, `EndTransactionProcessor`,
//! `AdminBrokerProcessor.resetOffsetInner`).
//!
//! Topic and group admin is not refused (Java's `validateSlave` has no caller): the master's
//! tables replace it at the next metadata sync.

use skiff_model::admin::AdminCommand;
use skiff_model::command::{ErrorKind, Reply, Request};

use crate::config::{BrokerConfig, BrokerRole};

/// Java's remark for a request its processor rejects (`NettyRemotingAbstract`); clients read
/// SYSTEM_BUSY as "try another broker".
const REJECT_REQUEST: &str = "[REJECTREQUEST]system busy, start flow control for a while";

/// The answer a slave gives `request` instead of serving it; `None` on a master, or when a slave
/// serves it.
pub(super) fn slave_refusal(config: &BrokerConfig, request: &Request) -> Option<Reply> {
    if config.broker_role != BrokerRole::Slave {
        return None;
    }
    match request {
        Request::Send(_) | Request::ConsumerSendMsgBack(_) => {
            Some(Reply::error(ErrorKind::SystemBusy, REJECT_REQUEST))
        }
        Request::Pull(_) if !config.slave_read_enable => {
            Some(Reply::error(ErrorKind::SystemBusy, REJECT_REQUEST))
        }
        Request::EndTransaction(_) => Some(Reply::error(
            ErrorKind::SlaveNotAvailable,
            "Message store is slave mode, so end transaction is forbidden; send it to the master",
        )),
        Request::Admin(AdminCommand::ResetOffset { .. }) => Some(Reply::error(
            ErrorKind::SystemError,
            "Can not reset offset in slave broker",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::command::{PullRequest, SendRequest};

    fn code(reply: Option<Reply>) -> Option<ErrorKind> {
        match reply {
            Some(Reply::Error(err)) => Some(err.kind),
            Some(other) => panic!("not an error: {other:?}"),
            None => None,
        }
    }

    #[test]
    fn a_slave_refuses_writes_and_pulls_unless_slave_read_enable() {
        let master = BrokerConfig::default();
        let slave = BrokerConfig {
            broker_role: BrokerRole::Slave,
            broker_id: 1,
            ..BrokerConfig::default()
        };
        let send = Request::Send(SendRequest::default());
        let pull = Request::Pull(PullRequest::default());
        assert_eq!(code(slave_refusal(&master, &send)), None);
        assert_eq!(code(slave_refusal(&master, &pull)), None);
        assert_eq!(
            code(slave_refusal(&slave, &send)),
            Some(ErrorKind::SystemBusy)
        );
        assert_eq!(
            code(slave_refusal(&slave, &pull)),
            Some(ErrorKind::SystemBusy)
        );
        let reading = BrokerConfig {
            slave_read_enable: true,
            ..slave.clone()
        };
        assert_eq!(code(slave_refusal(&reading, &pull)), None);
        assert_eq!(
            code(slave_refusal(&slave, &Request::GetAllTopicConfig)),
            None
        );
    }
}
