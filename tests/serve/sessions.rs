//! Sessions (`/v1/sessions`, `supervisor sessions`), one module per
//! concern: a command in a session prints what it prints natively,
//! output streams as NDJSON and processes a command leaves running are
//! there at the next one (`exec`); files go in and out (bytes that are
//! not UTF-8 too) and a volume outlives its session and is found again
//! by name (`files`); idle sessions are reaped at their TTL and old ones
//! at their lifetime, and a killed daemon's sessions are reported ended
//! at its restart, their sandboxes gone, volumes kept (`lifetime`); a
//! published port reaches a listener inside (`network`); the
//! operator's metadata is shown, filtered on and kept, never the guest's
//! (`metadata`); a command that
//! brings down the session's memory or process limit is answered with
//! the limit's reason, and the ended session's state and next request
//! say which limit it was (`runaway`); bad input gets
//! 400/404 and one session too many 429 (`refusals`); and the CLI does
//! all of it for humans (`cli`).

mod cli;
mod exec;
mod files;
mod lifetime;
mod metadata;
mod network;
mod refusals;
mod runaway;
