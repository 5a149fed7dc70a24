//! IVF files: the minimal container vpxdec, aomdec, ffplay and ffmpeg read a VP8 or AV1
//! stream from.
//!
//! A 32-byte file header (`DKIF`, version 0, header size 32, fourcc `VP80` or `AV01`, width,
//! height, timebase rate and scale, frame count, 4 unused bytes), then per frame a 12-byte
//! header (payload size u32, pts u64) and the payload: a VP8 frame, or an AV1 temporal unit
//! (low-overhead OBUs, as libaom emits them). All integers little-endian. A pts counts ticks
//! of `scale / rate` seconds.

use std::io::{Read, Seek, SeekFrom, Write};

use crate::error::CodecError;
use crate::functional::FunctionalCodec;

/// Bytes in the file header.
pub const FILE_HEADER_LEN: usize = 32;
/// Bytes in each frame header.
pub const FRAME_HEADER_LEN: usize = 12;
/// Largest frame payload accepted, in bytes: far above any VP8 or AV1 frame up to 4K (a raw 4K
/// I420 picture is 12 MiB), far below what would hurt to buffer.
pub const MAX_FRAME_LEN: u32 = 32 << 20;

const MAGIC: &[u8; 4] = b"DKIF";
/// Offset of the frame count in the file header, patched when a file is finished.
const FRAME_COUNT_OFFSET: u64 = 24;

fn format_error(message: impl Into<String>) -> CodecError {
    CodecError::Format {
        format: "IVF",
        message: message.into(),
    }
}

/// The file header of an IVF stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IvfHeader {
    /// The codec of every frame, named by the header's fourcc (`VP80` or `AV01`).
    pub codec: FunctionalCodec,
    /// Frame width in pixels, non-zero.
    pub width: u16,
    /// Frame height in pixels, non-zero.
    pub height: u16,
    /// Timebase denominator: pts ticks per `scale` seconds (e.g. 60 with scale 1 for 60 fps
    /// frame indices, 1_000_000 for microseconds).
    pub rate: u32,
    /// Timebase numerator, non-zero.
    pub scale: u32,
    /// Frames in the file as the writer recorded it; 0 when the writer could not seek back
    /// (a pipe). Readers do not rely on it.
    pub frame_count: u32,
}

impl IvfHeader {
    /// A header for a `width` x `height` VP8 stream whose pts tick is `scale / rate`
    /// seconds (set [`IvfHeader::codec`] for AV1).
    pub fn new(width: u16, height: u16, rate: u32, scale: u32) -> Self {
        IvfHeader {
            codec: FunctionalCodec::Vp8,
            width,
            height,
            rate,
            scale,
            frame_count: 0,
        }
    }

    /// The 32 header bytes.
    pub fn to_bytes(&self) -> [u8; FILE_HEADER_LEN] {
        let mut bytes = [0; FILE_HEADER_LEN];
        bytes[0..4].copy_from_slice(MAGIC);
        // Bytes 4..6 are the version, 0.
        bytes[6..8].copy_from_slice(&(FILE_HEADER_LEN as u16).to_le_bytes());
        bytes[8..12].copy_from_slice(&self.codec.ivf_fourcc());
        bytes[12..14].copy_from_slice(&self.width.to_le_bytes());
        bytes[14..16].copy_from_slice(&self.height.to_le_bytes());
        bytes[16..20].copy_from_slice(&self.rate.to_le_bytes());
        bytes[20..24].copy_from_slice(&self.scale.to_le_bytes());
        bytes[24..28].copy_from_slice(&self.frame_count.to_le_bytes());
        bytes
    }

    /// Parses and checks the 32 header bytes; the error names the bad field.
    pub fn parse(bytes: &[u8; FILE_HEADER_LEN]) -> Result<Self, CodecError> {
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        if &bytes[0..4] != MAGIC {
            return Err(format_error(
                "signature: the file does not start with \"DKIF\"",
            ));
        }
        if u16_at(4) != 0 {
            return Err(format_error(format!("version {} is not 0", u16_at(4))));
        }
        if usize::from(u16_at(6)) != FILE_HEADER_LEN {
            return Err(format_error(format!("header size {} is not 32", u16_at(6))));
        }
        let fourcc = [bytes[8], bytes[9], bytes[10], bytes[11]];
        let Some(codec) = FunctionalCodec::from_ivf_fourcc(fourcc) else {
            let fourcc = String::from_utf8_lossy(&fourcc);
            return Err(format_error(format!(
                "fourcc {fourcc:?} is neither \"VP80\" nor \"AV01\""
            )));
        };
        let header = IvfHeader {
            codec,
            width: u16_at(12),
            height: u16_at(14),
            rate: u32_at(16),
            scale: u32_at(20),
            frame_count: u32_at(24),
        };
        header.validate()?;
        Ok(header)
    }

    fn validate(&self) -> Result<(), CodecError> {
        for (name, value) in [
            ("width", u32::from(self.width)),
            ("height", u32::from(self.height)),
            ("timebase rate", self.rate),
            ("timebase scale", self.scale),
        ] {
            if value == 0 {
                return Err(format_error(format!("{name} is 0")));
            }
        }
        Ok(())
    }
}

/// One compressed frame and its presentation time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IvfFrame {
    /// Presentation time in timebase ticks.
    pub pts: u64,
    /// The frame: VP8 data, or an AV1 temporal unit.
    pub data: Vec<u8>,
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> Result<usize, CodecError> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(filled)
}

/// Streams frames from an IVF file or pipe. Reads in small pieces; wrap a raw `File` in a
/// `BufReader` if syscalls matter.
#[derive(Debug)]
pub struct IvfReader<R> {
    input: R,
    header: IvfHeader,
    frames_read: u64,
    failed: bool,
}

impl<R: Read> IvfReader<R> {
    /// Reads and checks the file header.
    pub fn new(mut input: R) -> Result<Self, CodecError> {
        let mut bytes = [0; FILE_HEADER_LEN];
        let got = read_up_to(&mut input, &mut bytes)?;
        if got < FILE_HEADER_LEN {
            return Err(format_error(format!(
                "file header is truncated: {got} of {FILE_HEADER_LEN} bytes"
            )));
        }
        Ok(IvfReader {
            header: IvfHeader::parse(&bytes)?,
            input,
            frames_read: 0,
            failed: false,
        })
    }

    /// The file header.
    pub fn header(&self) -> &IvfHeader {
        &self.header
    }

    /// Frames read so far.
    pub fn frames_read(&self) -> u64 {
        self.frames_read
    }

    /// Reads the next frame's payload into `data` (reusing its allocation) and returns its
    /// pts; `Ok(None)` at a clean end of file, an error naming the frame if it is cut short.
    pub fn read_frame_into(&mut self, data: &mut Vec<u8>) -> Result<Option<u64>, CodecError> {
        let index = self.frames_read;
        let mut head = [0; FRAME_HEADER_LEN];
        match read_up_to(&mut self.input, &mut head)? {
            0 => return Ok(None),
            FRAME_HEADER_LEN => {}
            got => {
                return Err(format_error(format!(
                    "frame {index} header is truncated: {got} of {FRAME_HEADER_LEN} bytes"
                )))
            }
        }
        let [s0, s1, s2, s3, pts @ ..] = head;
        let size = u32::from_le_bytes([s0, s1, s2, s3]);
        let pts = u64::from_le_bytes(pts);
        if size > MAX_FRAME_LEN {
            return Err(format_error(format!(
                "frame {index} size {size} exceeds the limit of {MAX_FRAME_LEN} bytes"
            )));
        }
        // Grow only as bytes arrive, so a lying size field costs no memory.
        data.clear();
        (&mut self.input).take(u64::from(size)).read_to_end(data)?;
        if data.len() != size as usize {
            return Err(format_error(format!(
                "frame {index} is truncated: {} of {size} bytes",
                data.len()
            )));
        }
        self.frames_read += 1;
        Ok(Some(pts))
    }

    /// Reads the next frame; `Ok(None)` at a clean end of file.
    pub fn next_frame(&mut self) -> Result<Option<IvfFrame>, CodecError> {
        let mut data = Vec::new();
        Ok(self
            .read_frame_into(&mut data)?
            .map(|pts| IvfFrame { pts, data }))
    }

    /// Gives back the underlying reader.
    pub fn into_inner(self) -> R {
        self.input
    }
}

/// Yields frames until the end of file; after the first error it yields nothing more.
impl<R: Read> Iterator for IvfReader<R> {
    type Item = Result<IvfFrame, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.next_frame().transpose();
        self.failed = matches!(result, Some(Err(_)));
        result
    }
}

/// Writes an IVF stream: the header at creation, then one record per frame.
///
/// The header's frame count is written as 0 up front. [`IvfWriter::finish_seekable`] seeks
/// back and patches it; on a pipe (or via [`IvfWriter::finish`]) it stays 0, which vpxdec,
/// ffmpeg and ffplay accept: they read frames until the end of the stream.
#[derive(Debug)]
pub struct IvfWriter<W: Write> {
    output: W,
    header: IvfHeader,
    bytes_written: u64,
}

impl<W: Write> IvfWriter<W> {
    /// Checks `header` (its frame count is ignored) and writes it.
    pub fn new(mut output: W, header: IvfHeader) -> Result<Self, CodecError> {
        header.validate()?;
        let header = IvfHeader {
            frame_count: 0,
            ..header
        };
        output.write_all(&header.to_bytes())?;
        Ok(IvfWriter {
            output,
            header,
            bytes_written: FILE_HEADER_LEN as u64,
        })
    }

    /// The header, with the count of frames written so far.
    pub fn header(&self) -> &IvfHeader {
        &self.header
    }

    /// Appends one frame.
    pub fn write_frame(&mut self, pts: u64, data: &[u8]) -> Result<(), CodecError> {
        let size = u32::try_from(data.len())
            .ok()
            .filter(|&n| n <= MAX_FRAME_LEN)
            .ok_or_else(|| {
                CodecError::InvalidInput(format!(
                    "IVF frame of {} bytes exceeds {MAX_FRAME_LEN}",
                    data.len()
                ))
            })?;
        let count = self.header.frame_count.checked_add(1).ok_or_else(|| {
            CodecError::InvalidInput("IVF frame count would overflow u32".to_owned())
        })?;
        let mut head = [0; FRAME_HEADER_LEN];
        head[..4].copy_from_slice(&size.to_le_bytes());
        head[4..].copy_from_slice(&pts.to_le_bytes());
        self.output.write_all(&head)?;
        self.output.write_all(data)?;
        self.header.frame_count = count;
        self.bytes_written += (FRAME_HEADER_LEN + data.len()) as u64;
        Ok(())
    }

    /// Flushes without touching the header (its frame count stays 0): for pipes.
    pub fn finish(mut self) -> Result<W, CodecError> {
        self.output.flush()?;
        Ok(self.output)
    }
}

impl<W: Write + Seek> IvfWriter<W> {
    /// Patches the frame count into the header, then flushes.
    ///
    /// If the output cannot report its position (a pipe opened as a `File`, e.g.
    /// `/dev/stdout`), the count is left at 0 as in [`IvfWriter::finish`].
    pub fn finish_seekable(self) -> Result<W, CodecError> {
        let count = self.header.frame_count;
        self.finish_seekable_with_length(count)
    }

    /// As [`IvfWriter::finish_seekable`], but patches `length` into the header's frame count
    /// field: the stream's duration in pts ticks. ffmpeg reads that field as the duration
    /// (vpxenc writes the frame count; the two agree for a stream of one frame per tick), so
    /// a stream with gaps between frames (frames shown at irregular times) gets its true
    /// duration in ffprobe and players.
    pub fn finish_seekable_with_length(mut self, length: u32) -> Result<W, CodecError> {
        let Ok(end) = self.output.stream_position() else {
            return self.finish();
        };
        // The header sits where the writer started, which need not be offset 0.
        let start = end.checked_sub(self.bytes_written).ok_or_else(|| {
            CodecError::InvalidInput("IVF output position moved behind the header".to_owned())
        })?;
        self.output
            .seek(SeekFrom::Start(start + FRAME_COUNT_OFFSET))?;
        self.output.write_all(&length.to_le_bytes())?;
        self.output.seek(SeekFrom::Start(end))?;
        self.finish()
    }
}
