package state

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The reason that turned the pane blocked closes while another stays
// open: a script's wait (herdr-pi waiting start --label) opened the spell,
// Pi's reply then asked (the sentinel), and the script's wait ended. The
// pane waits on Pi's question now, and the report must say so: the
// message moves to the oldest reason still open, once, as a relabel (no
// new transition: the pane stayed blocked), and the snapshot `herdr-pi
// status` reads names the same reason.
func TestTheReportMovesToAReasonStillOpenWhenItsOpenerCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.Open(Reason{Key: "hook:deploy:42", Kind: KindHook, Label: "approve the deploy"})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel, Question: "Which region?"})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "hook:lint:1", Kind: KindHook, Label: "fix the lint"})
		time.Sleep(time.Second)
		m.Close("hook:deploy:42")
		expect(t, r, "idle@0 blocked@0(approve the deploy) blocked@3000(input needed)")
		e := r.states()[2]
		if e.Kind != EventRelabelled || e.Reason == nil || e.Reason.Key != "sentinel" || e.Cause != "close:hook:deploy:42" {
			t.Errorf("the move came as %+v, want a relabel naming the sentinel, caused by the close", e)
		}
		if s := m.Snapshot(); s.State != Blocked || s.Message != "input needed" || s.Reported != "sentinel" {
			t.Errorf("snapshot: state %s, message %q, reported %q; want blocked, %q, %q", s.State, s.Message, s.Reported, "input needed", "sentinel")
		}
		// A reason that did not open the report closes: nothing to move.
		m.Close("hook:lint:1")
		expect(t, r, "idle@0 blocked@0(approve the deploy) blocked@3000(input needed)")
		// The one named now closes too; the last one left is named.
		m.Open(Reason{Key: "hook:lint:1", Kind: KindHook, Label: "fix the lint"})
		time.Sleep(time.Second)
		m.AgentStart()
		time.Sleep(time.Second)
		m.Close("hook:lint:1")
		expect(t, r, "idle@0 blocked@0(approve the deploy) blocked@3000(input needed) blocked@4000(fix the lint) working@5000")
		if s := m.Snapshot(); s.Reported != "" || s.Message != "" {
			t.Errorf("snapshot after the last closed: reported %q, message %q", s.Reported, s.Message)
		}
	})
}

// A session start clears what the old session waited for but a script's
// waits: when the cleared sentinel named the report, the wait that stays
// is named now.
func TestTheReportMovesWhenASessionStartClearsItsOpener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Open(Reason{Key: "hook:deploy:42", Kind: KindHook, Label: "approve the deploy"})
		time.Sleep(time.Second)
		m.SessionStart()
		expect(t, r, "idle@0 blocked@0(input needed) blocked@1000(approve the deploy)")
	})
}

// "Oldest" is by when each reason opened, not by where a session start
// put it: the sentinel a reload restores, asked before the second script
// wait opened, is named before that wait.
func TestTheReportMovesToTheReasonThatOpenedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := newMachine(0, 0)
		defer m.Stop()
		m.ProbeConnected(true)
		m.Open(Reason{Key: "hook:deploy:42", Kind: KindHook, Label: "approve the deploy"})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "sentinel", Kind: KindSentinel})
		time.Sleep(time.Second)
		m.Open(Reason{Key: "hook:lint:1", Kind: KindHook, Label: "fix the lint"})
		m.SessionReplaced()
		m.SessionStart(Reason{Key: "sentinel", Kind: KindSentinel})
		m.Close("hook:deploy:42")
		expect(t, r, "idle@0 blocked@0(approve the deploy) blocked@2000(input needed)")
	})
}

// The open reasons are kept oldest first, by when each opened, whatever
// moved them: the snapshot `herdr-pi status` lists says so, and the report
// moves to the first of them when its opener closes. A session start keeps
// a script's waits and restores the rest after them; a reply that asks
// anew is asked now.
func TestTheReasonsAreKeptOldestFirst(t *testing.T) {
	hook := func(id string) Reason { return Reason{Key: "hook:" + id, Kind: KindHook, Label: id} }
	sentinel := func(entry string) Reason { return Reason{Key: "sentinel", Kind: KindSentinel, Entry: entry} }
	dialog := Reason{Key: "ui_prompt#1", Kind: KindUIPrompt, Label: "waiting for your answer", Question: "Deploy now?"}
	cases := []struct {
		name  string
		steps func(m *Machine)
		want  string
	}{
		{"a reload restores the question asked before a script's wait", func(m *Machine) {
			m.ProbeConnected(true)
			m.Open(sentinel("e1"))
			time.Sleep(time.Second)
			m.Open(hook("deploy"))
			m.SessionReplaced()
			m.SessionStart(sentinel("e1"))
		}, "sentinel hook:deploy"},
		{"a reload restores the question asked in the same instant as a script's wait", func(m *Machine) {
			m.ProbeConnected(true)
			m.Open(sentinel("e1"))
			m.Open(hook("deploy"))
			m.SessionReplaced()
			m.SessionStart(sentinel("e1"))
		}, "sentinel hook:deploy"},
		{"the probe's return keeps a dialog opened before a script's wait", func(m *Machine) {
			m.ProbeConnected(true)
			m.Open(dialog)
			time.Sleep(time.Second)
			m.Open(hook("deploy"))
			time.Sleep(time.Second)
			m.Open(sentinel("e1"))
			m.ProbeConnected(false)
			m.ProbeConnected(true)
			m.SessionRepeated(false, nil, sentinel("e1"), dialog)
		}, "ui_prompt#1 hook:deploy sentinel"},
		{"a reply that asks anew is asked now", func(m *Machine) {
			m.Open(sentinel("e1"))
			time.Sleep(time.Second)
			m.Open(hook("deploy"))
			time.Sleep(time.Second)
			m.Open(sentinel("e2"))
		}, "hook:deploy sentinel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, _ := newMachine(0, 0)
				defer m.Stop()
				c.steps(m)
				time.Sleep(time.Second)
				var keys []string
				for _, r := range m.Snapshot().Reasons {
					keys = append(keys, r.Key)
				}
				if got := strings.Join(keys, " "); got != c.want {
					t.Errorf("reasons %q, want %q (oldest first)", got, c.want)
				}
			})
		})
	}
}
