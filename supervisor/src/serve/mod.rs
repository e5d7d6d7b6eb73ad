//! `supervisor serve`: the daemon that runs sandboxes for services over
//! HTTP/1.1 and JSON (docs/serve.md). It listens on a Unix socket (mode
//! 0600, only its own uid and root served: `listen.rs`) and, when asked,
//! on TCP with bearer tokens (`auth.rs`).
//!
//! Owns the flags and the start: the tokio runtime, the listeners, the
//! shutdown on SIGTERM/SIGINT. The routes are `app.rs`'s (one function
//! assembling every API's `routes()`), the OpenAPI document
//! `openapi.rs`'s, each API its own module (`health.rs`, `executions/`,
//! `sessions/`, `templates/`).
//! It does not run sandboxes itself: executions go to pools of
//! `supervisor pool` children, or to a plain `supervisor run`.

pub mod app;
pub mod auth;
pub mod body;
pub mod client;
pub mod error;
pub mod executions;
pub mod health;
pub mod listen;
pub mod openapi;
pub mod sessions;
pub mod templates;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// `supervisor serve`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The Unix socket to serve (made mode 0600; only this user and root are served).
    #[arg(long, value_name = "PATH", required = true)]
    pub socket: PathBuf,

    /// Also serve TCP on ADDR:PORT (needs --token-file: every request then carries `Authorization: Bearer TOKEN`).
    #[arg(long, value_name = "ADDR:PORT", requires = "token_file")]
    pub listen: Option<SocketAddr>,

    /// The bearer tokens TCP clients must present, one per line (each line is a tenant for fairness).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Where finished executions' results are kept (they survive a restart) and the pools' sockets live.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/supervisor-serve")]
    pub data_dir: PathBuf,

    /// Executions running at once.
    #[arg(long, value_name = "N", default_value = "4", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_running: u32,

    /// Executions waiting for a place beyond --max-running; past both a request gets 429.
    #[arg(long, value_name = "N", default_value = "64", value_parser = clap::value_parser!(u32).range(0..=100000))]
    pub max_queued: u32,

    /// Largest request body accepted (bytes); larger gets 413.
    #[arg(long, value_name = "BYTES", default_value = "16777216")]
    pub max_body: usize,

    /// Sandboxes each pool keeps ready (one pool per shape of limits; 0: no pools, every execution a plain run).
    #[arg(long, value_name = "N", default_value = "2", value_parser = clap::value_parser!(u32).range(0..=64))]
    pub pool_size: u32,

    /// The longest `limits.timeout_s` accepted (seconds); an execution without one gets the shorter of 60 s and this.
    #[arg(long, value_name = "SECONDS", default_value = "3600", value_parser = parse_max_timeout)]
    pub max_timeout: f64,

    /// Pools kept at once (each a `supervisor pool` child); executions of further shapes take a plain run.
    #[arg(long, value_name = "N", default_value = "8")]
    pub max_pools: usize,

    /// Sessions (`/v1/sessions`) running at once; past it a new one gets 429.
    #[arg(long, value_name = "N", default_value = "64", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub max_sessions: u32,

    /// Warm sessions of all templates (`/v1/templates`) kept ready at once.
    #[arg(long, value_name = "N", default_value = "8", value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub max_warm: u32,
}

fn parse_max_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 86400.0 => Ok(t),
        _ => Err(format!("{s:?}: seconds, more than 0, at most 86400")),
    }
}

/// Runs the daemon; the exit code.
pub fn main(args: ServeArgs) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("supervisor: serve: the runtime: {e}");
            return 125;
        }
    };
    match runtime.block_on(start(args)) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("supervisor: serve: {message}");
            125
        }
    }
}

async fn start(args: ServeArgs) -> Result<(), String> {
    let tokens = match &args.token_file {
        Some(path) => Some(auth::Tokens::load(path)?),
        None => None,
    };
    let state = Arc::new(app::Serve::new(&args)?);
    let warming = state.clone();
    tokio::spawn(async move { warming.executions.warm_up().await });
    let unix = listen::bind_unix(&args.socket)?;
    let mut tasks = tokio::task::JoinSet::new();
    let router = app::router(state.clone(), None, args.max_body);
    tasks.spawn(listen::serve_unix(unix, router));
    if let (Some(addr), Some(tokens)) = (args.listen, tokens) {
        let tcp = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("--listen {addr}: {e}"))?;
        let router = app::router(state.clone(), Some(Arc::new(tokens)), args.max_body);
        tasks.spawn(listen::serve_tcp(tcp, router));
    }
    eprintln!(
        "supervisor: serve: listening on {}{}",
        args.socket.display(),
        args.listen.map(|a| format!(" and {a}")).unwrap_or_default()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("signals: {e}"))?;
    let outcome = tokio::select! {
        _ = term.recv() => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
        Some(r) = tasks.join_next() => match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(format!("a listener: {e}")),
        },
    };
    tasks.abort_all();
    state.shut_down().await;
    let _ = std::fs::remove_file(&args.socket);
    outcome
}
