//! The SDL2 window: opened, fed and closed on one thread (see the crate's docs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use salsify_codec::{Image, PlaneId};
use sdl2::event::{Event, WindowEvent};
use sdl2::keyboard::Keycode;
use sdl2::pixels::PixelFormatEnum;
use sdl2::render::{Texture, TextureCreator, WindowCanvas};
use sdl2::video::WindowContext;

use crate::config::{named_display, WindowConfig, WindowError, WindowOutcome};
use crate::mailbox::{Mailbox, Screen};

/// SDL video drivers that show nothing: taken only when asked for by SDL_VIDEODRIVER.
const HEADLESS_DRIVERS: [&str; 3] = ["offscreen", "dummy", "evdev"];

/// Longest the window waits for a picture before looking at its events again.
const EVENT_POLL: Duration = Duration::from_millis(10);

/// An open window. Not `Send`: it stays on the thread that opened it.
pub struct Window {
    // Field order is drop order: the canvas (and its window) before SDL itself.
    canvas: WindowCanvas,
    events: sdl2::EventPump,
    _video: sdl2::VideoSubsystem,
    _sdl: sdl2::Sdl,
    mailbox: Arc<Mailbox>,
    config: WindowConfig,
}

/// The texture pictures are uploaded to, with its size.
struct Surface<'a> {
    texture: Texture<'a>,
    size: (u32, u32),
}

impl Window {
    /// Opens the window (shown at once, black until the first picture), or says why not.
    pub fn open(config: WindowConfig) -> Result<Window, WindowError> {
        let display = named_display().ok_or(WindowError::NoDisplay)?;
        let fail = |reason: String| WindowError::Open {
            display: display.clone(),
            reason,
        };
        // Ctrl-C stays the command's (SDL would turn it into a quit event of its own).
        sdl2::hint::set("SDL_NO_SIGNAL_HANDLERS", "1");
        sdl2::hint::set("SDL_RENDER_SCALE_QUALITY", "linear");
        // X11 only when only X11 is named: SDL would otherwise try a Wayland compositor that
        // is not there (and print libwayland's complaint).
        let var = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        if !var("SDL_VIDEODRIVER") && !var("WAYLAND_DISPLAY") {
            sdl2::hint::set("SDL_VIDEODRIVER", "x11");
        }
        let sdl = sdl2::init().map_err(fail)?;
        let video = sdl.video().map_err(fail)?;
        // With no display server to reach, SDL falls back to drivers that show nothing.
        let driver = video.current_video_driver();
        if HEADLESS_DRIVERS.contains(&driver) && std::env::var_os("SDL_VIDEODRIVER").is_none() {
            return Err(fail(format!(
                "no display server answered there (SDL fell back to its '{driver}' driver, which \
                 shows nothing)"
            )));
        }
        // VP8 pictures are BT.601 limited range at every size.
        // SAFETY: a plain setter of a global SDL setting, called after SDL_Init.
        unsafe {
            sdl2::sys::SDL_SetYUVConversionMode(
                sdl2::sys::SDL_YUV_CONVERSION_MODE::SDL_YUV_CONVERSION_BT601,
            );
        }
        let (width, height) = config.size;
        let window = video
            .window(&config.title, width.max(16), height.max(16))
            .position_centered()
            .resizable()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut canvas = window
            .into_canvas()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        canvas.set_draw_color(sdl2::pixels::Color::BLACK);
        canvas.clear();
        canvas.present();
        let events = sdl.event_pump().map_err(fail)?;
        Ok(Window {
            canvas,
            events,
            _video: video,
            _sdl: sdl,
            mailbox: Arc::new(Mailbox::default()),
            config,
        })
    }

    /// The handle to give the receiver: it hands pictures over and never blocks.
    pub fn screen(&self) -> Screen {
        Screen(self.mailbox.clone())
    }

    /// Runs `work` on a new thread and shows pictures on this one until `work` returns.
    /// Closing the window (or a failure to show a picture) sets `stop`, which `work` is
    /// expected to obey. A panic in `work` is passed on.
    pub fn run<R: Send>(
        mut self,
        stop: &AtomicBool,
        work: impl FnOnce() -> R + Send,
    ) -> (R, WindowOutcome) {
        let mut outcome = WindowOutcome::default();
        let creator = self.canvas.texture_creator();
        let result = std::thread::scope(|scope| {
            let worker = scope.spawn(work);
            let mut surface = None;
            let mut last: Option<Arc<Image>> = None;
            let mut first = true;
            while !worker.is_finished() {
                let (quit, redraw) = self.poll_events();
                if quit && !outcome.closed {
                    outcome.closed = true;
                    stop.store(true, Ordering::SeqCst);
                    // Gone from the screen now; the session ends as after Ctrl-C.
                    self.canvas.window_mut().hide();
                }
                let picture = self.mailbox.take(EVENT_POLL);
                if outcome.closed || outcome.error.is_some() {
                    continue;
                }
                let (picture, since) = match (picture, redraw) {
                    (Some((p, since)), _) => (p, Some(since)),
                    (None, true) => match &last {
                        Some(p) => (p.clone(), None),
                        None => continue,
                    },
                    (None, false) => continue,
                };
                match self.present(&creator, &mut surface, &picture, &mut first) {
                    Ok(()) => {
                        if let Some(since) = since {
                            self.mailbox.presented(since);
                        }
                    }
                    Err(e) => {
                        outcome.error = Some(WindowError::Render(e));
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                last = Some(picture);
            }
            match worker.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        outcome.stats = self.mailbox.stats();
        (result, outcome)
    }

    /// Handles pending events: (the user asked to close, the picture needs drawing again).
    fn poll_events(&mut self) -> (bool, bool) {
        let (mut quit, mut redraw) = (false, false);
        for event in self.events.poll_iter() {
            match event {
                Event::Quit { .. }
                | Event::Window {
                    win_event: WindowEvent::Close,
                    ..
                }
                | Event::KeyDown {
                    keycode: Some(Keycode::Escape | Keycode::Q),
                    ..
                } => quit = true,
                Event::Window {
                    win_event:
                        WindowEvent::Exposed | WindowEvent::SizeChanged(..) | WindowEvent::Restored,
                    ..
                } => redraw = true,
                _ => {}
            }
        }
        (quit, redraw)
    }

    /// Uploads `picture` and shows it, scaled to the window with its aspect ratio kept.
    fn present<'a>(
        &mut self,
        creator: &'a TextureCreator<WindowContext>,
        surface: &mut Option<Surface<'a>>,
        picture: &Image,
        first: &mut bool,
    ) -> Result<(), String> {
        let size = (picture.width(), picture.height());
        let surface = match surface {
            Some(s) if s.size == size => s,
            _ => {
                let texture = creator
                    .create_texture_streaming(PixelFormatEnum::IYUV, size.0, size.1)
                    .map_err(|e| e.to_string())?;
                self.canvas
                    .set_logical_size(size.0, size.1)
                    .map_err(|e| e.to_string())?;
                if *first && self.config.fit_first_picture && size != self.config.size {
                    let window = self.canvas.window_mut();
                    window.set_size(size.0, size.1).map_err(|e| e.to_string())?;
                    window.set_position(
                        sdl2::video::WindowPos::Centered,
                        sdl2::video::WindowPos::Centered,
                    );
                }
                surface.insert(Surface { texture, size })
            }
        };
        *first = false;
        // The visible rows of each plane (sizes are even, so chroma has half the rows).
        let rows = |id: PlaneId, n: u32| {
            let plane = picture.plane(id);
            (&plane.data()[..plane.stride() * n as usize], plane.stride())
        };
        let (y, u, v) = (
            rows(PlaneId::Y, size.1),
            rows(PlaneId::U, size.1 / 2),
            rows(PlaneId::V, size.1 / 2),
        );
        surface
            .texture
            .update_yuv(None, y.0, y.1, u.0, u.1, v.0, v.1)
            .map_err(|e| e.to_string())?;
        self.canvas.clear();
        self.canvas.copy(&surface.texture, None, None)?;
        self.canvas.present();
        Ok(())
    }
}
