package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// The promises of the terminal-notifications extension herdr-pi replaces
// (seed 003) for pi-ask flows and permission prompts, through a real Pi: an
// extension emits on Pi's bus exactly what @eko24ive/pi-ask and
// @xzzpig/pi-permission-system emit, the probe forwards it, and the pane
// and the notifications follow.

func asksAndPermissions(t *testing.T) string {
	t.Helper()
	ext, err := filepath.Abs("testdata/pievents/ask-and-permissions.mjs")
	if err != nil {
		t.Fatal(err)
	}
	return ext
}

// reasonKinds are the kinds of the pane's open reasons, as `herdr-pi
// status --json` lists them.
func (r *piRig) reasonKinds() []string {
	r.t.Helper()
	out, err := r.herdrPi("status", "--json")
	if err != nil {
		r.t.Fatalf("status: %v\n%s", err, out)
	}
	var st struct{ Reasons []struct{ Kind, Key string } }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		r.t.Fatalf("status: %v\n%s", err, out)
	}
	var kinds []string
	for _, reason := range st.Reasons {
		kinds = append(kinds, reason.Kind+":"+reason.Key)
	}
	return kinds
}

// waitReasons waits until the pane's open reasons are exactly want.
func (r *piRig) waitReasons(what string, want ...string) {
	r.t.Helper()
	var got []string
	for deadline := time.Now().Add(time.Minute); ; {
		if got = r.reasonKinds(); slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: open reasons %q, want %q", what, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// toasts waits until Herdr has been asked for n notifications and returns
// them as "title | body".
func toasts(t *testing.T, h *herdrtest.Server, n int) []string {
	t.Helper()
	h.WaitFor(t, time.Minute, "the toasts", func() bool { return len(h.Notifications()) >= n })
	var out []string
	for _, c := range h.Notifications() {
		out = append(out, c.Title+" | "+c.Body)
	}
	return out
}

// A pi-ask flow and a permission prompt forwarded from a child session
// turn the pane blocked, each told once; it stays blocked until both are
// over: the child's own decision and a forwarded decision for another
// request close nothing, the forwarded decision with the prompt's
// requestId does. Once the flow is answered, Herdr's pane names the
// prompt, which the pane waits on now. A direct prompt is closed by its decision, and a
// session's end (here /reload) clears what is still open, so the same
// requestId afterwards is news again.
func TestWrapPiAsksAndPermissionPromptsBlockUntilAllAreOver(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.herdr.SetDelivery("herdr")
	tm := r.wrap("-e", asksAndPermissions(t))
	r.waitStates("the probe connected", "unknown", "idle")
	project := filepath.Base(r.agent.Project)

	tm.Type(t, "/ask-start")
	r.waitStates("the flow", "unknown", "idle", "blocked(Choose deployment)")
	want := []string{"Pi has a question for you | Choose deployment · " + project}
	if got := toasts(t, r.herdr, 1); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}

	tm.Type(t, "/perm-forwarded")
	want = append(want, "Pi needs permission | Permission required by Worker · "+project)
	if got := toasts(t, r.herdr, 2); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
	tm.Type(t, "/ask-done")
	r.waitReasons("the flow answered", "permission:permission:fwd-1")
	// The pane waits on the prompt alone now, and Herdr's pane says so.
	r.waitStates("the flow answered", "unknown", "idle", "blocked(Choose deployment)", "blocked(Permission required by Worker)")

	tm.Type(t, "/not-its-decisions")
	r.waitReasons("decisions that are not the prompt's", "permission:permission:fwd-1", "pi-ask:ask:ask-2")
	want = append(want, "Pi has a question for you | Which region? · "+project)
	if got := toasts(t, r.herdr, 3); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
	tm.Type(t, "/ask2-done")
	r.waitReasons("the second flow answered", "permission:permission:fwd-1")
	tm.Type(t, "/forwarded-decision")
	r.waitStates("the forwarded decision", "unknown", "idle", "blocked(Choose deployment)", "blocked(Permission required by Worker)", "idle")

	tm.Type(t, "/perm-direct")
	r.waitStates("the direct prompt", "unknown", "idle", "blocked(Choose deployment)", "blocked(Permission required by Worker)", "idle", "blocked(Permission required)")
	want = append(want, "Pi needs permission | Permission required · "+project)
	if got := toasts(t, r.herdr, 4); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
	tm.Type(t, "/reload")
	r.waitStates("the session's end", "unknown", "idle", "blocked(Choose deployment)", "blocked(Permission required by Worker)", "idle", "blocked(Permission required)", "idle")

	tm.Type(t, "/perm-direct")
	r.waitStates("the prompt in the new session", "unknown", "idle", "blocked(Choose deployment)", "blocked(Permission required by Worker)", "idle", "blocked(Permission required)", "idle", "blocked(Permission required)")
	want = append(want, "Pi needs permission | Permission required · "+project)
	if got := toasts(t, r.herdr, 5); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
	tm.Type(t, "/direct-decision")
	r.waitStates("the decision", "unknown", "idle", "blocked(Choose deployment)", "blocked(Permission required by Worker)", "idle", "blocked(Permission required)", "idle", "blocked(Permission required)", "idle")
	quit(t, tm)
	if got := toasts(t, r.herdr, 5); !slices.Equal(got, want) {
		t.Fatalf("toasts %q after the quit, want only %q", got, want)
	}
}

// Seed 003: the child emits its own decision once it takes the parent's
// answer to a forwarded prompt, and it reaches the parent's bus. With a
// prompt of the parent's own open, that decision must not close it (the
// reference's sole-candidate fallback would): Pi still waits for the
// person, and the pane stays blocked until the parent's own answer.
func TestWrapPiChildsDecisionLeavesTheParentsPromptOpen(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.herdr.SetDelivery("herdr")
	tm := r.wrap("-e", asksAndPermissions(t))
	r.waitStates("the probe connected", "unknown", "idle")

	tm.Type(t, "/perm-own")
	r.waitStates("the parent's prompt", "unknown", "idle", "blocked(Permission required)")
	tm.Type(t, "/perm-forwarded")
	r.waitReasons("both prompts", "permission:permission:own-1", "permission:permission:fwd-1")
	tm.Type(t, "/forwarded-decision")
	r.waitReasons("the forwarded prompt answered", "permission:permission:own-1")
	tm.Type(t, "/child-decision")
	r.waitReasons("the child's own decision", "permission:permission:own-1", "pi-ask:ask:ask-2")
	tm.Type(t, "/ask2-done")
	r.waitReasons("the flow answered", "permission:permission:own-1")
	tm.Type(t, "/own-decision")
	r.waitStates("the parent's answer", "unknown", "idle", "blocked(Permission required)", "idle")
	quit(t, tm)
}

// Outside Herdr each of these is one notification sequence in the
// terminal's protocol (OSC 777 for Warp), written into Pi's screen by the
// wrapper: one per flow or prompt while it is open, none when it closes,
// and sanitised.
func TestWrapPiAskAndPermissionWriteOneSequenceEach(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), false)
	r.extra = []string{"TERM_PROGRAM=WarpTerminal"}
	tm := r.wrap("-e", asksAndPermissions(t))
	project := filepath.Base(r.agent.Project)
	ask := "\x1b]777;notify;Pi has a question for you;Choose deployment · " + project + "\x1b\\"
	perm := "\x1b]777;notify;Pi needs permission;Permission required by Worker · " + project + "\x1b\\"

	tm.Type(t, "/ask-start")
	waitRaw(t, tm, ask)
	tm.Type(t, "/perm-forwarded")
	waitRaw(t, tm, perm)
	tm.Type(t, "/ask-done")
	tm.Type(t, "/forwarded-decision")
	// Decided, so the same request asked again is news: its sequence is
	// the sign that everything before it was heard.
	tm.Type(t, "/perm-forwarded")
	for deadline := time.Now().Add(time.Minute); bytes.Count(tm.Raw(), []byte(perm)) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the prompt asked again after its decision was not told; OSC sequences: %q", oscs(tm.Raw()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Text from an extension cannot end the sequence or start another:
	// control characters become spaces, ';' ':', and runs of whitespace
	// one space; only the question's first line is shown.
	hostile := "\x1b]777;notify;Pi has a question for you;Deploy ]777:notify:pwned:x to prod: now · " + project + "\x1b\\"
	tm.Type(t, "/ask-hostile")
	waitRaw(t, tm, hostile)
	quit(t, tm)
	raw := tm.Raw()
	if n := bytes.Count(raw, []byte("\x1b]777;")); n != 4 || bytes.Count(raw, []byte(ask)) != 1 || bytes.Count(raw, []byte(perm)) != 2 || bytes.Count(raw, []byte(hostile)) != 1 {
		t.Fatalf("%d OSC 777 sequences, want %q once, %q twice and %q once; all:\n%q", n, ask, perm, hostile, oscs(raw))
	}
}

// waitRaw waits until the terminal received seq.
func waitRaw(t *testing.T, tm *pitest.Term, seq string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !bytes.Contains(tm.Raw(), []byte(seq)); {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never got %q; OSC sequences: %q", seq, oscs(tm.Raw()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// oscs lists the OSC notification sequences in raw, for failure messages.
func oscs(raw []byte) []string {
	var out []string
	for _, part := range strings.Split(string(raw), "\x1b]")[1:] {
		if strings.HasPrefix(part, "9;") || strings.HasPrefix(part, "99;") || strings.HasPrefix(part, "777;") {
			end := strings.Index(part, "\x1b\\")
			if end < 0 {
				end = len(part)
			}
			out = append(out, part[:end])
		}
	}
	return out
}

// Seed 003's first promise: a notification when Pi settles, in the
// protocol TERM_PROGRAM maps to, and OSC 99 for a terminal that sets none
// (nor KITTY_WINDOW_ID). One sequence per run; finished_after = "0s" tells
// every run, as the seed does (herdr-pi's default tells only runs of 20 s
// or more, docs/configuration.md).
func TestWrapPiSettledRunNotifiesInTheFallbackProtocol(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), false)
	config := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(config, []byte("[notify]\nfinished_after = \"0s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.extra = []string{"HERDR_PI_CONFIG=" + config, "TERM_PROGRAM=", "KITTY_WINDOW_ID="}
	tm := r.wrap()
	project := filepath.Base(r.agent.Project)
	finished := regexp.MustCompile(`\x1b\]99;i=pi-pid[0-9]+:p=body;Pi finished · ` + regexp.QuoteMeta(project) + `\x1b\\`)
	for run := 1; run <= 2; run++ {
		tm.Type(t, fmt.Sprintf("hello %d", run))
		for deadline := time.Now().Add(time.Minute); len(finished.FindAll(tm.Raw(), -1)) < run; {
			if time.Now().After(deadline) {
				t.Fatalf("run %d: no OSC 99 \"finished\"; OSC sequences: %q", run, oscs(tm.Raw()))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	quit(t, tm)
	if got := oscs(tm.Raw()); len(got) != 2 || len(finished.FindAll(tm.Raw(), -1)) != 2 {
		t.Fatalf("OSC sequences %q, want one \"finished\" per run", got)
	}
}

// pi-permission-system and pi-ask show their question in one of Pi's own
// dialogs right after their event, and Pi 1.6.0 announces that dialog to
// the probe: still one notification per prompt and per flow, not a second
// "needs your input" for the dialog. Each step waits for its toast, so a
// toast more would show, as one more or as "+1 more" in the next (Herdr's
// pace merges what waits). Answered, the pane is idle again.
func TestWrapPiPromptShownInPisDialogIsToldOnce(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.herdr.SetDelivery("herdr")
	tm := r.wrap("-e", asksAndPermissions(t))
	r.waitStates("the probe connected", "unknown", "idle")
	project := filepath.Base(r.agent.Project)
	answer := func() {
		t.Helper()
		if err := tm.Send("\r"); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Pi needs permission | Permission required · " + project}
	check := func() {
		t.Helper()
		if got := toasts(t, r.herdr, len(want)); !slices.Equal(got, want) {
			t.Fatalf("toasts %q, want %q", got, want)
		}
	}

	tm.Type(t, "/perm-with-dialog")
	tm.WaitText(t, "Allow git status?", time.Minute)
	r.waitReasons("the prompt and its dialog", "permission:permission:dialog-1", "ui-prompt:ui_prompt#1")
	check()
	answer()
	r.waitStates("the prompt answered", "unknown", "idle", "blocked(Permission required)", "idle")

	tm.Type(t, "/ask-with-dialog")
	tm.WaitText(t, "Which region do you deploy to?", time.Minute)
	r.waitReasons("the flow and its dialog", "pi-ask:ask:ask-d", "ui-prompt:ui_prompt#2")
	want = append(want, "Pi has a question for you | Pick a region · "+project)
	check()
	answer()
	r.waitStates("the flow answered", "unknown", "idle", "blocked(Permission required)", "idle", "blocked(Pick a region)", "idle")

	// Heard after everything above (one socket, in order): nothing more
	// can be on its way once it is told.
	tm.Type(t, "/ask-start")
	want = append(want, "Pi has a question for you | Choose deployment · "+project)
	check()
	quit(t, tm)
	check()
}

// An extension that says on Pi's bus that it waits for the person
// (pi:waiting-for-user-input, as plan-md's request_user_input does) and
// then asks in one of Pi's dialogs: one question, one notification — the
// wait's, not a second one for its dialog.
func TestWrapPiWaitShownInPisDialogIsToldOnce(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.herdr.SetDelivery("herdr")
	tm := r.wrap("-e", asksAndPermissions(t))
	r.waitStates("the probe connected", "unknown", "idle")
	project := filepath.Base(r.agent.Project)

	tm.Type(t, "/wait-with-dialog")
	tm.WaitText(t, "Which approach should I take?", time.Minute)
	r.waitReasons("the wait and its dialog", "wait:wait:plan-md:request_user_input:call-1", "ui-prompt:ui_prompt#1")
	if err := tm.Send("\r"); err != nil {
		t.Fatal(err)
	}
	r.waitStates("the wait answered", "unknown", "idle", "blocked(input needed)", "idle")
	// Heard after everything above (one socket, in order): nothing more
	// can be on its way once it is told.
	tm.Type(t, "/ask-start")
	want := []string{"Pi needs your input | " + project, "Pi has a question for you | Choose deployment · " + project}
	if got := toasts(t, r.herdr, len(want)); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
	quit(t, tm)
	if got := toasts(t, r.herdr, len(want)); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
}

// pi-terminal-notifications, if still installed beside herdr-pi, mirrors a
// pi-ask flow that turns Pi blocked on herdr:blocked, labelled as the
// flow; its listener may run before the probe's, so the mirror reaches
// the wrapper first. One question, one toast — the mirror's, which turned
// the pane blocked — and the next flow is told.
func TestWrapPiAskMirroredOnHerdrBlockedFirstIsToldOnce(t *testing.T) {
	r := newPiRig(t, fakellm.Fixed(fakellm.Reply{Text: "ok"}), true)
	r.herdr.SetDelivery("herdr")
	tm := r.wrap("-e", asksAndPermissions(t))
	r.waitStates("the probe connected", "unknown", "idle")
	project := filepath.Base(r.agent.Project)

	tm.Type(t, "/ask-mirrored")
	r.waitReasons("the mirror and the flow", "herdr-blocked:herdr:blocked#1", "pi-ask:ask:ask-m")
	tm.Type(t, "/ask-mirrored-done")
	r.waitStates("the flow answered", "unknown", "idle", "blocked(Choose deployment)", "idle")
	// Heard after everything above (one socket, in order).
	tm.Type(t, "/ask-start")
	want := []string{"Pi needs your input | Choose deployment · " + project, "Pi has a question for you | Choose deployment · " + project}
	if got := toasts(t, r.herdr, len(want)); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
	quit(t, tm)
	if got := toasts(t, r.herdr, len(want)); !slices.Equal(got, want) {
		t.Fatalf("toasts %q, want %q", got, want)
	}
}
