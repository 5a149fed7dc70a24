//! A live call with audio on loopback: `salsify send --audio synthetic` through `salsify
//! link` to `salsify recv --audio-out`, encrypted. The receiver's WAV file holds what it
//! played, and the audio barcode read back from it comes in order, a second apart; its
//! summary has the four audio figures, with sane values. A few seconds, small pictures.

use std::process::Child;

use salsify_audio::{read_marks, read_wav};

mod support;

use support::{finish, free_addr, keys, stop};

fn salsify(args: &[&str]) -> Child {
    support::spawn(args)
}

#[test]
fn a_call_with_audio_plays_its_marks_in_order_and_reports_the_audio_figures() {
    let dir = support::temp_dir("audio-call", "loopback");
    let (recv_addr, link_addr) = (free_addr(), free_addr());
    let (wav, csv, summary) = (
        dir.join("heard.wav"),
        dir.join("audio.csv"),
        dir.join("summary.json"),
    );
    let (recv_keys, send_keys) = keys(&dir);
    let mut recv_args = vec![
        "recv",
        "--listen",
        &recv_addr,
        "--audio-out",
        wav.to_str().unwrap(),
        "--audio-log",
        csv.to_str().unwrap(),
        "--summary",
        summary.to_str().unwrap(),
        "--duration",
        "10",
        "-q",
    ];
    recv_args.extend(recv_keys.iter().map(String::as_str));
    let recv = salsify(&recv_args);
    // The relay forwards the audio datagrams with the video's, through one link queue.
    let link = salsify(&[
        "link",
        "--listen",
        &link_addr,
        "--to",
        &recv_addr,
        "--link",
        "constant:4000",
        "--delay-ms",
        "10",
        "--duration",
        "10",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut send_args = vec![
        "send",
        "--to",
        &link_addr,
        "--size",
        "160x96",
        "--fps",
        "30",
        "--duration",
        "4.5",
        "--audio",
        "synthetic",
        "-q",
    ];
    send_args.extend(send_keys.iter().map(String::as_str));
    let sent = finish(salsify(&send_args), "send");
    let sent = String::from_utf8_lossy(&sent.stderr);
    assert!(sent.contains("audio: "), "{sent}");
    std::thread::sleep(std::time::Duration::from_millis(400));
    let heard = stop(recv, "recv");
    stop(link, "link");
    let heard = String::from_utf8_lossy(&heard.stderr);

    let samples = read_wav(&wav).unwrap_or_else(|e| panic!("{e}\n{heard}"));
    let marks = read_marks(&samples);
    let numbers: Vec<u32> = marks.iter().map(|m| m.number).collect();
    // Mark 0 may be cut (frames made before the handshake are not sent, and the delay grows
    // to the video's at the start), as may one where the delay moved; the others come in
    // order, as far apart as their numbers say.
    assert!(
        numbers.len() >= 3 && numbers.windows(2).all(|w| w[1] > w[0]),
        "marks {numbers:?}\n{heard}"
    );
    for pair in marks.windows(2) {
        let gap = pair[1].at_seconds - pair[0].at_seconds;
        let seconds = f64::from(pair[1].number - pair[0].number);
        assert!((gap - seconds).abs() < 0.15, "marks {marks:?}");
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let figure = |name: &str| {
        json[name]
            .as_f64()
            .unwrap_or_else(|| panic!("{name} in {json}"))
    };
    let (mean, p95) = (figure("audio_delay_mean_ms"), figure("audio_delay_p95_ms"));
    assert!(
        (5.0..400.0).contains(&mean) && p95 >= mean && p95 < 600.0,
        "{json}"
    );
    assert!(figure("audio_concealed_fraction") <= 0.05, "{json}");
    let skew = figure("av_skew_in_window_fraction");
    assert!((0.5..=1.0).contains(&skew), "{json}");
    assert!(json["frames_shown"].as_u64().unwrap() > 30, "{json}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(
        rows.starts_with(salsify_audio::AUDIO_CSV_HEADER) && rows.lines().count() > 150,
        "{}",
        &rows[..rows.len().min(300)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
