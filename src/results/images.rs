//! Images for the model: the bytes of an image a tool returned (an MCP image block, an image
//! file read by `read_file`) bounded in bytes and pixels before they reach a provider or the
//! window. Pure (no I/O); CPU-bound, so callers run it off the async threads.
//!
//! The ladder, in order (each rung refuses with an [`ImageError`] that names why):
//! 1. at most [`MAX_SOURCE_BYTES`] of input (base64 is measured before it is decoded);
//! 2. the format is sniffed from the bytes (PNG, JPEG, GIF, WebP, BMP), never taken from a name
//!    or a server's `mimeType`;
//! 3. the dimensions are read from the header before anything is decoded: more than
//!    [`MAX_SOURCE_PIXELS`] is refused (a decompression bomb never gets a buffer), and decoding
//!    runs under `image::Limits` (dimensions and allocation) as a second fence;
//! 4. an image within [`MAX_EDGE`] px on its long side, [`MAX_PIXELS`] and [`MAX_BYTES`], in a
//!    format every route takes (PNG, JPEG, GIF, WebP), is passed on byte for byte;
//! 5. otherwise it is decoded (a GIF's first frame), scaled down to fit (aspect kept), and
//!    encoded as PNG, or as JPEG when the PNG is over [`MAX_BYTES`]; still too large, it is
//!    halved until it fits.
//!
//! The bounded images of a call are kept in its client projection under [`CLIENT_KEY`], so the
//! request rebuild and the window read them from the store without decoding anything again;
//! they are never part of the model text (its 30,000-character budget holds text alone).

use std::io::Cursor;

use base64::Engine;
use image::{DynamicImage, ImageFormat, ImageReader, Limits, imageops::FilterType};
use serde::{Deserialize, Serialize};

/// The longest side of an image sent to a model (Anthropic's recommended maximum).
pub const MAX_EDGE: u32 = 1568;
/// The most pixels of an image sent to a model (about 1.15 megapixels, Anthropic's guidance).
pub const MAX_PIXELS: u64 = 1_150_000;
/// The most bytes of one encoded image sent to a model.
pub const MAX_BYTES: usize = 1024 * 1024;
/// The most bytes of an image accepted for bounding at all.
pub const MAX_SOURCE_BYTES: usize = 20 * 1024 * 1024;
/// The most pixels of an image that is decoded (checked from its header before decoding).
pub const MAX_SOURCE_PIXELS: u64 = 40_000_000;
/// The most images of one tool result sent to the model (the rest are described in text).
pub const MAX_IMAGES_PER_RESULT: usize = 4;
/// The key of a client projection holding the call's bounded images (a list of [`ModelImage`]).
pub const CLIENT_KEY: &str = "model_images";

/// One image as it goes to the model and the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Standard base64 of the encoded image.
    pub data: String,
    pub width: u32,
    pub height: u32,
    /// The source's dimensions (equal to `width`/`height` when not scaled).
    pub source_width: u32,
    pub source_height: u32,
}

impl ModelImage {
    /// How the model text names this image (`n` counts from 1 within the result).
    pub fn label(&self, n: usize) -> String {
        let scaled = if (self.width, self.height) != (self.source_width, self.source_height) {
            format!(
                ", scaled down from {}x{}",
                self.source_width, self.source_height
            )
        } else {
            String::new()
        };
        format!(
            "[image {n}: {}, {}x{}{scaled}]",
            self.media_type, self.width, self.height
        )
    }
}

/// Why an image is not sent to the model (it is described in text instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("{bytes} bytes is more than the {MAX_SOURCE_BYTES} bytes an image may have")]
    TooLarge { bytes: usize },
    #[error("the data is not base64")]
    NotBase64,
    #[error("not a PNG, JPEG, GIF, WebP or BMP image")]
    UnknownFormat,
    #[error("{width}x{height} is more than the {MAX_SOURCE_PIXELS} pixels an image may have")]
    TooManyPixels { width: u32, height: u32 },
    #[error("the image cannot be decoded: {0}")]
    Decode(String),
    #[error("the image cannot be encoded: {0}")]
    Encode(String),
}

/// Bounds a base64 image (an MCP image block's `data`).
pub fn bound_base64(data: &str) -> Result<ModelImage, ImageError> {
    // 4 base64 characters carry 3 bytes: refuse before decoding anything large.
    let approx = data.len() / 4 * 3;
    if approx > MAX_SOURCE_BYTES {
        return Err(ImageError::TooLarge { bytes: approx });
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| ImageError::NotBase64)?;
    bound_bytes(&bytes)
}

/// The format of an image from its first bytes.
fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
    match image::guess_format(bytes).ok()? {
        f @ (ImageFormat::Png
        | ImageFormat::Jpeg
        | ImageFormat::Gif
        | ImageFormat::WebP
        | ImageFormat::Bmp) => Some(f),
        _ => None,
    }
}

fn media_type(f: ImageFormat) -> Option<&'static str> {
    Some(match f {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => return None,
    })
}

/// The size an image of `w`x`h` is scaled to: within [`MAX_EDGE`] and [`MAX_PIXELS`], aspect
/// kept, at least 1x1. Pure.
pub fn fit(w: u32, h: u32) -> (u32, u32) {
    let w = w.max(1);
    let h = h.max(1);
    let long = f64::from(w.max(h));
    let by_edge = f64::from(MAX_EDGE) / long;
    let by_area = (MAX_PIXELS as f64 / (f64::from(w) * f64::from(h))).sqrt();
    let s = by_edge.min(by_area).min(1.0);
    let scale = |v: u32| ((f64::from(v) * s).floor() as u32).clamp(1, v);
    (scale(w), scale(h))
}

/// Bounds the bytes of an image (see the module's ladder).
pub fn bound_bytes(bytes: &[u8]) -> Result<ModelImage, ImageError> {
    if bytes.len() > MAX_SOURCE_BYTES {
        return Err(ImageError::TooLarge { bytes: bytes.len() });
    }
    let format = sniff(bytes).ok_or(ImageError::UnknownFormat)?;
    let reader = || {
        let mut r = ImageReader::with_format(Cursor::new(bytes), format);
        let mut limits = Limits::default();
        limits.max_image_width = Some(50_000);
        limits.max_image_height = Some(50_000);
        // Four bytes per pixel of the largest image decoded, and room for the scaled copy.
        limits.max_alloc = Some(MAX_SOURCE_PIXELS * 4 + 64 * 1024 * 1024);
        r.limits(limits);
        r
    };
    let (sw, sh) = reader()
        .into_dimensions()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    if u64::from(sw) * u64::from(sh) > MAX_SOURCE_PIXELS {
        return Err(ImageError::TooManyPixels {
            width: sw,
            height: sh,
        });
    }
    let (tw, th) = fit(sw, sh);
    if let Some(mt) = media_type(format)
        && (tw, th) == (sw, sh)
        && bytes.len() <= MAX_BYTES
    {
        return Ok(ModelImage {
            media_type: mt.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            width: sw,
            height: sh,
            source_width: sw,
            source_height: sh,
        });
    }
    let decoded = reader()
        .decode()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    let (mut w, mut h) = (tw, th);
    loop {
        let img = if (w, h) == (sw, sh) {
            decoded.clone()
        } else {
            decoded.resize(w, h, FilterType::Triangle)
        };
        let (media_type, out) = encode(&img)?;
        if out.len() <= MAX_BYTES || (img.width() <= 16 && img.height() <= 16) {
            return Ok(ModelImage {
                media_type: media_type.to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(&out),
                width: img.width(),
                height: img.height(),
                source_width: sw,
                source_height: sh,
            });
        }
        w = (w / 2).max(1);
        h = (h / 2).max(1);
    }
}

/// PNG when it fits in [`MAX_BYTES`], else JPEG (quality 85, alpha dropped).
fn encode(img: &DynamicImage) -> Result<(&'static str, Vec<u8>), ImageError> {
    let mut png = Vec::new();
    img.write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .map_err(|e| ImageError::Encode(e.to_string()))?;
    if png.len() <= MAX_BYTES {
        return Ok(("image/png", png));
    }
    let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
    let mut jpeg = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85);
    rgb.write_with_encoder(enc)
        .map_err(|e| ImageError::Encode(e.to_string()))?;
    Ok(("image/jpeg", jpeg))
}

/// The bounded images a client projection holds (none when it holds none or another shape).
pub fn from_client(client: &serde_json::Value) -> Vec<ModelImage> {
    client
        .get(CLIENT_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageEncoder, Rgba, RgbaImage, codecs::png::PngEncoder};

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = RgbaImage::from_fn(w, h, |x, y| {
            Rgba([(x % 256) as u8, (y % 256) as u8, 7, 255])
        });
        let mut out = Vec::new();
        PngEncoder::new(&mut out)
            .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgba8)
            .unwrap();
        out
    }

    #[test]
    fn a_small_png_passes_byte_for_byte() {
        let bytes = png(40, 30);
        let img = bound_bytes(&bytes).unwrap();
        assert_eq!(
            (img.media_type.as_str(), img.width, img.height),
            ("image/png", 40, 30)
        );
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&img.data)
                .unwrap(),
            bytes
        );
        assert_eq!(img.label(1), "[image 1: image/png, 40x30]");
    }

    #[test]
    fn a_large_image_is_scaled_within_the_bounds() {
        let img = bound_bytes(&png(3000, 1000)).unwrap();
        assert_eq!((img.source_width, img.source_height), (3000, 1000));
        assert!(img.width <= MAX_EDGE && img.height <= MAX_EDGE, "{img:?}");
        assert!(u64::from(img.width) * u64::from(img.height) <= MAX_PIXELS);
        assert!(img.data.len() / 4 * 3 <= MAX_BYTES);
        assert!(img.label(2).contains("scaled down from 3000x1000"));
    }

    #[test]
    fn a_bomb_is_refused_from_its_header() {
        // A PNG header claiming 60000x60000: refused before any pixel is decoded.
        let mut bytes = png(1, 1);
        bytes[16..20].copy_from_slice(&60_000u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&60_000u32.to_be_bytes());
        assert!(
            matches!(
                bound_bytes(&bytes),
                Err(ImageError::TooManyPixels { .. }) | Err(ImageError::Decode(_))
            ),
            "{:?}",
            bound_bytes(&bytes)
        );
        let mut bytes = png(1, 1);
        bytes[16..20].copy_from_slice(&20_000u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&20_000u32.to_be_bytes());
        assert!(bound_bytes(&bytes).is_err());
    }

    #[test]
    fn not_an_image_and_not_base64_are_refused() {
        assert_eq!(bound_bytes(b"<svg/>"), Err(ImageError::UnknownFormat));
        assert_eq!(bound_base64("%%%"), Err(ImageError::NotBase64));
        let huge = "A".repeat(MAX_SOURCE_BYTES / 3 * 4 + 8);
        assert!(matches!(
            bound_base64(&huge),
            Err(ImageError::TooLarge { .. })
        ));
    }

    #[test]
    fn fit_keeps_the_aspect_within_the_bounds() {
        assert_eq!(fit(100, 50), (100, 50));
        let (w, h) = fit(4000, 3000);
        assert!(u64::from(w) * u64::from(h) <= MAX_PIXELS && w <= MAX_EDGE);
        assert_eq!(fit(100_000, 1), (MAX_EDGE, 1));
    }
}
