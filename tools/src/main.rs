//! The `skiff` binary: runs Skiff's name server and broker, together (`standalone`) or apart, and
//! the client-side tools (`bench`, `health`, `admin`, `migrate`). It parses the command line, wires the
//! servers of `skiff-server` together and drives its remoting client; it owns no protocol or
//! storage logic (the tools send requests through the codec of `skiff-protocol`).

mod admin;
mod bench;
mod cli;
mod health;
mod logging;
mod migrate;
mod serve;
mod settings;
mod signals;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(
            shell,
            &mut <Cli as clap::CommandFactory>::command(),
            "skiff",
            &mut std::io::stdout(),
        );
        return ExitCode::SUCCESS;
    }
    logging::init(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("skiff: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Standalone(args) => serve::standalone(args).await.map(|()| ExitCode::SUCCESS),
            Command::Namesrv(args) => serve::namesrv(args).await.map(|()| ExitCode::SUCCESS),
            Command::Broker(args) => serve::broker(args).await.map(|()| ExitCode::SUCCESS),
            Command::Bench(args) => Ok(bench::run(args).await),
            Command::Health(args) => Ok(health::run(args).await),
            Command::Admin(args) => Ok(admin::run(args).await),
            Command::Migrate(args) => Ok(migrate::run(args).await),
            Command::Completions { .. } => Ok(ExitCode::SUCCESS),
        }
    });
    // Blocking work still running (a stuck flush after a timed-out stop) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("skiff: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}
