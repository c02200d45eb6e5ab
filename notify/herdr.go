package notify

import (
	"context"
	"strconv"

	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// HerdrToast is a notification.show request (herdr-socket-api.md §4.6).
type HerdrToast struct {
	Title string
	Body  string
	// Sound is none, done or request.
	Sound string
	// Position is top-left, top-right, bottom-left, bottom-right, or empty
	// for Herdr's default.
	Position string
}

// HerdrResult is Herdr's answer: Shown is true exactly when Reason is
// "shown".
type HerdrResult struct {
	Shown  bool
	Reason string
}

// Barrier holds a toast back until Herdr has the pane's state: Reported
// returns once every state handed to the reporter before the call has been
// delivered to Herdr (or given up), or ctx ends. Without it a toast saying
// "needs your input" can reach Herdr before the blocked report, while the
// pane still shows idle.
type Barrier interface {
	Reported(ctx context.Context) error
}

// Herdr shows a toast through Herdr's socket. The caller adapts its socket
// client to it; notify never speaks the socket protocol itself.
type Herdr interface {
	ShowNotification(ctx context.Context, t HerdrToast) (HerdrResult, error)
}

// The reasons notification.show gives (herdr-socket-api.md §4.6).
const (
	ReasonShown              = "shown"
	ReasonDisabled           = "disabled"
	ReasonRateLimited        = "rate_limited"
	ReasonNoForegroundClient = "no_foreground_client"
	ReasonBusy               = "busy"
)

// Herdr's caps on a toast, in code points (herdr-socket-api.md §4.6).
const (
	herdrTitleMax = 80
	herdrBodyMax  = 240
)

// herdrToast sizes m for Herdr: sanitised as labels are (no control or
// invisible characters), then cut to Herdr's limits with an ellipsis, so
// Herdr never has to cut a word in the middle without saying so. The body
// leads with the question and ends with how many toasts were merged.
func herdrToast(m Message, sound string) HerdrToast {
	title := osc.Truncate(osc.CleanLabel(m.Title), herdrTitleMax)
	if title == "" {
		// Herdr rejects an empty title (invalid_params).
		title = "Pi"
	}
	if sound == "" {
		// Herdr already plays its own sound on state changes.
		sound = "none"
	}
	return HerdrToast{Title: title, Body: m.screenBody(herdrBodyMax), Sound: sound}
}

// retryable reasons mean "not now": another notification holds the screen
// or the one-per-second limit. Anything else is final.
func retryable(reason string) bool { return reason == ReasonRateLimited || reason == ReasonBusy }

// HerdrHint explains a reason that kept a toast off the screen, with the way
// out; empty for "shown".
func HerdrHint(reason string) string {
	switch reason {
	case ReasonShown:
		return ""
	case ReasonDisabled:
		return `Herdr's toasts are off ([ui.toast] delivery = "off", Herdr's default); set delivery to "herdr", "terminal" or "system" in Herdr's config to see them`
	case ReasonRateLimited:
		return "Herdr shows at most one notification per second and another one was just shown"
	case ReasonBusy:
		return "another Herdr toast was on screen"
	case ReasonNoForegroundClient:
		return "Herdr could not reach a terminal or the desktop to show it (no client attached in the foreground)"
	}
	// A reason this herdr-pi does not know is Herdr's own word, quoted: it
	// may come from a newer Herdr, or from a socket that is not Herdr's.
	return "Herdr answered " + strconv.Quote(reason)
}
