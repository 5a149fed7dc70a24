//! A picture size as the command line writes it (`WIDTHxHEIGHT`), shared by every input
//! and output below the commands.

/// Smallest width and height a `--size` may give.
pub const MIN_SIDE: u32 = 16;

/// A picture size given as `WIDTHxHEIGHT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (w, h) = s
            .split_once('x')
            .ok_or_else(|| format!("size '{s}' is not WIDTHxHEIGHT, e.g. 1280x720"))?;
        let parse = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("size '{s}': '{v}' is not a whole number"))
        };
        let size = Size {
            width: parse(w)?,
            height: parse(h)?,
        };
        salsify_codec::image::check_source_size(size.width, size.height)
            .map_err(|e| e.to_string())?;
        if size.width < MIN_SIDE || size.height < MIN_SIDE {
            return Err(format!(
                "size '{s}': at least {MIN_SIDE}x{MIN_SIDE} (one macroblock; quality is \
                 scored in 8x8 windows)"
            ));
        }
        Ok(size)
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}
