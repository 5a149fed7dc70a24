//! Real-time scheduling for the emulated link's thread.
//!
//! On a 2-core machine the live encoder, decoder and scorer keep both cores busy; a relay
//! thread woken for its next delivery then waits for a time slice (measured: 1% of datagrams
//! 2.8 ms late, the worst 5 ms, at 1280x720 and 60 fps), and the receiver stamps that as
//! queueing the trace does not have. With `SCHED_FIFO` the relay runs as soon as it is due
//! (same runs: 99% within 1.2 ms). Linux grants it to root or with `CAP_SYS_NICE` (or an
//! `RLIMIT_RTPRIO`); elsewhere the relay runs as before and says so.

/// The priority asked for: low among real-time ones, above every normal thread. The relay
/// blocks between deliveries, so it cannot starve the machine.
const PRIORITY: libc::c_int = 10;

/// Puts the calling thread in `SCHED_FIFO`; the OS error (`EPERM` without the right) if
/// refused. Only the calling thread changes.
pub fn request_for_this_thread() -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: PRIORITY,
    };
    // SAFETY: `sched_setscheduler` reads `param`, a valid local, and changes only this
    // thread's policy (pid 0 is the calling thread on Linux).
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the calling thread runs under `SCHED_FIFO`.
pub fn is_this_thread_realtime() -> bool {
    // SAFETY: no arguments but the calling thread's id (0).
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_granted_or_refused_for_want_of_the_right_and_changes_one_thread() {
        std::thread::spawn(|| {
            let granted = request_for_this_thread();
            assert_eq!(is_this_thread_realtime(), granted.is_ok(), "{granted:?}");
            if let Err(e) = granted {
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
            }
        })
        .join()
        .unwrap();
        assert!(!is_this_thread_realtime());
    }
}
