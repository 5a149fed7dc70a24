//! Virtual-time simulator, metrics, summaries and reports for Salsify and the comparison schemes.

pub mod experiment;
pub mod metrics;
pub mod sim;
