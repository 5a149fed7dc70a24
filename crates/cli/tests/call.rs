//! Two-way calls on loopback: two `salsify call` processes, one listening and one dialing,
//! encrypted, small pictures, a few seconds. Each side's folder holds the peer's video (IVF
//! frames that decode) and audio (its marks in order), and the data messages each side sent
//! arrive at the other, none lost and in order. Assertions are floors, never timings.

use std::path::Path;
use std::process::Child;

use salsify_audio::{read_marks, read_wav};
use salsify_codec::{IvfReader, PlainDecoder};

mod support;

use support::{finish, free_addr, keys};

fn salsify(args: &[&str]) -> Child {
    support::spawn(args)
}

/// Frames of `ivf` that decode, in order.
fn decodable_frames(ivf: &Path) -> u64 {
    let file = std::fs::File::open(ivf).unwrap_or_else(|e| panic!("{}: {e}", ivf.display()));
    let mut reader = IvfReader::new(std::io::BufReader::new(file)).unwrap();
    let header = *reader.header();
    let mut decoder = PlainDecoder::new(u32::from(header.width), u32::from(header.height)).unwrap();
    let mut decoded = 0;
    while let Some(frame) = reader.next_frame().unwrap() {
        if decoder.decode(&frame.data).is_ok() {
            decoded += 1;
        }
    }
    decoded
}

fn summary(dir: &Path) -> serde_json::Value {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The flags both sides share, then this side's.
fn call_args<'a>(meet: [&'a str; 2], out: &'a str, seconds: &'a str) -> Vec<&'a str> {
    let mut args = vec!["call", meet[0], meet[1], "--size", "160x96", "--fps", "30"];
    args.extend(["--out", out, "--duration", seconds, "-q"]);
    args
}

#[test]
fn a_two_way_call_shows_and_plays_each_side_and_carries_data_both_ways() {
    let dir = support::temp_dir("call", "two-way");
    let addr = free_addr();
    let (b_keys, a_keys) = keys(&dir);
    let (a_out, b_out) = (dir.join("a"), dir.join("b"));
    let (a_in, b_in) = (dir.join("a-in.txt"), dir.join("b-in.txt"));
    let (a_got, b_got) = (dir.join("a-got.txt"), dir.join("b-got.txt"));
    let a_lines: Vec<String> = (0..40).map(|i| format!("command {i}: turn left")).collect();
    let b_lines: Vec<String> = (0..25).map(|i| format!("chat {i}")).collect();
    std::fs::write(&a_in, a_lines.join("\n") + "\n").unwrap();
    std::fs::write(&b_in, b_lines.join("\n")).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (b_out_s, b_in_s, b_got_s) = (s(&b_out), s(&b_in), s(&b_got));
    let mut b_args = call_args(["--listen", &addr], &b_out_s, "6");
    b_args.extend([
        "--audio",
        "synthetic",
        "--data-in",
        &b_in_s,
        "--data-out",
        &b_got_s,
    ]);
    b_args.extend(b_keys.iter().map(String::as_str));
    let b = salsify(&b_args);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (a_out_s, a_in_s, a_got_s) = (s(&a_out), s(&a_in), s(&a_got));
    let mut a_args = call_args(["--to", &addr], &a_out_s, "5");
    a_args.extend([
        "--audio",
        "synthetic",
        "--data-in",
        &a_in_s,
        "--data-out",
        &a_got_s,
    ]);
    a_args.extend(a_keys.iter().map(String::as_str));
    let a = finish(salsify(&a_args), "call --to");
    let b = finish(b, "call --listen");
    let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();
    let (a_said, b_said) = (said(&a), said(&b));
    assert!(a_said.contains("frames shown, 1 sessions"), "{a_said}");

    for (out, said) in [(&a_out, &a_said), (&b_out, &b_said)] {
        let frames = decodable_frames(&out.join("received.ivf"));
        assert!(
            frames > 60,
            "{frames} frames decode in {}\n{said}",
            out.display()
        );
        let json = summary(out);
        assert_eq!(json["received"]["sessions"], 1, "{json}");
        assert!(
            json["received"]["frames_shown"].as_u64().unwrap() >= frames,
            "{json}"
        );
        assert!(json["sent"]["frames_sent"].as_u64().unwrap() > 60, "{json}");
        let samples = read_wav(&out.join("audio.wav")).unwrap();
        let marks: Vec<u32> = read_marks(&samples).iter().map(|m| m.number).collect();
        assert!(
            marks.len() >= 2 && marks.windows(2).all(|w| w[1] > w[0]),
            "marks {marks:?} in {}\n{said}",
            out.display()
        );
    }
    // Ordered messages: every one, once, in order, both ways.
    assert_eq!(lines(&b_got), a_lines, "{b_said}");
    assert_eq!(lines(&a_got), b_lines, "{a_said}");
    let json = summary(&b_out);
    assert_eq!(json["data"]["received"], 40, "{json}");
    assert_eq!(json["data"]["undelivered"], 0, "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A teleoperation: the robot sends video, the operator none and a stream of *latest*
/// commands. The operator sees the robot; the robot gets the newest command.
#[test]
fn an_operator_without_a_camera_sees_the_robot_and_steers_it() {
    let dir = support::temp_dir("call", "teleop");
    let addr = free_addr();
    let (robot_keys, operator_keys) = keys(&dir);
    let (robot_out, operator_out) = (dir.join("robot"), dir.join("operator"));
    let (commands, got) = (dir.join("stick.txt"), dir.join("robot-got.txt"));
    let sent: Vec<String> = (0..200).map(|i| format!("stick {i} -0.25")).collect();
    std::fs::write(&commands, sent.join("\n") + "\n").unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (robot_out_s, got_s) = (s(&robot_out), s(&got));
    let mut robot_args = call_args(["--listen", &addr], &robot_out_s, "5");
    robot_args.extend(["--data-out", &got_s]);
    robot_args.extend(robot_keys.iter().map(String::as_str));
    let robot = salsify(&robot_args);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (operator_out_s, commands_s) = (s(&operator_out), s(&commands));
    let mut operator_args = call_args(["--to", &addr], &operator_out_s, "4");
    operator_args.extend(["--input", "none", "--data-in", &commands_s, "--data-latest"]);
    operator_args.extend(operator_keys.iter().map(String::as_str));
    let operator = finish(salsify(&operator_args), "operator");
    let robot = finish(robot, "robot");
    let said = String::from_utf8_lossy(&operator.stderr).to_string()
        + &String::from_utf8_lossy(&robot.stderr);

    assert!(
        decodable_frames(&operator_out.join("received.ivf")) > 50,
        "{said}"
    );
    let robot_json = summary(&robot_out);
    assert_eq!(robot_json["received"]["frames_shown"], 0, "{robot_json}");
    assert_eq!(summary(&operator_out)["sent"]["frames_sent"], 0);
    // Latest messages: whatever arrived came in order, and the newest is the last sent.
    let arrived = lines(&got);
    assert_eq!(arrived.last(), sent.last(), "{arrived:?}\n{said}");
    let index = |l: &String| sent.iter().position(|s| s == l).unwrap();
    assert!(
        arrived.windows(2).all(|w| index(&w[0]) < index(&w[1])),
        "{arrived:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One way, `send` and `recv` carry data messages both ways too (ordered: all, in order).
#[test]
fn send_and_recv_carry_data_both_ways() {
    let dir = support::temp_dir("call", "one-way-data");
    let addr = free_addr();
    let (to_recv, to_send) = (dir.join("to-recv.txt"), dir.join("to-send.txt"));
    let (recv_got, send_got) = (dir.join("recv-got.txt"), dir.join("send-got.txt"));
    let down: Vec<String> = (0..30).map(|i| format!("go {i}")).collect();
    let up: Vec<String> = (0..20).map(|i| format!("ack {i}")).collect();
    std::fs::write(&to_recv, down.join("\n")).unwrap();
    std::fs::write(&to_send, up.join("\n")).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (to_send_s, recv_got_s) = (s(&to_send), s(&recv_got));
    let recv = salsify(&[
        "recv",
        "--listen",
        &addr,
        "--duration",
        "8",
        "-q",
        "--data-in",
        &to_send_s,
        "--data-out",
        &recv_got_s,
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (to_recv_s, send_got_s) = (s(&to_recv), s(&send_got));
    finish(
        salsify(&[
            "send",
            "--to",
            &addr,
            "--size",
            "160x96",
            "--duration",
            "3",
            "-q",
            "--data-in",
            &to_recv_s,
            "--data-out",
            &send_got_s,
        ]),
        "send",
    );
    let said = finish(recv, "recv");
    assert_eq!(
        lines(&recv_got),
        down,
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    assert_eq!(lines(&send_got), up);
}

/// A line over 1 KB is an error naming the line, and the command fails.
#[test]
fn a_data_line_over_one_kilobyte_is_an_error_naming_it() {
    let dir = support::temp_dir("call", "long-line");
    let addr = free_addr();
    let input = dir.join("in.txt");
    std::fs::write(&input, format!("fine\n{}\n", "x".repeat(1025))).unwrap();
    let recv = salsify(&["recv", "--listen", &addr, "--duration", "6", "-q"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = support::spawn(&[
        "send",
        "--to",
        &addr,
        "--size",
        "160x96",
        "--duration",
        "3",
        "-q",
        "--data-in",
        input.to_str().unwrap(),
    ])
    .wait_with_output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("line 2 of the data input"), "{said}");
    let _ = recv.wait_with_output();
}
