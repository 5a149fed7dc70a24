//! Virtual-time simulator, metrics, summaries and reports for Salsify and the comparison schemes.

pub mod campaign;
pub mod experiment;
pub mod metrics;
pub mod report;
pub mod sim;
