//! Virtual-time simulator, metrics, summaries and reports for Salsify and the comparison schemes.

pub mod metrics;
pub mod sim;
