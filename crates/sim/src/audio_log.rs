//! A finished run's audio read back from its folder: what the receiver played (`audio.csv`)
//! and the pictures it showed (`frames.csv`), both counting from the run's zero, and the A/V
//! skew of every shown picture computed from the two, as the run itself computed it. The one
//! reader of these files for the report and the replay dashboard.

use std::path::Path;

use salsify_audio::{read_played_csv, OpusConfig, PlayedFrame};
use salsify_time::Instant;

/// A run's audio, from its files.
#[derive(Clone, Debug, PartialEq)]
pub struct RunAudio {
    /// Every frame played, by when.
    pub played: Vec<PlayedFrame>,
    /// Each picture shown while audio played: (shown at, audio lead in ms; positive: heard
    /// before seen).
    pub skews: Vec<(Instant, f64)>,
}

/// The audio of the run in `dir`: `None` when it has no `audio.csv` (it carried no audio),
/// an error when `audio.csv` or `frames.csv` cannot be read.
pub fn read_run_audio(dir: &Path) -> Result<Option<RunAudio>, String> {
    let path = dir.join("audio.csv");
    if !path.is_file() {
        return Ok(None);
    }
    let read =
        |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let played = read_played_csv(&read(&path)?).map_err(|e| format!("{}: {e}", dir.display()))?;
    let frames = dir.join("frames.csv");
    let shown =
        read_shown_pictures(&read(&frames)?).map_err(|e| format!("{}: {e}", frames.display()))?;
    // The runs' frame length (experiments do not set another).
    let frame = OpusConfig::default().frame.duration();
    let skews = salsify_audio::metrics::skews(&played, &shown, frame);
    Ok(Some(RunAudio { played, skews }))
}

/// The pictures a run's `frames.csv` (see [`crate::write_frames_csv`]) says were shown:
/// (captured, shown at), in order of showing. Columns by name; lines of pictures never shown
/// are passed over.
pub fn read_shown_pictures(text: &str) -> Result<Vec<(Instant, Instant)>, String> {
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines
        .next()
        .map_or(vec![], |(_, h)| h.split(',').map(str::trim).collect());
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no '{name}' column in the header"))
    };
    let (capture, display) = (column("capture_ms")?, column("display_ms")?);
    let mut shown = Vec::new();
    for (index, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let time = |i: usize, name: &str| -> Result<Option<Instant>, String> {
            let text = cells.get(i).copied().unwrap_or("");
            if text.is_empty() {
                return Ok(None);
            }
            match text.parse::<f64>() {
                Ok(ms) if (0.0..1e12).contains(&ms) => {
                    Ok(Some(Instant::from_micros((ms * 1000.0).round() as u64)))
                }
                _ => Err(format!("line {}: {name} '{text}' is not a time", index + 1)),
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let at = time(display, "display_ms")?;
        let captured = time(capture, "capture_ms")?;
        match (captured, at) {
            (Some(c), Some(at)) => shown.push((c, at)),
            (None, Some(_)) => {
                return Err(format!(
                    "line {}: a shown picture with no capture_ms",
                    index + 1
                ))
            }
            _ => {}
        }
    }
    shown.sort_by_key(|&(_, at)| at);
    Ok(shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_audio::PlayedKind;
    use salsify_metrics::FrameRecord;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn shown_pictures_read_back_from_frames_csv() {
        let mut records: Vec<FrameRecord> = (0..4)
            .map(|i| FrameRecord::captured(i, ms(i * 33)))
            .collect();
        records[0].display = Some(ms(140));
        records[2].display = Some(ms(190));
        let mut text = Vec::new();
        crate::write_frames_csv(&records, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(
            read_shown_pictures(&text).unwrap(),
            [(ms(0), ms(140)), (ms(66), ms(190))]
        );
        assert!(read_shown_pictures("frame,capture_ms\n").is_err());
        let e = read_shown_pictures("capture_ms,display_ms\n1,x\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("'x'"), "{e}");
        assert!(read_shown_pictures("capture_ms,display_ms\n,5\n").is_err());
    }

    /// A folder with both logs gives each shown picture's lead; one without audio.csv none.
    #[test]
    fn a_runs_folder_gives_its_skews() {
        let dir = std::env::temp_dir().join(format!("salsify-run-audio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _ = std::fs::remove_file(dir.join("audio.csv"));
        assert_eq!(read_run_audio(&dir), Ok(None));
        // Audio captured at t plays at t + 100 ms; the picture captured at 40 ms is shown at
        // 160 ms, when the audio captured at 60 ms plays: heard 20 ms after it was seen.
        let played: Vec<PlayedFrame> = (0..10)
            .map(|i| PlayedFrame {
                at: ms(100 + 20 * i),
                frame: Some(i),
                captured: ms(20 * i),
                kind: PlayedKind::Packet,
            })
            .collect();
        let mut audio = Vec::new();
        salsify_audio::write_played_csv(&played, Instant::ZERO, &mut audio).unwrap();
        std::fs::write(dir.join("audio.csv"), audio).unwrap();
        let mut picture = FrameRecord::captured(0, ms(40));
        picture.display = Some(ms(160));
        let mut frames = Vec::new();
        crate::write_frames_csv(&[picture], &mut frames).unwrap();
        std::fs::write(dir.join("frames.csv"), frames).unwrap();
        let run = read_run_audio(&dir).unwrap().unwrap();
        assert_eq!(run.played, played);
        assert_eq!(run.skews, [(ms(160), 20.0)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
