//! The decoder's state as a value.
//!
//! The codec runs a LAST-only, error-resilient VP8 stream (see `vpx`), so everything a decoder
//! needs to decode the next inter frame is the LAST reference picture and the frame size. A
//! [`State`] holds exactly that, behind an `Arc` so clones are cheap, plus a 64-bit content hash
//! that names it on the wire.

use std::fmt;
use std::sync::Arc;

use crate::image::Image;
pub use crate::state_hash::StateHash;

/// A decoder state: the LAST reference picture (16-aligned storage, visible size) or nothing.
///
/// Immutable and cheap to clone. Two states with equal hashes hold equal pictures.
#[derive(Clone, Default)]
pub struct State {
    reference: Option<Arc<Reference>>,
}

struct Reference {
    image: Image,
    hash: StateHash,
}

impl State {
    /// The state before any frame: the next frame is a keyframe.
    pub fn initial() -> State {
        State { reference: None }
    }

    /// A state holding `reference` as the LAST picture. The hash is computed here, once.
    pub fn from_reference(reference: Image) -> State {
        let hash = hash_reference(&reference);
        State {
            reference: Some(Arc::new(Reference {
                image: reference,
                hash,
            })),
        }
    }

    /// The content hash naming this state.
    pub fn hash(&self) -> StateHash {
        self.reference
            .as_ref()
            .map_or(StateHash::INITIAL, |r| r.hash)
    }

    /// True for the initial state (no reference picture).
    pub fn is_initial(&self) -> bool {
        self.reference.is_none()
    }

    /// The LAST reference picture, if any.
    pub fn reference(&self) -> Option<&Image> {
        self.reference.as_ref().map(|r| &r.image)
    }

    /// The visible part of the reference: the picture a decoder shows on reaching this state.
    pub fn picture(&self) -> Option<Image> {
        let r = self.reference()?;
        let mut out = Image::new(r.width(), r.height()).ok()?;
        for id in crate::image::PlaneId::ALL {
            for y in 0..out.plane(id).height() {
                out.plane_mut(id)
                    .row_mut(y)
                    .copy_from_slice(r.plane(id).row(y));
            }
        }
        Some(out)
    }

    /// Visible frame size of the reference, if any.
    pub fn size(&self) -> Option<(u32, u32)> {
        self.reference().map(|i| (i.width(), i.height()))
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.size() {
            None => write!(f, "State(initial)"),
            Some((w, h)) => write!(f, "State({} {w}x{h})", self.hash()),
        }
    }
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.hash() == other.hash()
    }
}

impl Eq for State {}

/// Hashes the size and every stored sample (padding included: the codec predicts from it).
fn hash_reference(image: &Image) -> StateHash {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&image.width().to_le_bytes());
    hasher.update(&image.height().to_le_bytes());
    for id in crate::image::PlaneId::ALL {
        hasher.update(image.plane(id).data());
    }
    match hasher.digest() {
        // 0 is reserved for the initial state; a real picture hashing to it is remapped.
        0 => StateHash(1),
        h => StateHash(h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::PlaneId;

    #[test]
    fn hash_names_content_and_size() {
        let a = Image::new(32, 16).unwrap();
        let mut b = a.clone();
        assert_eq!(
            State::from_reference(a.clone()).hash(),
            State::from_reference(b.clone()).hash()
        );
        b.plane_mut(PlaneId::U).data_mut()[3] ^= 1;
        assert_ne!(
            State::from_reference(a.clone()).hash(),
            State::from_reference(b).hash()
        );
        let c = Image::new(16, 32).unwrap();
        assert_ne!(
            State::from_reference(a).hash(),
            State::from_reference(c).hash()
        );
    }

    #[test]
    fn initial_state_is_distinct() {
        let s = State::initial();
        assert!(s.is_initial());
        assert_eq!(s.hash(), StateHash::INITIAL);
        let r = State::from_reference(Image::new(16, 16).unwrap());
        assert!(!r.is_initial());
        assert_ne!(r.hash(), StateHash::INITIAL);
        assert_eq!(r.clone(), r);
    }
}
