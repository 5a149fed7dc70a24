//! Audio beside the video: Opus (48 kHz mono, 20 or 10 ms frames, in-band FEC, DTX and
//! packet-loss concealment), a speech-like source carrying numbered timing marks (an audio
//! barcode) and their reader, WAV files, and the receiver: an adaptive jitter buffer (the
//! least delay that keeps late packets under a target) that waits out a stalled link and
//! catches up by playing faster, whose playout follows the shown video (lip sync within ITU-R
//! BT.1359's window), with the figures a run reports.
//!
//! Sans-IO like the endpoints: nothing here reads a clock, owns a socket or a thread; the
//! sender is polled at its frame times ([`AudioSender`]) and the receiver is given packets
//! and shown pictures with the time they happen and polled for frames ([`AudioPlayer`]).
//!
//! Layer 1 of the workspace (docs/architecture.md): on `salsify-time` only; the drivers
//! (`salsify-sim`, the command) carry its packets beside the video's.

#![warn(missing_docs)]

mod codec;
mod config;
mod jitter;
pub mod marks;
pub mod metrics;
mod played_csv;
mod player;
mod record;
mod sender;
mod source;
pub mod sync;
mod tally;
pub mod timescale;
mod wav;
mod wire;

pub use codec::{Decoded, OpusDecoder, OpusEncoder, DTX_PACKET_MAX};
pub use config::{AudioError, FrameLength, OpusConfig, SAMPLE_RATE};
pub use jitter::{least_delay, DelayWindow, JitterConfig};
pub use marks::{read_marks, Mark};
pub use metrics::{summarize_audio, AudioSummary};
pub use played_csv::{read_played_csv, PlayedCsvError};
pub use player::{AudioPlayer, PlayerConfig};
pub use record::{
    write_played_csv, write_played_row, Arrival, PlayedFrame, PlayedKind, AUDIO_CSV_HEADER,
};
pub use sender::AudioSender;
pub use source::{AudioSource, LoopedSamples, SyntheticSpeech, MARK_PERIOD};
pub use sync::{SyncConfig, SyncMode};
pub use tally::{AudioTally, TallyConfig};
pub use wav::{read_wav, write_wav, WavSink};
pub use wire::{AudioPacket, AudioWireError, AUDIO_WIRE_TAG, HEADER_LEN};
