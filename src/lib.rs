//! Test and bench harness package; see tests/ and benches/.
