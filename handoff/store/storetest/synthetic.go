package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Synthetic shapes a generated store.
type Synthetic struct {
	Runs           int // total runs (1,000 for the benchmark)
	Projects       int // spread over this many projects; the first is Cwd's
	RunsPerSession int // runs per owner session
	AgentsPerRun   int // agents per run; every third agent has two attempts
	Seed           uint64
	// Now is the newest run's modification time; older runs are spread
	// over the preceding days.
	Now time.Time
}

// Generated is what Generate wrote.
type Generated struct {
	Home string
	Cwd  string   // the first project's cwd
	IDs  []string // run ids, newest first
}

// statesOf are the run states the generator cycles through.
var statesOf = []string{"completed", "completed", "failed", "running", "stopped", "interrupted", "completed"}

// Generate writes a store under home with the record shapes the real engine
// writes (reference §2 and its measurements: per-process agent numbers,
// systemPrompt on every agent, structuralPath [], flat transcripts under
// the agent dir). Project cwds are directories under home so that attempt
// cwds exist; transcripts are written for every attempt.
func Generate(home string, o Synthetic) (*Generated, error) {
	if o.Projects <= 0 {
		o.Projects = 1
	}
	if o.RunsPerSession <= 0 {
		o.RunsPerSession = 4
	}
	if o.AgentsPerRun <= 0 {
		o.AgentsPerRun = 3
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	uuid := func() string {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		h := hex.EncodeToString(b[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	agentDir := filepath.Join(home, ".pi", "agent", "sessions")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		return nil, err
	}
	g := &Generated{Home: home}
	cwds := make([]string, o.Projects)
	for p := range cwds {
		cwds[p] = filepath.Join(home, "src", fmt.Sprintf("project-%d", p))
		if err := os.MkdirAll(cwds[p], 0o700); err != nil {
			return nil, err
		}
	}
	g.Cwd = cwds[0]
	systemPrompt := strings.Repeat("You are an expert coding assistant operating inside pi. ", 60)

	// Per project: the current owner session, its runs so far, and its
	// agent counter (agent numbers count per owner, not per run).
	type owner struct {
		session      string
		runs, agentN int
	}
	owners := make([]owner, o.Projects)
	for i := range o.Runs {
		p := i % o.Projects
		cwd, ow := cwds[p], &owners[p]
		if ow.session == "" || ow.runs == o.RunsPerSession {
			*ow = owner{session: uuid()}
		}
		ow.runs++
		session := ow.session
		sessionDir := filepath.Join(home, ".pi", "workflows", "projects", projectKey(cwd), "sessions", session, "runs")
		id := uuid()
		state := statesOf[i%len(statesOf)]
		mtime := o.Now.Add(-time.Duration(i) * 7 * time.Minute)
		var agents []any
		var sessions []any
		for a := range o.AgentsPerRun {
			ow.agentN++
			name := []string{"api", "docs", "tests", "lint", "review"}[a%5]
			attempts := 1
			if a%3 == 2 {
				attempts = 2
			}
			agentState := state
			if state == "running" && a == 0 {
				agentState = "completed"
			} else if state == "interrupted" || state == "stopped" {
				agentState = "cancelled"
			}
			var details []any
			for n := 1; n <= attempts; n++ {
				sid := uuid()
				file := filepath.Join(agentDir, mtime.UTC().Format("2006-01-02T15-04-05-000Z")+"_"+sid+".jsonl")
				line := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":%q}`+"\n", sid, mtime.UTC().Format(time.RFC3339), cwd)
				if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
					return nil, err
				}
				ref := map[string]any{"transport": "local", "sessionId": sid, "locator": map[string]any{"sessionFile": file}}
				sessions = append(sessions, ref)
				d := map[string]any{
					"attempt": n, "transport": "local", "session": ref,
					"setup": map[string]any{"hookNames": []string{}, "model": map[string]any{"provider": "openai", "model": "gpt-5", "thinking": "high"},
						"tools": []string{"read", "bash", "edit", "write"}, "cwd": cwd},
					"accounting": map[string]any{"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "cost": 0.01},
				}
				if n < attempts {
					d["error"] = map[string]any{"code": "AGENT_FAILED", "message": "400: refused"}
				}
				details = append(details, d)
			}
			agents = append(agents, map[string]any{
				"systemPrompt": systemPrompt, "prompt": "Review the " + name + ".",
				"id": fmt.Sprintf("%s:%d", id, ow.agentN), "name": name, "label": name, "path": fmt.Sprintf("%s:%d", id, ow.agentN),
				"state": agentState, "structuralPath": []string{}, "resultPath": "agent/callsite%3A12%3A40/occurrence%3A1",
				"model": map[string]any{"provider": "openai", "model": "gpt-5", "thinking": "high"},
				"tools": []string{"read", "bash", "edit", "write"}, "attempts": attempts,
				"startedAt": mtime.UnixMilli() - 60000, "durationMs": 42000, "attemptDetails": details,
				"accounting": map[string]any{"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "cost": 0.01},
				"toolCalls":  []any{}, "lastEventAt": mtime.UnixMilli(),
			})
		}
		rec := map[string]any{
			"id": id, "workflowName": fmt.Sprintf("review-%d", i%37), "cwd": cwd, "sessionId": session, "state": state,
			"agentSessions": sessions, "agents": agents, "budgetVersion": 1,
			"usage":    map[string]any{"tokens": 4500, "costUsd": 0.03, "durationMs": 42000, "agentLaunches": o.AgentsPerRun},
			"delivery": map[string]any{"mode": "background", "state": "delivered"},
		}
		if state == "failed" {
			rec["error"] = map[string]any{"code": "AGENT_FAILED", "message": "400: refused"}
		}
		dir := filepath.Join(sessionDir, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			return nil, err
		}
		g.IDs = append(g.IDs, id)
	}
	return g, nil
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9._-]`)

// projectKey restates the engine's storage key (reference §1.1) so the
// generator does not lean on the code it feeds.
func projectKey(cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return unsafeChars.ReplaceAllString(filepath.Base(cwd), "_") + "-" + hex.EncodeToString(sum[:])[:12]
}
