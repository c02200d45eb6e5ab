// Package detect classifies an agent's screen with Herdr-format detection
// manifests: TOML rules over screen regions, the OSC title and the OSC 9;4
// progress payload, with Rust-syntax regular expressions honoured exactly
// (herdr-detection-manifests.md). It holds herdr-pi's embedded manifest for
// Pi and overlays the user's own.
//
// It only answers "what does this screen say"; timing, debouncing and
// combining signals belong to pane/state.
package detect
