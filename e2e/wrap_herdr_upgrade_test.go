package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Herdr upgraded under a running wrapper: Herdr 0.8 (protocol 20) is
// restarted as 0.9 (protocol 22) and back. The wrapper of a real Pi
// learns the protocol again at each restart: after the upgrade its state
// reaches the pane again with the command that resumes Pi, after the
// downgrade without it once the wrapper asked (protocol 20 has no such
// field), and
// `status` says each time that it reports to the pane.
func TestWrapPiFollowsHerdrRestartedAsAnotherProtocol(t *testing.T) {
	r := newPiRig(t, answerOr(), false)
	r.herdr = herdrtest.Start(t) // protocol 20
	h, pane := r.herdr, r.herdr.PaneID()
	tm := r.wrap()

	var st struct {
		SessionFile string `json:"session_file"`
		Herdr       string `json:"herdr"`
	}
	out, err := r.herdrPi("status", "--json")
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.SessionFile == "" {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	want := []string{"herdr-pi", "wrap", r.pi.Bin, "--session", st.SessionFile}
	h.WaitFor(t, 2*time.Minute, "idle on protocol 20", func() bool { return h.Pane(pane).Status == "idle" })
	sentResume := func(from int) bool {
		reqs := h.Requests()
		return slices.ContainsFunc(reqs[min(from, len(reqs)):], func(q herdrtest.Request) bool {
			return strings.Contains(string(q.Params), "resume_argv")
		})
	}
	if sentResume(0) {
		t.Fatal("protocol 20 was sent resume_argv")
	}

	h.SetProtocol(herdrtest.Protocol22)
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, 2*time.Minute, "idle with the resume command after the upgrade", func() bool {
		reps := h.Reports(pane)
		return h.Pane(pane).Status == "idle" && len(reps) > 0 && slices.Equal(reps[len(reps)-1].ResumeArgv, want)
	})

	from := len(h.Requests())
	h.SetProtocol(20)
	if err := h.Restart(); err != nil {
		t.Fatal(err)
	}
	// The wrapper learns the protocol when its event stream is back; a
	// report it sent before (Herdr answered the reporter first) may still
	// carry the key, which protocol 20 ignores (herdr-socket-api.md §3).
	var asked int
	h.WaitFor(t, 2*time.Minute, "the protocol asked again", func() bool {
		reqs := h.Requests()
		for i := from; i < len(reqs); i++ {
			if reqs[i].Method == "ping" {
				asked = i + 1
				return true
			}
		}
		return false
	})
	h.WaitFor(t, 2*time.Minute, "idle again after the downgrade", func() bool { return h.Pane(pane).Status == "idle" })
	// A turn after the downgrade: working, then blocked on the question.
	tm.Type(t, "which file?")
	h.WaitFor(t, 2*time.Minute, "blocked on protocol 20", func() bool { return h.Pane(pane).Status == "blocked" })
	if sentResume(asked) {
		var lines []string
		for _, q := range h.Requests()[from:] {
			lines = append(lines, q.At.Format("15:04:05.000")+" "+q.Line)
		}
		t.Errorf("protocol 20 was sent resume_argv after the wrapper asked its protocol:\n%s", strings.Join(lines, "\n"))
	}
	out, err = r.herdrPi("status", "--json")
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || !strings.Contains(st.Herdr, "reporting to pane") {
		t.Errorf("status after the restarts: %v\n%s", err, out)
	}
	quit(t, tm)
}
