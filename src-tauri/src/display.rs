//! Whether a graphical display is reachable, decided before GTK starts (GTK would otherwise abort with
//! a bare "cannot open display"). Pure: the caller passes the environment values.

/// The message printed when there is no display, naming the way out.
pub const NO_DISPLAY_MESSAGE: &str = "aibuddy-desktop: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set).\n\
The desktop window needs an X11 or Wayland display. On a headless machine run it under a virtual one:\n\
    xvfb-run make run\n\
The headless CLI needs no display: `aibuddy tools list`.";

/// True when an X11 (`DISPLAY`) or Wayland (`WAYLAND_DISPLAY`) display is named.
pub fn has_display(x11: Option<&str>, wayland: Option<&str>) -> bool {
    let named = |v: Option<&str>| v.is_some_and(|s| !s.trim().is_empty());
    named(x11) || named(wayland)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_display_is_named_by_either_variable() {
        let cases = [
            (None, None, false),
            (Some(""), None, false),
            (Some("  "), Some(""), false),
            (Some(":99"), None, true),
            (None, Some("wayland-0"), true),
            (Some(":0"), Some("wayland-0"), true),
        ];
        for (x11, wayland, expected) in cases {
            assert_eq!(
                has_display(x11, wayland),
                expected,
                "DISPLAY={x11:?} WAYLAND_DISPLAY={wayland:?}"
            );
        }
    }

    #[test]
    fn the_message_points_to_xvfb_run() {
        assert!(NO_DISPLAY_MESSAGE.contains("xvfb-run make run"));
    }
}
