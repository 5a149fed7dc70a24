//! YUV4MPEG2 (Y4M) files: a text header line, then `FRAME` lines each followed by raw I420.
//!
//! The reader streams frame by frame from any [`Read`] (a file or a stdin pipe) and accepts
//! only 8-bit progressive 4:2:0, the one layout the codec takes; anything else is an error that
//! names the header field. Sizes are bounded before any frame buffer is allocated, and frame
//! data is buffered only as it arrives, so a hostile header cannot make us allocate gigabytes.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};

use crate::error::CodecError;
use crate::image::{Image, MAX_DIMENSION};

/// The first bytes of every Y4M file (including the separating space).
const SIGNATURE: &[u8] = b"YUV4MPEG2 ";
/// Longest header or `FRAME` line accepted, newline included; real files use under 100 bytes.
const MAX_LINE: u64 = 4096;
/// Largest picture accepted, in pixels (4096x4096 covers 4K; a frame is then 24 MiB).
pub use crate::image::MAX_PIXELS;

fn format_error(message: impl Into<String>) -> CodecError {
    CodecError::Format {
        format: "Y4M",
        message: message.into(),
    }
}

/// A ratio of two integers, as Y4M writes frame rates (`F30000:1001`) and aspects (`A1:1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rational {
    /// Numerator.
    pub num: u32,
    /// Denominator.
    pub den: u32,
}

impl Rational {
    /// `num / den`.
    pub const fn new(num: u32, den: u32) -> Self {
        Rational { num, den }
    }

    /// The value as a float (NaN or infinite when `den` is 0).
    pub fn to_f64(self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }
}

impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.num, self.den)
    }
}

/// Where 4:2:0 chroma samples sit relative to luma. The codec ignores it; we keep it so a
/// file read and written again says the same thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ChromaSiting {
    /// `C420jpeg` (also a missing `C`): centred between luma samples both ways.
    #[default]
    Jpeg,
    /// `C420`: the generic 4:2:0 tag.
    Generic,
    /// `C420paldv`: PAL DV siting.
    PalDv,
    /// `C420mpeg2`: MPEG-2 siting (co-sited horizontally).
    Mpeg2,
}

impl ChromaSiting {
    /// The header value, without the `C`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChromaSiting::Jpeg => "420jpeg",
            ChromaSiting::Generic => "420",
            ChromaSiting::PalDv => "420paldv",
            ChromaSiting::Mpeg2 => "420mpeg2",
        }
    }

    fn parse(value: &str) -> Result<Self, CodecError> {
        Ok(match value {
            "420jpeg" => ChromaSiting::Jpeg,
            "420" => ChromaSiting::Generic,
            "420paldv" => ChromaSiting::PalDv,
            "420mpeg2" => ChromaSiting::Mpeg2,
            _ => {
                return Err(format_error(format!(
                    "C (colour space) {value:?} is not supported: only 8-bit 4:2:0 \
                     (420, 420jpeg, 420paldv, 420mpeg2)"
                )))
            }
        })
    }
}

/// Interlacing as declared by `I`; only progressive content is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Interlace {
    /// `Ip`.
    #[default]
    Progressive,
    /// `I?` or no `I` at all: not said; treated as progressive.
    Unknown,
}

/// The parsed header line of a Y4M stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Y4mHeader {
    /// Visible width in pixels (`W`): even, non-zero.
    pub width: u32,
    /// Visible height in pixels (`H`): even, non-zero.
    pub height: u32,
    /// Frames per second (`F`); `None` when missing or `F0:0`.
    pub frame_rate: Option<Rational>,
    /// Pixel aspect ratio (`A`); `None` when missing or unknown (`A0:0`).
    pub aspect: Option<Rational>,
    /// Chroma siting (`C`).
    pub chroma: ChromaSiting,
    /// Interlacing (`I`).
    pub interlace: Interlace,
    /// `X` comments, without the `X`, kept in order so a copy of the file keeps them.
    pub comments: Vec<String>,
}

impl Y4mHeader {
    /// A progressive 4:2:0 header with unknown aspect and no comments.
    pub fn new(width: u32, height: u32, frame_rate: Rational) -> Self {
        Y4mHeader {
            width,
            height,
            frame_rate: Some(frame_rate),
            aspect: None,
            chroma: ChromaSiting::default(),
            interlace: Interlace::default(),
            comments: Vec::new(),
        }
    }

    /// Bytes of picture data in one frame (`W * H * 3 / 2`).
    pub fn frame_len(&self) -> usize {
        self.width as usize * self.height as usize * 3 / 2
    }

    /// Parses a header line, without its newline. Never panics, whatever the bytes.
    pub fn parse(line: &[u8]) -> Result<Self, CodecError> {
        let rest = line.strip_prefix(SIGNATURE).ok_or_else(|| {
            format_error("signature: the file does not start with \"YUV4MPEG2 \"")
        })?;
        let mut fields = Fields::default();
        for token in rest.split(|&b| b == b' ').filter(|t| !t.is_empty()) {
            fields.take(token)?;
        }
        fields.finish()
    }

    /// Checks the values a writer is about to put in a file.
    fn validate(&self) -> Result<(), CodecError> {
        check_dimension("W (width)", self.width)?;
        check_dimension("H (height)", self.height)?;
        check_area(self.width, self.height)?;
        if let Some(bad) = self
            .comments
            .iter()
            .find(|c| c.bytes().any(|b| b == b' ' || b == b'\n'))
        {
            return Err(format_error(format!(
                "X (comment) {bad:?} contains a space or newline"
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Y4mHeader {
    /// The header line, without its newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self.frame_rate.unwrap_or(Rational::new(0, 0));
        let aspect = self.aspect.unwrap_or(Rational::new(0, 0));
        let interlace = match self.interlace {
            Interlace::Progressive => 'p',
            Interlace::Unknown => '?',
        };
        write!(
            f,
            "YUV4MPEG2 W{} H{} F{rate} I{interlace} A{aspect} C{}",
            self.width,
            self.height,
            self.chroma.as_str()
        )?;
        for comment in &self.comments {
            write!(f, " X{comment}")?;
        }
        Ok(())
    }
}

/// Header fields seen so far; each may appear once.
#[derive(Default)]
struct Fields {
    width: Option<u32>,
    height: Option<u32>,
    frame_rate: Option<Option<Rational>>,
    aspect: Option<Option<Rational>>,
    chroma: Option<ChromaSiting>,
    interlace: Option<Interlace>,
    comments: Vec<String>,
}

impl Fields {
    fn take(&mut self, token: &[u8]) -> Result<(), CodecError> {
        let (tag, value) = (token[0], &token[1..]);
        if tag == b'X' {
            self.comments
                .push(String::from_utf8_lossy(value).into_owned());
            return Ok(());
        }
        let name = match tag {
            b'W' => "W (width)",
            b'H' => "H (height)",
            b'F' => "F (frame rate)",
            b'A' => "A (aspect)",
            b'C' => "C (colour space)",
            b'I' => "I (interlacing)",
            // Unknown tags are ignored, as the format asks, so newer writers stay readable.
            _ => return Ok(()),
        };
        let value = std::str::from_utf8(value)
            .map_err(|_| format_error(format!("{name}: value is not text")))?;
        match tag {
            b'W' => set(name, &mut self.width, parse_u32(name, value)?),
            b'H' => set(name, &mut self.height, parse_u32(name, value)?),
            b'F' => set(name, &mut self.frame_rate, parse_rate(name, value)?),
            b'A' => set(name, &mut self.aspect, parse_aspect(name, value)?),
            b'C' => set(name, &mut self.chroma, ChromaSiting::parse(value)?),
            _ => set(name, &mut self.interlace, parse_interlace(value)?),
        }
    }

    fn finish(self) -> Result<Y4mHeader, CodecError> {
        let width = self
            .width
            .ok_or_else(|| format_error("W (width) is missing"))?;
        let height = self
            .height
            .ok_or_else(|| format_error("H (height) is missing"))?;
        check_dimension("W (width)", width)?;
        check_dimension("H (height)", height)?;
        check_area(width, height)?;
        Ok(Y4mHeader {
            width,
            height,
            frame_rate: self.frame_rate.flatten(),
            aspect: self.aspect.flatten(),
            chroma: self.chroma.unwrap_or_default(),
            interlace: self.interlace.unwrap_or(Interlace::Unknown),
            comments: self.comments,
        })
    }
}

fn set<T>(name: &str, slot: &mut Option<T>, value: T) -> Result<(), CodecError> {
    if slot.replace(value).is_some() {
        return Err(format_error(format!("{name} appears twice")));
    }
    Ok(())
}

fn parse_u32(name: &str, value: &str) -> Result<u32, CodecError> {
    // `u32::from_str` accepts a leading '+'; the format does not.
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format_error(format!(
            "{name}: {value:?} is not a decimal number"
        )));
    }
    value
        .parse()
        .map_err(|_| format_error(format!("{name}: {value} is too large")))
}

fn parse_ratio(name: &str, value: &str) -> Result<Rational, CodecError> {
    let (num, den) = value
        .split_once(':')
        .ok_or_else(|| format_error(format!("{name}: {value:?} is not of the form N:D")))?;
    Ok(Rational::new(parse_u32(name, num)?, parse_u32(name, den)?))
}

/// `F0:0` means unknown; any other zero is an error (a rate of 0 or infinity).
fn parse_rate(name: &str, value: &str) -> Result<Option<Rational>, CodecError> {
    match parse_ratio(name, value)? {
        Rational { num: 0, den: 0 } => Ok(None),
        Rational { num: 0, .. } | Rational { den: 0, .. } => Err(format_error(format!(
            "{name}: {value} is not a positive rate"
        ))),
        rate => Ok(Some(rate)),
    }
}

/// Any zero in an aspect means unknown: writers disagree on how to say it.
fn parse_aspect(name: &str, value: &str) -> Result<Option<Rational>, CodecError> {
    let aspect = parse_ratio(name, value)?;
    Ok((aspect.num != 0 && aspect.den != 0).then_some(aspect))
}

fn parse_interlace(value: &str) -> Result<Interlace, CodecError> {
    match value {
        "p" => Ok(Interlace::Progressive),
        "?" => Ok(Interlace::Unknown),
        _ => Err(format_error(format!(
            "I (interlacing) {value:?} is not supported: only progressive (p or ?)"
        ))),
    }
}

fn check_dimension(name: &str, value: u32) -> Result<(), CodecError> {
    if value == 0 || value & 1 != 0 || value > MAX_DIMENSION {
        return Err(format_error(format!(
            "{name} {value} must be even and between 2 and {MAX_DIMENSION} for 4:2:0 VP8"
        )));
    }
    Ok(())
}

fn check_area(width: u32, height: u32) -> Result<(), CodecError> {
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(format_error(format!(
            "W x H {width}x{height} exceeds the limit of {MAX_PIXELS} pixels"
        )));
    }
    Ok(())
}

/// Reads one line (up to and without `\n`) into `line`. `Ok(false)` on EOF before any byte.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, what: &str) -> Result<bool, CodecError> {
    line.clear();
    input.take(MAX_LINE).read_until(b'\n', line)?;
    if line.is_empty() {
        return Ok(false);
    }
    if line.pop() != Some(b'\n') {
        let why = if line.len() as u64 >= MAX_LINE - 1 {
            format!("is longer than {MAX_LINE} bytes")
        } else {
            "is truncated (no newline)".to_owned()
        };
        return Err(format_error(format!("{what} {why}")));
    }
    Ok(true)
}

/// Streams frames from a Y4M file or pipe.
///
/// ```no_run
/// # fn main() -> Result<(), salsify_codec::CodecError> {
/// let mut reader = salsify_codec::y4m::Y4mReader::new(std::io::stdin().lock())?;
/// while let Some(image) = reader.next_frame()? {
///     println!("{}x{}", image.width(), image.height());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Y4mReader<R> {
    input: BufReader<R>,
    header: Y4mHeader,
    frames_read: u64,
    line: Vec<u8>,
    packed: Vec<u8>,
    failed: bool,
}

impl<R: Read> Y4mReader<R> {
    /// Reads and checks the header. Buffers `input` itself, so pass it unbuffered.
    pub fn new(input: R) -> Result<Self, CodecError> {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        if !read_line(&mut input, &mut line, "header line")? {
            return Err(format_error("signature: the input is empty"));
        }
        let header = Y4mHeader::parse(&line)?;
        Ok(Y4mReader {
            input,
            header,
            frames_read: 0,
            line,
            packed: Vec::new(),
            failed: false,
        })
    }

    /// The stream's header.
    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }

    /// Frames read so far.
    pub fn frames_read(&self) -> u64 {
        self.frames_read
    }

    /// Reads the next frame into `image`, replacing it if its size differs from the stream's.
    ///
    /// `Ok(false)` at a clean end of stream (EOF right after a frame); a partial frame is an
    /// error naming the frame (numbered from 0).
    pub fn read_frame_into(&mut self, image: &mut Image) -> Result<bool, CodecError> {
        if !self.read_packed()? {
            return Ok(false);
        }
        let (w, h) = (self.header.width, self.header.height);
        if image.width() != w || image.height() != h {
            *image = Image::new(w, h)?;
        }
        image.copy_from_packed(&self.packed)?;
        self.frames_read += 1;
        Ok(true)
    }

    /// Reads the next frame into a new image; `Ok(None)` at a clean end of stream.
    pub fn next_frame(&mut self) -> Result<Option<Image>, CodecError> {
        if !self.read_packed()? {
            return Ok(None);
        }
        let mut image = Image::new(self.header.width, self.header.height)?;
        image.copy_from_packed(&self.packed)?;
        self.frames_read += 1;
        Ok(Some(image))
    }

    /// Reads one `FRAME` line and its picture bytes into `self.packed`.
    fn read_packed(&mut self) -> Result<bool, CodecError> {
        let index = self.frames_read;
        let what = format!("FRAME line of frame {index}");
        if !read_line(&mut self.input, &mut self.line, &what)? {
            return Ok(false);
        }
        let params = self.line.strip_prefix(b"FRAME");
        if !matches!(params, Some(p) if p.is_empty() || p[0] == b' ') {
            return Err(format_error(format!(
                "{what} does not start with \"FRAME\""
            )));
        }
        // Grow the buffer only as bytes arrive: a header may claim a size the data never has.
        let want = self.header.frame_len();
        self.packed.clear();
        self.input
            .by_ref()
            .take(want as u64)
            .read_to_end(&mut self.packed)?;
        if self.packed.len() != want {
            return Err(format_error(format!(
                "frame {index} is truncated: {} of {want} bytes",
                self.packed.len()
            )));
        }
        Ok(true)
    }

    /// Gives back the underlying reader (buffered data past the last frame read is lost).
    pub fn into_inner(self) -> R {
        self.input.into_inner()
    }
}

/// Yields frames until the end of stream; after the first error it yields nothing more.
impl<R: Read> Iterator for Y4mReader<R> {
    type Item = Result<Image, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.next_frame().transpose();
        self.failed = matches!(result, Some(Err(_)));
        result
    }
}

/// Writes a Y4M stream: the header at creation, then one `FRAME` per image.
#[derive(Debug)]
pub struct Y4mWriter<W: Write> {
    output: W,
    header: Y4mHeader,
    buffer: Vec<u8>,
    frames_written: u64,
}

impl<W: Write> Y4mWriter<W> {
    /// Checks `header` and writes it. Each frame then goes out in one `write_all`, so an
    /// unbuffered output is fine.
    pub fn new(mut output: W, header: Y4mHeader) -> Result<Self, CodecError> {
        header.validate()?;
        writeln!(output, "{header}")?;
        Ok(Y4mWriter {
            output,
            header,
            buffer: Vec::new(),
            frames_written: 0,
        })
    }

    /// The header written.
    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> u64 {
        self.frames_written
    }

    /// Appends one frame; its visible size must be the header's.
    pub fn write_frame(&mut self, image: &Image) -> Result<(), CodecError> {
        if image.width() != self.header.width || image.height() != self.header.height {
            return Err(CodecError::InvalidInput(format!(
                "a {}x{} image for a {}x{} Y4M stream",
                image.width(),
                image.height(),
                self.header.width,
                self.header.height
            )));
        }
        self.buffer.clear();
        self.buffer.extend_from_slice(b"FRAME\n");
        image.write_packed(&mut self.buffer);
        self.output.write_all(&self.buffer)?;
        self.frames_written += 1;
        Ok(())
    }

    /// Flushes and gives back the output.
    pub fn finish(mut self) -> Result<W, CodecError> {
        self.output.flush()?;
        Ok(self.output)
    }
}
