//! The dashboard's threads run at a lower CPU priority than the call's: on a busy machine the
//! scheduler then gives the call's loops, encoder and decoder the CPU first, and the page
//! waits (its samples are kept, only later).

/// How much nicer than the call the dashboard's threads are (Unix nice levels).
const NICER_BY: i32 = 10;

/// Lowers the calling thread's priority (Linux: each thread has its own nice value). A
/// refusal leaves it as it was: the dashboard still works, only without the precedence.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpriority/setpriority take plain integers and touch no memory of ours;
        // PRIO_PROCESS with who = 0 names the calling thread on Linux.
        unsafe {
            let now = libc::getpriority(libc::PRIO_PROCESS, 0);
            let _ = libc::setpriority(libc::PRIO_PROCESS, 0, (now + NICER_BY).min(19));
        }
    }
}
