package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/herdr-pi/herdr-pi/settings"
)

// Locator says where to look for the session file of a Pi run when the
// probe has not named it (pi-agent.md §5.1, §5.3).
type Locator struct {
	// Path is an exact file (--session with a path); it may not exist yet.
	Path string
	// Dir is where Pi keeps this run's sessions; Prefix, when set, is a
	// session id prefix (--session <id>) to match file names against.
	Dir    string
	Prefix string
	// Cwd filters files by their header's cwd when Dir is a flat override
	// directory shared by several projects.
	Cwd string
	// Since ignores files not modified since then, so a new session never
	// picks up an old file of the same project (zero: any file, as for -c).
	Since time.Time
	// None is set with --no-session: there is no file to find.
	None bool
	// Taken, when set, says a file is another running Pi's: its wrapper's
	// probe named it. Several Pis in one project write to one directory,
	// and the newest file there may well be another pane's; a Pi without
	// the probe must not take that one's question for its own.
	Taken func(path string) bool
}

// SessionDir is Pi's per-project session directory: the agent dir's
// sessions/--<cwd without its leading slash, "/", "\" and ":" made "-">--.
func SessionDir(agentDir, cwd string) string {
	c := strings.TrimPrefix(strings.TrimPrefix(filepath.Clean(cwd), "/"), `\`)
	c = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(c)
	return filepath.Join(agentDir, "sessions", "--"+c+"--")
}

// Locate decides where the session of `pi args…` started in cwd at
// started lives: --session-dir, else PI_CODING_AGENT_SESSION_DIR, else
// settings.json's sessionDir (all flat), else the per-project directory.
func Locate(args settings.PiArgs, env settings.Env, paths settings.Paths, cwd string, started time.Time) Locator {
	if args.NoSession {
		return Locator{None: true}
	}
	l := Locator{Since: started}
	override := ""
	switch {
	case args.SessionDir != "":
		override = args.SessionDir
	case env.Get("PI_CODING_AGENT_SESSION_DIR") != "":
		override = env.Get("PI_CODING_AGENT_SESSION_DIR")
	default:
		override = settingsSessionDir(filepath.Join(paths.PiAgentDir, "settings.json"))
	}
	if override != "" {
		l.Dir = expand(override, paths.Home, cwd)
		l.Cwd = cwd
	} else {
		l.Dir = SessionDir(paths.PiAgentDir, cwd)
	}
	switch s := args.Session; {
	case s != "" && (strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".jsonl")):
		l.Path = expand(s, paths.Home, cwd)
	case s != "":
		l.Prefix, l.Since, l.Cwd = s, time.Time{}, ""
	case args.Continue:
		l.Since = time.Time{}
	}
	return l
}

func expand(p, home, cwd string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// settingsSessionDir reads sessionDir from Pi's settings.json; a file that
// is missing, not a regular file or not JSON says nothing.
func settingsSessionDir(path string) string {
	b, err := settings.ReadFile(path, settings.JSON)
	if err != nil {
		return ""
	}
	var s struct {
		SessionDir string `json:"sessionDir"`
	}
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s.SessionDir
}

// mtimeSlack allows for file times that lag the clock: the kernel stamps
// files with a coarse clock, a tick behind time.Now.
const mtimeSlack = 50 * time.Millisecond

// Find returns the file to follow now: the exact path, or the most recently
// modified matching .jsonl (the one Pi writes to). ok is false when there
// is none yet.
func (l Locator) Find() (string, bool) {
	if l.None {
		return "", false
	}
	if l.Path != "" {
		return l.Path, true
	}
	names, err := os.ReadDir(l.Dir)
	if err != nil {
		return "", false
	}
	type cand struct {
		path  string
		mtime time.Time
	}
	var cands []cand
	for _, n := range names {
		name := n.Name()
		if n.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if l.Prefix != "" {
			_, id, _ := strings.Cut(strings.TrimSuffix(name, ".jsonl"), "_")
			if !strings.HasPrefix(id, l.Prefix) {
				continue
			}
		}
		fi, err := n.Info()
		if err != nil || (!l.Since.IsZero() && fi.ModTime().Before(l.Since.Add(-mtimeSlack))) {
			continue
		}
		cands = append(cands, cand{filepath.Join(l.Dir, name), fi.ModTime()})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mtime.After(cands[j].mtime) })
	for _, c := range cands {
		if l.Taken != nil && l.Taken(c.path) {
			continue
		}
		if l.Cwd == "" || headerCwd(c.path) == filepath.Clean(l.Cwd) {
			return c.path, true
		}
	}
	return "", false
}

func headerCwd(path string) string {
	f, _, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := f.Read(buf)
	first, _, _ := strings.Cut(string(buf[:n]), "\n")
	e, err := ParseLine([]byte(first))
	if err != nil || e.Type != "session" {
		return ""
	}
	return filepath.Clean(e.Cwd)
}
