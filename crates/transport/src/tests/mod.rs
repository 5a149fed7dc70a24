//! The crate's scenario tests. They drive the sender and receiver with the test-only fake
//! codec and read the wire layout and the sender's rules, none of which is public, so they
//! live inside the crate (they were `tests/*.rs` while every module was public).

mod fake_network;
mod forecast_budget;
mod golden_trace;
mod outage_recovery;
mod real_codec;
mod receiver;
mod sans_io_loop;
mod sender;
mod slow_link;
mod support;
