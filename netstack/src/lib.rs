//! netstack
