package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// Herdr 0.9 (protocol 22): a real Pi under `herdr-pi wrap` reports with
// the command that restores it after a restart (herdr-pi wrap <pi>
// --session <the file Pi writes>), and when Herdr's own detection clears
// the report (herdr#4020) the wrapper reports again and `status` says so.
func TestWrapPiOnProtocol22ResumesAndReasserts(t *testing.T) {
	r := newPiRig(t, answerOr(), false)
	r.herdr = herdrtest.Start(t, herdrtest.Options{Protocol: herdrtest.Protocol22})
	h, pane := r.herdr, r.herdr.PaneID()
	tm := r.wrap()

	type status struct {
		SessionFile    string `json:"session_file"`
		Herdr          string `json:"herdr"`
		HerdrReasserts int    `json:"herdr_reasserts"`
	}
	ask := func() (status, []byte) {
		out, err := r.herdrPi("status", "--json")
		var st status
		if err != nil || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		return st, []byte(out)
	}
	st, _ := ask()
	if st.SessionFile == "" {
		t.Fatalf("no session file after session_start: %+v", st)
	}
	want := []string{"herdr-pi", "wrap", r.pi.Bin, "--session", st.SessionFile}
	h.WaitFor(t, 2*time.Minute, "a report with the resume command", func() bool {
		reps := h.Reports(pane)
		return len(reps) > 0 && slices.Equal(reps[len(reps)-1].ResumeArgv, want) && reps[len(reps)-1].Applied
	})
	shown := h.Pane(pane).Status

	h.LocalDetection(pane, "pi", "")
	h.WaitFor(t, 2*time.Minute, "the report re-asserted", func() bool {
		p := h.Pane(pane)
		return p.Source == "custom:herdr-pi" && p.Status == shown
	})
	if reps := h.Reports(pane); !slices.Equal(reps[len(reps)-1].ResumeArgv, want) {
		t.Errorf("the re-assert lost the resume command: %+v", reps[len(reps)-1])
	}
	var out []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, out = ask()
		if st.HerdrReasserts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never counted the re-assert:\n%s", out)
		}
	}
	if !strings.Contains(st.Herdr, "herdr-pi re-asserted it at") {
		t.Errorf("status herdr line %q", st.Herdr)
	}
	validateJSON(t, docSchema(t, "status"), out)
	human, _ := r.herdrPi("status")
	if !strings.Contains(human, "re-asserted") {
		t.Errorf("status without --json:\n%s", human)
	}
	quit(t, tm)
	if rel := h.Releases(pane); len(rel) != 1 || !rel[0].Applied {
		t.Errorf("releases %+v", rel)
	}
}

// Without the probe (--no-probe here; an npx or unknown launcher alike)
// the session file the locator finds is the one Herdr may resume, and the
// one `status` shows.
func TestWrapPiWithoutProbeOnProtocol22Resumes(t *testing.T) {
	r := newPiRig(t, answerOr(), false)
	r.herdr = herdrtest.Start(t, herdrtest.Options{Protocol: herdrtest.Protocol22})
	h, pane := r.herdr, r.herdr.PaneID()
	tm := r.wrapNoProbe(filepath.Join(t.TempDir(), "trace.jsonl"), nil)
	tm.Type(t, "hello")
	r.submitted(tm)
	tm.WaitText(t, question, 30*time.Second)
	var file string
	h.WaitFor(t, 2*time.Minute, "the session file", func() bool {
		files := r.agent.SessionFiles()
		if len(files) == 1 {
			file = files[0]
		}
		return file != ""
	})
	want := []string{"herdr-pi", "wrap", "--no-probe", r.pi.Bin, "--session", file}
	h.WaitFor(t, 2*time.Minute, "a report with the resume command "+strings.Join(want, " "), func() bool {
		reps := h.Reports(pane)
		return len(reps) > 0 && slices.Equal(reps[len(reps)-1].ResumeArgv, want) && reps[len(reps)-1].Applied
	})
	out, err := r.herdrPi("status", "--json")
	var st struct {
		SessionFile string `json:"session_file"`
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.SessionFile != file {
		t.Fatalf("status --json: %v, session_file %q, want %q\n%s", err, st.SessionFile, file, out)
	}
	quit(t, tm)
}
