//! `supervisor sessions`: the session API for humans, over the daemon's
//! Unix socket. `ls` prints a table (`--metadata KEY=VALUE` narrows it
//! to sessions so tagged), `create` prints the new id, `exec`
//! streams a command's output to this process's stdout and stderr and
//! exits with its status, `cp` copies a file in (`cp FILE ID:PATH`, a
//! progress line on stderr as it uploads) or out (`cp ID:PATH FILE`,
//! `-` for stdout), `rm` deletes sessions; `template ls|create|rm` does
//! the same for templates (`create NAME SPEC` prints the template once
//! its setup has run).
//!
//! Owns those commands; the HTTP is `serve/client.rs`'s.

use std::io::{Read, Write};
use std::path::PathBuf;

use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Bytes, Frame};
use hyper::{Method, StatusCode};

use crate::serve::client::{self, body, error_line};

#[derive(clap::Args, Debug)]
pub struct SessionsArgs {
    /// The daemon's Unix socket (`supervisor serve --socket`).
    #[arg(long, value_name = "PATH", required = true)]
    pub socket: PathBuf,
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum SessionsCommand {
    /// List the sessions (with their metadata).
    Ls {
        /// Only sessions whose metadata has KEY=VALUE. Repeatable: every pair must match.
        #[arg(long = "metadata", short = 'm', value_name = "KEY=VALUE")]
        metadata: Vec<String>,
    },
    /// Create a session; prints its id. SPEC: the JSON of `POST /v1/sessions` (default `{}`).
    Create {
        #[arg(value_name = "SPEC", default_value = "{}")]
        spec: String,
    },
    /// Run COMMAND in session ID; exits with its status.
    Exec {
        /// Seconds after which the command is killed.
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<f64>,
        /// Working directory inside the session.
        #[arg(long, value_name = "DIR")]
        cwd: Option<String>,
        /// Set K=V for the command. Repeatable.
        #[arg(long = "env", short = 'e', value_name = "K=V")]
        env: Vec<String>,
        #[arg(value_name = "ID")]
        id: String,
        #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Copy FILE to ID:PATH, or ID:PATH to FILE (`-`: stdout).
    Cp {
        #[arg(value_name = "SRC")]
        src: String,
        #[arg(value_name = "DST")]
        dst: String,
    },
    /// Delete sessions (their volumes stay).
    Rm {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Templates (sessions born warm): ls, create, rm.
    Template {
        #[command(subcommand)]
        command: TemplateCommand,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum TemplateCommand {
    /// List the templates.
    Ls,
    /// Make template NAME (its setup runs once first). SPEC: the JSON of `POST /v1/templates` without `name`.
    Create {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(value_name = "SPEC", default_value = "{}")]
        spec: String,
    },
    /// Delete templates (sessions made from them stay).
    Rm {
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
    },
}

/// Runs the command; the exit code (125: ours failed).
pub fn main(args: SessionsArgs) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("supervisor: sessions: {e}");
            return 125;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("supervisor: sessions: {e}");
            125
        }
    }
}

async fn run(args: SessionsArgs) -> Result<i32, String> {
    let socket = &args.socket;
    match args.command {
        SessionsCommand::Ls { metadata } => {
            let path = list_path(&metadata)?;
            let v = json_call(socket, Method::GET, &path, body(Bytes::new())).await?;
            print_table(&v);
            Ok(0)
        }
        SessionsCommand::Create { spec } => {
            let v = json_call(socket, Method::POST, "/v1/sessions", body(spec)).await?;
            println!("{}", v["id"].as_str().unwrap_or(""));
            Ok(0)
        }
        SessionsCommand::Rm { ids } => {
            for id in ids {
                let path = format!("/v1/sessions/{}", encode(&id));
                json_call(socket, Method::DELETE, &path, body(Bytes::new())).await?;
            }
            Ok(0)
        }
        SessionsCommand::Exec {
            timeout,
            cwd,
            env,
            id,
            command,
        } => {
            let mut vars = serde_json::Map::new();
            for e in env {
                let (k, v) = e
                    .split_once('=')
                    .ok_or(format!("--env {e:?}: expected K=V"))?;
                vars.insert(k.into(), v.into());
            }
            let mut spec = serde_json::json!({ "command": command, "env": vars });
            if let Some(t) = timeout {
                spec["timeout_s"] = t.into();
            }
            if let Some(c) = cwd {
                spec["cwd"] = c.into();
            }
            exec(socket, &id, spec).await
        }
        SessionsCommand::Template { command } => template(socket, command).await,
        SessionsCommand::Cp { src, dst } => match (split_remote(&src), split_remote(&dst)) {
            (None, Some((id, path))) => upload(socket, &src, id, path).await,
            (Some((id, path)), None) => download(socket, id, path, &dst).await,
            _ => Err("cp: exactly one of SRC and DST must be ID:PATH".into()),
        },
    }
}

async fn template(socket: &std::path::Path, command: TemplateCommand) -> Result<i32, String> {
    match command {
        TemplateCommand::Ls => {
            let v = json_call(socket, Method::GET, "/v1/templates", body(Bytes::new())).await?;
            println!(
                "{:<24}  {:>5}  {:>5}  {:>6}  LAST ERROR",
                "NAME", "WARM", "READY", "SETUP"
            );
            let empty = Vec::new();
            for t in v["templates"].as_array().unwrap_or(&empty) {
                println!(
                    "{:<24}  {:>5}  {:>5}  {:>6}  {}",
                    t["name"].as_str().unwrap_or(""),
                    t["warm"].as_u64().unwrap_or(0),
                    t["ready"].as_u64().unwrap_or(0),
                    t["setup"].as_array().map_or(0, Vec::len),
                    t["last_error"].as_str().unwrap_or(""),
                );
            }
            Ok(0)
        }
        TemplateCommand::Create { name, spec } => {
            let mut v: serde_json::Value =
                serde_json::from_str(&spec).map_err(|e| format!("SPEC: {e}"))?;
            let Some(fields) = v.as_object_mut() else {
                return Err("SPEC: expected a JSON object".into());
            };
            fields.insert("name".into(), name.into());
            let made =
                json_call(socket, Method::POST, "/v1/templates", body(v.to_string())).await?;
            println!("{}", made["name"].as_str().unwrap_or(""));
            Ok(0)
        }
        TemplateCommand::Rm { names } => {
            for name in names {
                let path = format!("/v1/templates/{}", encode(&name));
                json_call(socket, Method::DELETE, &path, body(Bytes::new())).await?;
            }
            Ok(0)
        }
    }
}

/// The list's path, `--metadata KEY=VALUE` filters as its query.
fn list_path(metadata: &[String]) -> Result<String, String> {
    let mut pairs = Vec::new();
    for m in metadata {
        let (k, v) = m
            .split_once('=')
            .ok_or(format!("--metadata {m:?}: expected KEY=VALUE"))?;
        pairs.push(format!("metadata.{}={}", encode(k), encode(v)));
    }
    Ok(match pairs.is_empty() {
        true => "/v1/sessions".into(),
        false => format!("/v1/sessions?{}", pairs.join("&")),
    })
}

/// `ID:PATH` (an id is hex digits).
fn split_remote(s: &str) -> Option<(&str, &str)> {
    let (id, path) = s.split_once(':')?;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some((id, path))
}

/// A path segment (or a query's name or value) as a URI carries it
/// (anything but unreserved bytes and `/` escaped).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn json_call(
    socket: &std::path::Path,
    method: Method,
    path: &str,
    b: client::Body,
) -> Result<serde_json::Value, String> {
    let headers = [("content-type", "application/json")];
    let response = client::send(socket, method, path, &headers, b).await?;
    let status = response.status();
    let bytes = client::read_all(response).await?;
    if !status.is_success() {
        return Err(format!("{status}: {}", error_line(&bytes)));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("the daemon's answer: {e}"))
}

fn print_table(v: &serde_json::Value) {
    println!(
        "{:<16}  {:<8}  {:>8}  {:>10}  {:>5}  {:<16}  {:<16}  METADATA",
        "ID", "STATE", "IDLE", "MEMORY", "PROCS", "VOLUME", "REASON"
    );
    let empty = Vec::new();
    for s in v["sessions"].as_array().unwrap_or(&empty) {
        println!(
            "{:<16}  {:<8}  {:>7.0}s  {:>9}K  {:>5}  {:<16}  {:<16}  {}",
            s["id"].as_str().unwrap_or(""),
            s["state"].as_str().unwrap_or(""),
            s["idle_s"].as_f64().unwrap_or(0.0),
            s["memory_bytes"].as_u64().unwrap_or(0) / 1024,
            s["processes"].as_array().map_or(0, Vec::len),
            s["volume"]["name"].as_str().unwrap_or("-"),
            s["reason"].as_str().unwrap_or("-"),
            metadata_cell(&s["metadata"]),
        );
    }
}

/// A session's metadata as `k=v,k=v` (`-`: none).
fn metadata_cell(m: &serde_json::Value) -> String {
    let pairs: Vec<String> = m
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    match pairs.is_empty() {
        true => "-".into(),
        false => pairs.join(","),
    }
}

async fn exec(socket: &std::path::Path, id: &str, spec: serde_json::Value) -> Result<i32, String> {
    let path = format!("/v1/sessions/{}/exec", encode(id));
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/x-ndjson"),
    ];
    let response = client::send(
        socket,
        Method::POST,
        &path,
        &headers,
        body(spec.to_string()),
    )
    .await?;
    if response.status() != StatusCode::OK {
        let status = response.status();
        let bytes = client::read_all(response).await?;
        return Err(format!("{status}: {}", error_line(&bytes)));
    }
    let mut body = response.into_body();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the output: {e}"))?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        pending.extend_from_slice(data);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if let Some(code) = exec_line(&line)? {
                return Ok(code);
            }
        }
    }
    Err("the daemon ended the stream without a result".into())
}

/// Handles one streamed line: output is written out; the result gives the exit code.
fn exec_line(line: &[u8]) -> Result<Option<i32>, String> {
    use base64::Engine;
    let v: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| format!("the daemon's stream: {e}"))?;
    let decode = |data: &str, encoding: Option<&str>| match encoding {
        Some("base64") => base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap_or_default(),
        _ => data.as_bytes().to_vec(),
    };
    match v["type"].as_str() {
        Some("stdout") | Some("stderr") => {
            let data = decode(v["data"].as_str().unwrap_or(""), v["encoding"].as_str());
            let _ = match v["type"].as_str() {
                Some("stdout") => std::io::stdout()
                    .write_all(&data)
                    .and(std::io::stdout().flush()),
                _ => std::io::stderr().write_all(&data),
            };
            Ok(None)
        }
        Some("result") => {
            if let Some(m) = v["message"].as_str() {
                eprintln!("supervisor: sessions: {m}");
            }
            Ok(Some(
                match (v["exit_code"].as_i64(), v["signal"].as_i64()) {
                    (Some(code), _) => code as i32,
                    (None, Some(sig)) => 128 + sig as i32,
                    _ => 125,
                },
            ))
        }
        _ => Err(v["error"]
            .as_str()
            .unwrap_or("a bad line in the stream")
            .to_string()),
    }
}

async fn upload(socket: &std::path::Path, src: &str, id: &str, path: &str) -> Result<i32, String> {
    let mut file = std::fs::File::open(src).map_err(|e| format!("{src}: {e}"))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut sent: u64 = 0;
    let chunks = futures_util::stream::poll_fn(move |_| {
        let mut buf = vec![0u8; 1 << 20];
        match file.read(&mut buf) {
            Ok(0) => {
                if total > 0 {
                    eprintln!();
                }
                std::task::Poll::Ready(None)
            }
            Ok(n) => {
                buf.truncate(n);
                sent += n as u64;
                progress(sent, total);
                std::task::Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
            }
            Err(e) => std::task::Poll::Ready(Some(Err(e))),
        }
    });
    let b = StreamBody::new(chunks).boxed();
    let url = format!("/v1/sessions/{}/files/{}", encode(id), encode(path));
    let length = total.to_string();
    let headers = [
        ("content-type", "application/octet-stream"),
        ("content-length", length.as_str()),
    ];
    let response = client::send(socket, Method::PUT, &url, &headers, b).await?;
    let status = response.status();
    let bytes = client::read_all(response).await?;
    match status.is_success() {
        true => Ok(0),
        false => Err(format!("{status}: {}", error_line(&bytes))),
    }
}

/// `upload: 12.0 MiB of 50.0 MiB (24%)` on stderr, rewritten in place.
fn progress(sent: u64, total: u64) {
    let mib = |n: u64| n as f64 / (1024.0 * 1024.0);
    let pct = (sent * 100).checked_div(total).unwrap_or(100);
    eprint!(
        "\rupload: {:.1} MiB of {:.1} MiB ({pct}%)",
        mib(sent),
        mib(total)
    );
}

async fn download(
    socket: &std::path::Path,
    id: &str,
    path: &str,
    dst: &str,
) -> Result<i32, String> {
    let url = format!("/v1/sessions/{}/files/{}", encode(id), encode(path));
    let response = client::send(socket, Method::GET, &url, &[], body(Bytes::new())).await?;
    let status = response.status();
    let bytes = client::read_all(response).await?;
    if !status.is_success() {
        return Err(format!("{status}: {}", error_line(&bytes)));
    }
    match dst {
        "-" => std::io::stdout()
            .write_all(&bytes)
            .map_err(|e| format!("stdout: {e}"))?,
        _ => std::fs::write(dst, &bytes).map_err(|e| format!("{dst}: {e}"))?,
    }
    Ok(0)
}
