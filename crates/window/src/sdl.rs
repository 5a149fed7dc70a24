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

use crate::call_keys::CallKeys;
use crate::config::{named_display, WindowConfig, WindowError, WindowOutcome};
use crate::mailbox::{Mailbox, Screen};

/// SDL video drivers that show nothing: taken only when asked for by SDL_VIDEODRIVER.
const HEADLESS_DRIVERS: [&str; 3] = ["offscreen", "dummy", "evdev"];

/// Longest the window waits for a picture before looking at its events again.
const EVENT_POLL: Duration = Duration::from_millis(10);
/// The preview of one's own pictures: this share of the window's width, in its bottom-right
/// corner, this share of the width in from the edges.
const PREVIEW_WIDTH: f64 = 0.25;
const PREVIEW_MARGIN: f64 = 0.02;

/// An open window. Not `Send`: it stays on the thread that opened it.
pub struct Window {
    // Field order is drop order: the canvas (and its window) before SDL itself.
    canvas: WindowCanvas,
    events: sdl2::EventPump,
    _video: sdl2::VideoSubsystem,
    _sdl: sdl2::Sdl,
    mailbox: Arc<Mailbox>,
    config: WindowConfig,
    /// A call's own pictures, shown small in a corner.
    preview: Option<Arc<Mailbox>>,
    /// A call's microphone and camera keys.
    keys: Option<Arc<CallKeys>>,
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
            preview: None,
            keys: None,
        })
    }

    /// The handle for this side's own pictures in a call: shown small in the bottom-right
    /// corner over the peer's.
    pub fn preview_screen(&mut self) -> Screen {
        Screen(self.preview.get_or_insert_with(Default::default).clone())
    }

    /// The microphone and camera keys (`m`, `v`) of a call's window, for its sources.
    pub fn call_keys(&mut self) -> Arc<CallKeys> {
        self.keys.get_or_insert_with(Default::default).clone()
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
            let mut preview_surface = None;
            let mut preview: Option<Arc<Image>> = None;
            let mut last: Option<Arc<Image>> = None;
            let mut first = true;
            while !worker.is_finished() {
                let (quit, mut redraw) = self.poll_events();
                if let Some((p, _)) = self.preview.as_ref().and_then(|m| m.take(Duration::ZERO)) {
                    preview = Some(p);
                    redraw = true;
                }
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
                let inset = preview.as_deref().map(|p| (p, &mut preview_surface));
                match self.present(&creator, &mut surface, &picture, inset, &mut first) {
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
                Event::KeyDown {
                    keycode: Some(key @ (Keycode::M | Keycode::V)),
                    repeat: false,
                    ..
                } => {
                    if let Some(keys) = &self.keys {
                        match key {
                            Keycode::M => keys.toggle_mute(),
                            _ => keys.toggle_camera(),
                        };
                        let title = keys.title(&self.config.title);
                        let _ = self.canvas.window_mut().set_title(&title);
                    }
                }
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

    /// Uploads `picture` and shows it, scaled to the window with its aspect ratio kept, with
    /// `inset` (a call's own picture and its texture) small in the bottom-right corner.
    fn present<'a>(
        &mut self,
        creator: &'a TextureCreator<WindowContext>,
        surface: &mut Option<Surface<'a>>,
        picture: &Image,
        inset: Option<(&Image, &mut Option<Surface<'a>>)>,
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
        upload(&mut surface.texture, picture)?;
        self.canvas.clear();
        self.canvas.copy(&surface.texture, None, None)?;
        if let Some((own, own_surface)) = inset {
            let own_size = (own.width(), own.height());
            let own_surface = match own_surface {
                Some(s) if s.size == own_size => s,
                _ => {
                    let texture = creator
                        .create_texture_streaming(PixelFormatEnum::IYUV, own_size.0, own_size.1)
                        .map_err(|e| e.to_string())?;
                    own_surface.insert(Surface {
                        texture,
                        size: own_size,
                    })
                }
            };
            upload(&mut own_surface.texture, own)?;
            self.canvas
                .copy(&own_surface.texture, None, inset_rect(size, own_size))?;
        }
        self.canvas.present();
        Ok(())
    }
}

/// Uploads the visible rows of each plane of `picture` (sizes are even, so chroma has half
/// the rows) to `texture`, of the picture's size.
fn upload(texture: &mut Texture<'_>, picture: &Image) -> Result<(), String> {
    let height = picture.height();
    let rows = |id: PlaneId, n: u32| {
        let plane = picture.plane(id);
        (&plane.data()[..plane.stride() * n as usize], plane.stride())
    };
    let (y, u, v) = (
        rows(PlaneId::Y, height),
        rows(PlaneId::U, height / 2),
        rows(PlaneId::V, height / 2),
    );
    texture
        .update_yuv(None, y.0, y.1, u.0, u.1, v.0, v.1)
        .map_err(|e| e.to_string())
}

/// Where the preview of a `own`-sized picture goes over a `main`-sized one (the canvas's
/// logical size): [`PREVIEW_WIDTH`] of its width, its own aspect ratio, in the bottom-right
/// corner [`PREVIEW_MARGIN`] in.
fn inset_rect(main: (u32, u32), own: (u32, u32)) -> sdl2::rect::Rect {
    let width = (main.0 as f64 * PREVIEW_WIDTH).round().max(1.0);
    let height = (width * own.1 as f64 / own.0.max(1) as f64)
        .round()
        .max(1.0);
    let margin = (main.0 as f64 * PREVIEW_MARGIN).round();
    let x = main.0 as f64 - width - margin;
    let y = main.1 as f64 - height - margin;
    sdl2::rect::Rect::new(
        x.max(0.0) as i32,
        y.max(0.0) as i32,
        width as u32,
        height as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_sits_in_the_bottom_right_corner_with_its_own_aspect() {
        let r = inset_rect((640, 360), (640, 360));
        assert_eq!((r.width(), r.height()), (160, 90));
        assert_eq!((r.x(), r.y()), (640 - 160 - 13, 360 - 90 - 13));
        let tall = inset_rect((640, 360), (360, 640));
        assert_eq!((tall.width(), tall.height()), (160, 284));
        assert_eq!(tall.y(), 360 - 284 - 13);
        let taller = inset_rect((640, 360), (100, 400));
        assert_eq!(taller.y(), 0, "clamped at the top");
    }
}
