package control

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// Reference D3.1: parseWaitingForUserInputEvent.
func TestWaitingForUserInputVectors(t *testing.T) {
	valid := `{"source":"plan-md:request_user_input","id":"call-1","waiting":true}`
	w, ok := ParseWaitingForInput(json.RawMessage(valid))
	if !ok || w != (WaitingForInput{Source: "plan-md:request_user_input", ID: "call-1", Waiting: true}) {
		t.Fatalf("valid payload: %+v %v", w, ok)
	}
	if w.Key() != "plan-md:request_user_input:call-1" {
		t.Fatalf("key %q", w.Key())
	}
	for _, js := range []string{
		`{"source":"plan-md","waiting":true}`, // D3.1: no id
		`null`,                                // D3.1
		`{"source":"s","id":"i","waiting":"true"}`,
		`{"source":"s","id":"i"}`,
		`{"source":" \ufeff","id":"i","waiting":false}`, // blank to JavaScript
		`{"source":"s","id":7,"waiting":false}`,
		`[]`, `"x"`, `garbage`,
	} {
		if w, ok := ParseWaitingForInput(json.RawMessage(js)); ok {
			t.Errorf("%s accepted as %+v", js, w)
		}
	}
	w, ok = ParseWaitingForInput(json.RawMessage(`{"source":" s ","id":"\u00a0i","waiting":false}`))
	if !ok || w.Source != "s" || w.ID != "i" || w.Waiting {
		t.Fatalf("trimmed payload: %+v %v", w, ok)
	}
}

// herdr:blocked is read the way Herdr's own consumer reads it (§8, §21):
// truthy active opens, anything else closes.
func TestHerdrBlockedTruthiness(t *testing.T) {
	tests := map[string]HerdrBlocked{
		`{"active":true,"label":" L "}`: {Active: true, Label: "L"},
		`{"active":1}`:                  {Active: true},
		`{"active":"no"}`:               {Active: true},
		`{"active":{}}`:                 {Active: true},
		`{"active":[]}`:                 {Active: true},
		`{"active":false,"label":"L"}`:  {},
		`{"active":0}`:                  {},
		`{"active":""}`:                 {},
		`{"active":null}`:               {},
		`{}`:                            {},
		`null`:                          {},
		`"active"`:                      {},
	}
	for js, want := range tests {
		ev, err := ParseEvent(EvHerdrBlocked, json.RawMessage(js))
		if err != nil || ev != want {
			t.Errorf("%s: %+v %v, want %+v", js, ev, err, want)
		}
	}
}

func TestPiAskEvents(t *testing.T) {
	ev, err := ParseEvent(EvAskStarted, json.RawMessage(`{"flowId":" ask-1 ","title":"  "}`))
	if err != nil || ev != (AskStarted{FlowID: "ask-1"}) || ev.(AskStarted).Label() != "Waiting for input" {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, _ = ParseEvent(EvAskStarted, json.RawMessage(`{"flowId":"a","title":"Choose deployment"}`))
	if ev.(AskStarted).Label() != "Choose deployment" {
		t.Fatalf("label %q", ev.(AskStarted).Label())
	}
	for _, js := range []string{`{}`, `{"flowId":""}`, `{"flowId":5}`, `null`} {
		if _, err := ParseEvent(EvAskCompleted, json.RawMessage(js)); !errors.Is(err, ErrIgnored) {
			t.Errorf("%s: %v, want ErrIgnored", js, err)
		}
	}
}

func TestLifecyclePayloads(t *testing.T) {
	ev, err := ParseEvent(EvSessionStart, json.RawMessage(`{"reason":"resume","sessionFile":"/a.jsonl","previousSessionFile":"/b.jsonl","mode":"tui","modeInferred":true,"hasUI":true,"cwd":"/p","inputNeeded":true,"extra":1}`))
	want := SessionStart{Reason: "resume", SessionFile: "/a.jsonl", PreviousSessionFile: "/b.jsonl", Mode: "tui", ModeInferred: true, HasUI: true, Cwd: "/p", InputNeeded: true}
	if err != nil || !reflect.DeepEqual(ev, want) {
		t.Fatalf("%+v %v", ev, err)
	}
	if ev, err := ParseEvent(EvAgentStart, nil); err != nil || ev != (AgentStart{}) {
		t.Fatalf("agent_start without data: %+v %v", ev, err)
	}
	if _, err := ParseEvent(EvAgentEnd, json.RawMessage(`{"stopReason":5}`)); err == nil {
		t.Fatal("a malformed lifecycle payload was accepted")
	}
	if _, err := ParseEvent("agent_started", nil); err == nil || errors.Is(err, ErrIgnored) {
		t.Fatalf("unknown event: %v", err)
	}
}

// Two different waits never share a key: "a:b"+"c" and "a"+"b:c" used to
// both be "a:b:c", so stopping one closed the other.
func TestWaitKeysAreUnambiguous(t *testing.T) {
	pairs := [][2]string{
		{"a:b", "c"}, {"a", "b:c"}, {"a", "b%3Ac"}, {"a:b%3A", "c"}, {"a", "b%253Ac"},
		{"plan-md:request_user_input", "call-1"}, {"plan-md", "request_user_input:call-1"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := WaitRequest{Source: p[0], ID: p[1]}.Key()
		if k != (WaitingForInput{Source: p[0], ID: p[1]}).Key() {
			t.Fatalf("the two kinds of wait key %v differently", p)
		}
		if other, ok := seen[k]; ok {
			t.Fatalf("%v and %v share the key %q", p, other, k)
		}
		seen[k] = p
	}
	if k := WaitKey("plan-md:request_user_input", "call-1"); k != "plan-md:request_user_input:call-1" {
		t.Fatalf("a usual key changed: %q", k)
	}
}

func FuzzWaitKey(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add("a", "b%3Ac", "a", "b:c")
	f.Fuzz(func(t *testing.T, s1, id1, s2, id2 string) {
		if (s1 != s2 || id1 != id2) && WaitKey(s1, id1) == WaitKey(s2, id2) {
			t.Fatalf("(%q, %q) and (%q, %q) share the key %q", s1, id1, s2, id2, WaitKey(s1, id1))
		}
	})
}

// The probe names its Pi's leaf in the session file; a probe that does not
// (an older one) leaves it nil, and Pi's null leaf (an empty session) comes
// as "".
func TestLeafIDs(t *testing.T) {
	leafOf := func(name, js string) Leaf {
		t.Helper()
		ev, err := ParseEvent(name, json.RawMessage(js))
		if err != nil {
			t.Fatalf("%s %s: %v", name, js, err)
		}
		switch e := ev.(type) {
		case SessionStart:
			return e.LeafID
		case AgentStart:
			return e.LeafID
		case AgentEnd:
			return e.LeafID
		case AgentSettled:
			return e.LeafID
		case SessionTree:
			return e.LeafID
		}
		t.Fatalf("%s: %T", name, ev)
		return nil
	}
	for _, name := range []string{EvSessionStart, EvAgentStart, EvAgentEnd, EvAgentSettled, EvSessionTree} {
		if l := leafOf(name, `{"leafId":"a1b2c3d4"}`); l == nil || *l != "a1b2c3d4" {
			t.Errorf("%s: leaf %v", name, l)
		}
		if l := leafOf(name, `{"leafId":""}`); l == nil || *l != "" {
			t.Errorf("%s: empty leaf %v", name, l)
		}
		if l := leafOf(name, `{}`); l != nil {
			t.Errorf("%s without a leaf: %q", name, *l)
		}
	}
	if l := leafOf(EvAgentStart, `null`); l != nil {
		t.Errorf("agent_start null: %q", *l)
	}
}
