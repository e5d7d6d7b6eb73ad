//! Who a request is from. On TCP (`--listen`) every request carries
//! `Authorization: Bearer TOKEN` with a token of `--token-file` (one per
//! line), else 401; on the Unix socket the listener has already checked
//! the peer's uid. Either way the request gets its [`Tenant`] (the
//! token's line, or the uid), which admission's fairness goes by.
//!
//! Does not own the peer check on the socket (`listen.rs`).

use std::path::Path;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::listen::Peer;

/// The tenant a request counts against.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tenant(pub String);

/// `--token-file`'s tokens.
pub struct Tokens(Vec<String>);

impl Tokens {
    pub fn load(path: &Path) -> Result<Tokens, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--token-file {}: {e}", path.display()))?;
        let tokens: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .collect();
        if tokens.is_empty() {
            return Err(format!("--token-file {}: no token in it", path.display()));
        }
        Ok(Tokens(tokens))
    }

    /// The line of `given` (compared in constant time per token).
    fn find(&self, given: &str) -> Option<usize> {
        let mut found = None;
        for (i, t) in self.0.iter().enumerate() {
            let same = t.len() == given.len()
                && t.bytes()
                    .zip(given.bytes())
                    .fold(0u8, |a, (x, y)| a | (x ^ y))
                    == 0;
            if same {
                found = Some(i);
            }
        }
        found
    }
}

/// The middleware: checks the token where there are tokens, and gives
/// the request its tenant.
pub async fn tenant(
    State(tokens): State<Option<Arc<Tokens>>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    mut req: Request,
    next: Next,
) -> Response {
    let tenant = match &tokens {
        Some(tokens) => {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match given.and_then(|g| tokens.find(g.trim())) {
                Some(line) => Tenant(format!("token:{line}")),
                None => {
                    let mut r = ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "a bearer token of --token-file is required (Authorization: Bearer TOKEN)",
                    )
                    .into_response();
                    r.headers_mut().insert(
                        header::WWW_AUTHENTICATE,
                        header::HeaderValue::from_static("Bearer"),
                    );
                    return r;
                }
            }
        }
        None => Tenant(format!("uid:{}", peer.uid.unwrap_or(u32::MAX))),
    };
    req.extensions_mut().insert(tenant);
    next.run(req).await
}
