//! netstack

pub mod dns;
pub mod publish;
pub mod relay;
pub mod rules;
