package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDecodeRunIsTolerant(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		check      func(t *testing.T, r *RunRecord)
	}{
		{"only what the engine always writes", `{"id":"r","workflowName":"w","state":"running"}`, func(t *testing.T, r *RunRecord) {
			if r.ID != "r" || len(r.Agents) != 0 {
				t.Fatalf("%+v", r)
			}
		}},
		{"unknown fields at every level", `{"id":"r1","workflowName":"w","state":"running","future":{"x":[1,2]},"agents":[{"id":"r1:1","name":"api","newThing":true,
			"attemptDetails":[{"attempt":1,"transport":"herdr","setup":{"cwd":"/w","model":{"provider":"p","model":"m","extra":1},"more":null},"surprise":"yes"}]}]}`,
			func(t *testing.T, r *RunRecord) {
				at := r.Agents[0].Attempts[0]
				if at.Transport != "herdr" || at.Setup.Cwd != "/w" || at.Setup.Model.String() != "p/m" {
					t.Fatalf("%+v", at)
				}
			}},
		{"optional fields absent: label, thinking, session, locator, attemptDetails, startedAt", `{"id":"r","workflowName":"w","state":"running","agents":[
			{"id":"r:1","name":"queued","state":"queued","model":{"provider":"p","model":"m"}},
			{"id":"r:2","name":"a","state":"running","attemptDetails":[{"attempt":1,"setup":{"model":{"provider":"p","model":"m"}}}]},
			{"id":"r:3","name":"b","state":"running","attemptDetails":[{"attempt":1,"session":{"transport":"local","sessionId":"s"},"setup":{}}]}]}`,
			func(t *testing.T, r *RunRecord) {
				if r.Agents[0].Latest() != nil || r.Agents[0].Label != "" || r.Agents[0].Model.String() != "p/m" {
					t.Fatalf("queued agent %+v", r.Agents[0])
				}
				if r.Agents[1].Attempts[0].Session != nil || r.Agents[2].Attempts[0].Session.Locator != nil {
					t.Fatalf("sessions %+v %+v", r.Agents[1].Attempts[0], r.Agents[2].Attempts[0])
				}
			}},
		{"nulls", `{"id":"r","workflowName":"w","state":"running","parentRunId":null,"agents":[{"id":"r:1","label":null,"model":null,"attemptDetails":null}],"error":null}`, func(t *testing.T, r *RunRecord) {
			if len(r.Agents) != 1 || r.Error != nil {
				t.Fatalf("%+v", r)
			}
		}},
		{"fields open does not read may have any type", `{"id":"r","workflowName":"w","state":"running","usage":"lots","agents":[{"id":"r:1","tools":{"odd":1},"toolCalls":7,
			"attemptDetails":[{"attempt":1,"accounting":"n/a","setup":{"tools":"all","hookNames":3,"resourceSelectors":[]}}]}]}`, nil},
		{"fractional times", `{"id":"r","workflowName":"w","state":"running","agents":[{"id":"r:1","startedAt":1787310903120.25}]}`, func(t *testing.T, r *RunRecord) {
			if r.Agents[0].StartedAt != 1787310903120.25 {
				t.Fatalf("%v", r.Agents[0].StartedAt)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRun([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestDecodeRunSaysWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"id":"r","agents":[{"id":"r:1"`, "truncated JSON"},
		{`{"id":"r",}`, "invalid JSON at byte 11"},
		{`[]`, "want a JSON object, got array"},
		{`{"agents":{"id":1}}`, "field agents: want an array, got object"},
		{`{"agents":[{"attemptDetails":[{"attempt":"1"}]}]}`, "field agents.attemptDetails.attempt: want a whole number, got string"},
		{`{"id":"r","workflowName":"w","state":"running","agents":[{"name":"api","attemptDetails":[{"attempt":0}]}]}`, "agent api: attempt number 0 is not positive"},
		// Valid JSON that is no run: encoding/json accepts null and an
		// object without a single field of the engine's.
		{`null`, "want a JSON object, got null"},
		{` null `, "want a JSON object, got null"},
		{`{}`, "no id, workflowName and state (the engine always writes them)"},
		{`{"id":null,"workflowName":"w","state":"running"}`, "no id (the engine always writes it)"},
		{`{"id":"r","workflowName":"w","state":""}`, "no state (the engine always writes it)"},
		{`{"id":"r","workflowName":"w","agents":[]}`, "no state (the engine always writes it)"},
		{`{"agents":[{"attemptDetails":[{"attempt":1.5}]}]}`, "field agents.attemptDetails.attempt: want a whole number, got number 1.5"},
	} {
		_, err := DecodeRun([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.json, err, tc.want)
		}
	}
}

func TestModelRefString(t *testing.T) {
	for _, tc := range []struct {
		m    ModelRef
		want string
	}{
		{ModelRef{"openai", "gpt-5", "high"}, "openai/gpt-5:high"},
		{ModelRef{"fake", "fake-model", ""}, "fake/fake-model"},
		{ModelRef{"", "m", "off"}, ""},
		{ModelRef{"p", "", ""}, ""},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestAgentNumber(t *testing.T) {
	for id, want := range map[string]int{"3f0c:1": 1, "3f0c:12": 12, "3f0c": 0, "3f0c:x": 0, "3f0c:0": 0, "3f0c:-2": 0, "": 0} {
		if got := (&AgentRecord{ID: id}).Number(); got != want {
			t.Errorf("%q: %d, want %d", id, got, want)
		}
	}
}

// TestDecodeEngineRecords decodes state.json files the real engine wrote
// (storetest's four workflows, system prompts elided), so the decoder
// meets the real shapes even where Pi is not installed.
func TestDecodeEngineRecords(t *testing.T) {
	for file, want := range map[string]string{
		"fx-complete": "completed: api completed [1:local:ok], docs completed [1:local:ok]",
		"fx-retry":    "completed: fixer completed [1:local:AGENT_FAILED 2:local:ok]",
		"fx-fail":     "failed: lint failed [1:local:AGENT_FAILED]",
		"fx-killed":   "running: api running [1:local:ok]",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "engine", file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := DecodeRun(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var agents []string
		for _, ag := range r.Agents {
			var ats []string
			for _, at := range ag.Attempts {
				outcome := "ok"
				if at.Error != nil {
					outcome = at.Error.Code
				}
				if at.Session == nil || at.Session.Locator == nil || !strings.HasSuffix(at.Session.Locator.SessionFile, ".jsonl") ||
					at.Setup.Cwd != r.Cwd || at.Setup.Model.String() != "fake/fake-model:off" {
					t.Errorf("%s %s#%d: session %+v setup %+v", file, ag.Name, at.N, at.Session, at.Setup)
				}
				ats = append(ats, fmt.Sprintf("%d:%s:%s", at.N, at.Transport, outcome))
			}
			agents = append(agents, fmt.Sprintf("%s %s [%s]", ag.Name, ag.State, strings.Join(ats, " ")))
		}
		slices.Sort(agents)
		if got := r.State + ": " + strings.Join(agents, ", "); got != want || r.WorkflowName != file {
			t.Errorf("%s: %s, want %s", file, got, want)
		}
	}
}
