//! `skiff admin`: the everyday mqadmin verbs (cluster, topics, groups, messages, broker config)
//! over the remoting protocol, so it administers Skiff and Apache RocketMQ alike. Each verb sends
//! the request codes and header fields Apache's `MQClientAPIImpl` sends for the same mqadmin
//! command, prints a table for people or JSON (`--json`) for scripts, and exits non-zero with the
//! reason on stderr when anything fails.

pub(crate) mod broker;
pub(crate) mod client;
mod group;
mod message;
pub(crate) mod output;
mod topic;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use skiff_server::acl::Credentials;

use crate::bench::parse_duration;
use client::Admin;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples (each verb's --help has more):
  skiff admin cluster                                  brokers of every cluster
  skiff admin topic list                               every topic the name server knows
  skiff admin topic create -t orders --queues 8        on every master broker
  skiff admin topic route -t orders
  skiff admin topic stats -t orders --json             per-queue offsets, for scripts
  skiff admin topic delete -t orders
  skiff admin group create -g billing
  skiff admin group progress -g billing                committed offsets and lag per queue
  skiff admin group reset-offset -g billing -t orders --timestamp earliest
  skiff admin message query -t orders --key order-42
  skiff admin message print -t orders --max 100
  skiff admin broker config get --key flushDiskType
  skiff admin broker config set -b 127.0.0.1:10911 deleteWhen=04

Name servers come from -n/--namesrv or NAMESRV_ADDR (several separated by ';'), as for \
mqadmin. With ACL on, give --access-key and --secret-key: requests are signed as the Java \
AclClientRPCHook signs them. Exit status: 0 done, 1 the cluster refused or could not be reached \
(the reason goes to stderr), 2 a bad command line (including names RocketMQ does not allow).")]
pub struct AdminArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Print JSON (one document on stdout) instead of a table
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub verb: Verb,
}

/// How the tools reach a cluster: its name servers, a timeout, and ACL credentials.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// Name server addresses, IP:PORT separated by ';'
    #[arg(
        short = 'n',
        long,
        value_name = "ADDRS",
        env = "NAMESRV_ADDR",
        default_value = "127.0.0.1:9876",
        global = true
    )]
    pub namesrv: String,

    /// Give up on each request after this long (500ms, 3s, ...)
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "3s", global = true)]
    pub timeout: Duration,

    /// ACL access key to sign requests with (needs --secret-key)
    #[arg(
        long,
        value_name = "KEY",
        env = "SKIFF_ACCESS_KEY",
        global = true,
        requires = "secret_key"
    )]
    pub access_key: Option<String>,

    /// ACL secret key to sign requests with (needs --access-key); the environment keeps it out
    /// of `ps`
    #[arg(
        long,
        value_name = "KEY",
        env = "SKIFF_SECRET_KEY",
        hide_env_values = true,
        global = true,
        requires = "access_key"
    )]
    pub secret_key: Option<String>,
}

impl ClusterArgs {
    /// A client of the cluster these arguments name.
    pub fn connect(&self) -> Admin {
        let credentials = match (&self.access_key, &self.secret_key) {
            (Some(access_key), Some(secret_key)) => Some(Credentials {
                access_key: access_key.clone(),
                secret_key: secret_key.clone(),
            }),
            _ => None,
        };
        let namesrvs: Vec<String> = self
            .namesrv
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        Admin::new(namesrvs, self.timeout, credentials)
    }
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// List the brokers of each cluster, with their version and load (mqadmin clusterList).
    Cluster(broker::ClusterArgs),
    /// Topics: list, create, delete, route, stats.
    #[command(subcommand)]
    Topic(topic::TopicVerb),
    /// Consumer groups: list, create, delete, progress, reset-offset.
    #[command(subcommand)]
    Group(group::GroupVerb),
    /// Messages: query by key or id, print a topic's messages.
    #[command(subcommand)]
    Message(message::MessageVerb),
    /// Broker settings at runtime.
    #[command(subcommand)]
    Broker(broker::BrokerVerb),
}

pub async fn run(args: AdminArgs) -> ExitCode {
    let admin = args.cluster.connect();
    let result = match args.verb {
        Verb::Cluster(verb) => broker::cluster(&admin, verb).await,
        Verb::Topic(verb) => topic::run(&admin, verb).await,
        Verb::Group(verb) => group::run(&admin, verb).await,
        Verb::Message(verb) => message::run(&admin, verb).await,
        Verb::Broker(verb) => broker::run(&admin, verb).await,
    };
    match result {
        Ok(shown) => {
            shown.print(args.json);
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("skiff admin: {}", crate::health::describe(&err));
            ExitCode::FAILURE
        }
    }
}

/// Longest topic name Java accepts (`TopicValidator.TOPIC_MAX_LENGTH`).
const TOPIC_MAX_LENGTH: usize = 127;
/// Longest group name Java accepts (`Validators.CHARACTER_MAX_LENGTH`).
const GROUP_MAX_LENGTH: usize = 255;

/// A topic name as `TopicValidator.validateTopic` allows it: `[%|a-zA-Z0-9_-]`, at most 127.
pub fn topic_name(text: &str) -> Result<String, String> {
    resource_name("topic", text, TOPIC_MAX_LENGTH)
}

/// A group name as `Validators.checkGroup` allows it: `[%|a-zA-Z0-9_-]`, at most 255.
pub fn group_name(text: &str) -> Result<String, String> {
    resource_name("group", text, GROUP_MAX_LENGTH)
}

fn resource_name(what: &str, text: &str, max: usize) -> Result<String, String> {
    if text.is_empty() {
        return Err(format!("the {what} name is empty"));
    }
    if text.len() > max {
        return Err(format!(
            "the {what} name is {} characters long; RocketMQ allows at most {max}",
            text.len()
        ));
    }
    if let Some(bad) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-')))
    {
        return Err(format!(
            "the {what} name contains {bad:?}; RocketMQ allows only letters, digits, '%', '|', \
             '_' and '-'"
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_java_checks_them() {
        assert_eq!(topic_name("Order_Topic-1").unwrap(), "Order_Topic-1");
        assert!(topic_name("%RETRY%g|x").is_ok());
        assert!(topic_name("").is_err());
        assert!(topic_name("../../etc/passwd").unwrap_err().contains("'.'"));
        assert!(topic_name("a b").is_err());
        assert!(topic_name("tópico").is_err());
        assert!(topic_name(&"t".repeat(127)).is_ok());
        assert!(topic_name(&"t".repeat(128)).unwrap_err().contains("127"));
        assert!(group_name(&"g".repeat(255)).is_ok());
        assert!(group_name(&"g".repeat(256)).is_err());
        assert!(group_name("g\n").is_err());
    }
}
