//! Flag groups several commands share, each converting into the runtime's typed
//! configuration (`salsify_runtime::live_call`) or a library's: the commands parse flags
//! and convert them, and none imports another command.

pub mod audio;
pub mod data;
pub mod keys;
pub mod link;
pub mod meet;
pub mod scheme;
pub mod source;

pub use data::DataArgs;
pub use keys::{plaintext_warning, KeyArgs};
pub use link::{link_path, LinkFlags};
pub use meet::MeetArgs;
pub use scheme::{read_params, SchemeArgs};
pub use source::SourceArgs;
