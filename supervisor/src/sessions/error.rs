//! What can go wrong with a session request, by who is to blame: the
//! API maps each kind to an HTTP status (`serve/sessions/`).
//!
//! Owns the error type; not the statuses.

/// What went wrong, by who is to blame (the API maps each to a status).
#[derive(Debug, PartialEq, Eq)]
pub enum SessionError {
    /// No session (or file) by that name: 404.
    NotFound(String),
    /// The request is wrong: 400.
    BadRequest(String),
    /// The session has ended: 409.
    Ended(String),
    /// The name is taken (a template): 409.
    Conflict(String),
    /// The request was right but the sandbox would not start with it: 422.
    StartFailed(String),
    /// Not now: the session is busy (a command runs, a call is being served): 409.
    Busy(String),
    /// The session cannot do that (hibernate a socket, wake a damaged state): 422.
    Refused(String),
    /// The daemon's disk would not take it: 507.
    Storage(String),
    /// As many sessions run as the daemon allows: 429.
    Full(String),
    /// Ours: 500.
    Internal(String),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (SessionError::NotFound(m)
        | SessionError::BadRequest(m)
        | SessionError::Ended(m)
        | SessionError::Conflict(m)
        | SessionError::StartFailed(m)
        | SessionError::Busy(m)
        | SessionError::Refused(m)
        | SessionError::Storage(m)
        | SessionError::Full(m)
        | SessionError::Internal(m)) = self;
        f.write_str(m)
    }
}
