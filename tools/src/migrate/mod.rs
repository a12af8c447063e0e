//! `skiff migrate`: moves a running Apache RocketMQ cluster onto Skiff through RocketMQ's own
//! master/slave replication. A Skiff slave joins each Java broker group and copies its master's
//! CommitLog byte for byte, so every queue offset and every committed consumer offset stays what
//! it was. The steps only read the cluster (the slave does the copying; `replicate
//! --master-batch-size` raises a Java master's frame size for the catch-up and sets it back), so
//! each can be run again, or after an interruption, at no risk:
//!
//! - `plan`: what each group holds, what blocks it, and the slave's `broker.conf`;
//! - `replicate`: the slaves catching up, with a progress bar, until they hold everything;
//! - `verify`: master and slave agree (CommitLog end, queue offsets, last records, consumer
//!   offsets);
//! - `cutover`: writes stop on the Java master, the Skiff slave comes to hold everything, the
//!   Java master is stopped, the Skiff slave becomes the master in place;
//! - `rollback`: the same in reverse, to a Java slave of the Skiff master.
//!
//! `cutover` and `rollback` change the cluster, one step after another, each looked at before it
//! is taken: run again, they go on from where they were.
//!
//! It owns no protocol: requests go through `skiff admin`'s client.

mod cluster;
mod handover;
mod plan;
mod replicate;
mod verify;

use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::admin::ClusterArgs;

#[derive(Debug, Args)]
#[command(after_long_help = "\
A migration, one broker group at a time or all at once:
  1. skiff migrate plan -n 10.0.0.5:9876 --out migration --data-root /var/lib/skiff
  2. on the Skiff host: skiff broker -c migration/broker-a-skiff-slave.conf
  3. skiff migrate replicate -n 10.0.0.5:9876          (progress until caught up)
  4. skiff migrate verify -n 10.0.0.5:9876 --allow-lag (while producers still write)
  5. skiff migrate cutover -n 10.0.0.5:9876 -b broker-a   (stop the Java master when asked)
  Back to Java, with a Java slave of the Skiff master caught up:
     skiff migrate rollback -n 10.0.0.5:9876 -b broker-a  (restart the Java slave when asked)

plan, replicate and verify only read the cluster (replicate --master-batch-size changes the \
master's haTransferBatchSize while its slave catches up, and sets it back); run any of them \
again at any time. cutover \
and rollback change it step by step, each step skipped when done: run them again after an \
interruption. Exit status: 0 done, 1 a \
check failed or the cluster could not be asked (the reason goes to stderr), 2 a bad command line.")]
pub struct MigrateArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Print JSON (one document on stdout) instead of text
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub step: Step,
}

#[derive(Debug, Subcommand)]
pub enum Step {
    /// What each broker group holds and what would stop it moving; write the Skiff slaves' configs.
    Plan(plan::PlanArgs),
    /// Follow the Skiff slaves catching up with their masters until they hold everything.
    Replicate(replicate::ReplicateArgs),
    /// Check that each slave holds exactly what its master holds.
    Verify(verify::VerifyArgs),
    /// Make a group's Skiff slave its master: stop writes, wait until it holds everything, and
    /// promote it in place once the Java master is stopped.
    Cutover(handover::CutoverArgs),
    /// Give a group's master role back to a Java slave of the Skiff master.
    Rollback(handover::RollbackArgs),
}

pub async fn run(args: MigrateArgs) -> ExitCode {
    let admin = args.cluster.connect();
    let result = match args.step {
        Step::Plan(step) => plan::run(&admin, step).await,
        Step::Replicate(step) => replicate::run(&admin, step).await,
        Step::Verify(step) => verify::run(&admin, step).await,
        Step::Cutover(step) => handover::cutover(&admin, step).await,
        Step::Rollback(step) => handover::rollback(&admin, step).await,
    };
    match result {
        Ok(shown) => {
            shown.print(args.json);
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("skiff migrate: {}", crate::health::describe(&err));
            ExitCode::FAILURE
        }
    }
}
