//! Finished results, kept under `--data-dir/executions/ID.json`: written
//! whole (a temporary file, synced, renamed into place, the directory
//! synced) before the daemon answers, so a result the daemon acknowledged
//! survives a restart; `GET /v1/executions/{id}` reads it back. Ids are
//! 32 hex digits from the kernel's random source; anything else is no
//! id (404).
//!
//! Does not own what a result holds (`result.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::result::ExecutionResult;

pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(data_dir: &Path) -> Result<Store, String> {
        let dir = data_dir.join("executions");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Store { dir })
    }

    pub async fn put(&self, result: &ExecutionResult) -> Result<(), String> {
        let dir = self.dir.clone();
        let id = result.id.clone();
        let text = serde_json::to_vec(result).map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || write_durably(&dir, &id, &text))
            .await
            .map_err(|e| e.to_string())?
    }

    pub async fn get(&self, id: &str) -> Result<Option<ExecutionResult>, String> {
        if !valid_id(id) {
            return Ok(None);
        }
        match tokio::fs::read(self.dir.join(format!("{id}.json"))).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("the stored result {id}: {e}")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("the stored result {id}: {e}")),
        }
    }
}

fn write_durably(dir: &Path, id: &str, text: &[u8]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("keeping result {id}: {e}");
    let temporary = dir.join(format!(".{id}.tmp"));
    let mut f = std::fs::File::create(&temporary).map_err(fail)?;
    f.write_all(text).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    std::fs::rename(&temporary, dir.join(format!("{id}.json"))).map_err(fail)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(fail)
}

/// A fresh id: 32 hex digits.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if read.is_err() {
        // No random source: still unique within this daemon and across
        // restarts (time and pid), if guessable.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (now ^ ((std::process::id() as u128) << 64)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn valid_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_hex_digits() {
        let id = new_id();
        assert!(valid_id(&id), "{id}");
        assert_ne!(id, new_id());
        assert!(!valid_id("../../etc/passwd"));
        assert!(!valid_id(&id.to_uppercase()));
    }
}
